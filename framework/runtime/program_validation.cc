#include "framework/runtime/program_validation.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "framework/op/op_schema.h"

namespace tandem {
namespace {

std::string Where(const OpDesc& op, size_t index) {
  return absl::StrCat("op '", op.type, "' (#", index, ")");
}

// The op against its schema (on a copy: Validate fills in defaults).
absl::Status CheckSchema(const OpDesc& op, size_t index) {
  absl::StatusOr<const OpSchema*> schema = OpRegistry::Global().Find(op.type);
  if (!schema.ok()) {
    return absl::Status(schema.status().code(),
                        absl::StrCat(Where(op, index), ": ", schema.status().message()));
  }
  OpDesc copy = op;
  absl::Status s = (*schema)->Validate(&copy);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("#", index, ": ", s.message()));
  return absl::OkStatus();
}

bool Initialised(const Scope& scope, const std::string& name) {
  const Variable* v = scope.Find(name);
  const Tensor* t = v == nullptr ? nullptr : v->data_tensor();
  return t != nullptr && t->initialized();
}

}  // namespace

absl::Status ValidateProgramForRun(const Program& program, const Scope& scope,
                                   const std::vector<std::string>& feeds) {
  const Block& block = program.block();
  std::set<std::string> available(feeds.begin(), feeds.end());
  for (const VarDesc& v : block.vars()) {
    if (v.persistable && Initialised(scope, v.name)) available.insert(v.name);
  }
  const std::vector<OpDesc>& ops = block.ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpDesc& op = ops[i];
    absl::Status schema = CheckSchema(op, i);
    if (!schema.ok()) return schema;
    for (const auto* args : {&op.inputs, &op.outputs}) {
      for (const auto& [arg, vars] : *args) {
        for (const std::string& var : vars) {
          if (block.HasVar(var)) continue;
          return absl::InvalidArgumentError(absl::StrCat(Where(op, i), " argument ", arg,
                                                         " names variable '", var,
                                                         "', which the program does not declare"));
        }
      }
    }
    for (const auto& [arg, vars] : op.inputs) {
      for (const std::string& var : vars) {
        if (available.count(var) > 0) continue;
        const VarDesc* d = block.FindVar(var);
        return absl::InvalidArgumentError(absl::StrCat(
            Where(op, i), " reads '", var, "' (argument ", arg, ") before it has a value: ",
            d->persistable ? "it is persistable but not initialised in the scope (run the "
                             "startup program first?)"
                           : "no earlier op writes it and it is not fed"));
      }
    }
    for (const auto& [arg, vars] : op.outputs) available.insert(vars.begin(), vars.end());
  }
  return absl::OkStatus();
}

}  // namespace tandem
