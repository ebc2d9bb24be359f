// Scope: the variables that live across runs (parameters, optimizer state,
// learning rate) and the values fed to a run.
//
//   Scope scope;
//   RETURN_IF_ERROR(executor.Run(startup, &scope));   // creates the parameters
//   const Variable* w = scope.Find("fc_w");
//
// Owns its variables; pointers returned stay valid until Erase or the
// Scope's destruction. Not thread-safe.
#ifndef TANDEM_FRAMEWORK_TENSOR_SCOPE_H_
#define TANDEM_FRAMEWORK_TENSOR_SCOPE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "framework/tensor/variable.h"

namespace tandem {

class Scope {
 public:
  // Finds or creates (empty) the variable `name`.
  Variable* Var(absl::string_view name);
  // nullptr if absent.
  Variable* Find(absl::string_view name);
  const Variable* Find(absl::string_view name) const;
  void Erase(absl::string_view name);
  // Sorted names.
  std::vector<std::string> Names() const;

 private:
  absl::flat_hash_map<std::string, std::unique_ptr<Variable>> vars_;
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_TENSOR_SCOPE_H_
