// Program: the ops and variables of a training or inference computation.
//
//   Program prog;
//   Block& b = prog.block();
//   RETURN_IF_ERROR(b.AddVar(VarDesc{"x", DataType::kFloat32, Shape({-1, 16})}));
//   b.AppendOp(op_desc);
//   std::cout << prog.DebugString();     // one line per op, with its place
//
// Programs are usually made by ProgramBuilder (program_builder.h). Plain
// data; not thread-safe to mutate.
#ifndef TANDEM_FRAMEWORK_PROGRAM_PROGRAM_H_
#define TANDEM_FRAMEWORK_PROGRAM_PROGRAM_H_

#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/op/op_desc.h"
#include "framework/types/data_type.h"
#include "framework/types/shape.h"

namespace tandem {

enum class VarKind { kDense, kSelectedRows };

struct VarDesc {
  std::string name;
  DataType dtype = DataType::kFloat32;
  Shape shape;                // -1 marks a dim known only at run time
  bool persistable = false;   // lives in the Scope across runs (parameters, lr)
  bool is_parameter = false;  // trained by optimizers
  bool stop_gradient = false;
  VarKind kind = VarKind::kDense;

  friend bool operator==(const VarDesc& a, const VarDesc& b) {
    return a.name == b.name && a.dtype == b.dtype && a.shape == b.shape &&
           a.persistable == b.persistable && a.is_parameter == b.is_parameter &&
           a.stop_gradient == b.stop_gradient && a.kind == b.kind;
  }
};

// A declaration as messages show it: dtype and shape, then the flags set,
// e.g. "float32[2, 3] persistable parameter", "float32[-1, 4] selected_rows".
std::string VarDeclString(const VarDesc& v);

class Block {
 public:
  // Declares the variable `var.name`. Declaring an existing variable again
  // is accepted only when the declaration is identical, and then changes
  // nothing (a startup program shared by several main programs gets their
  // parameters declared by each); a different declaration is InvalidArgument
  // naming the variable and both declarations, and leaves the block as it was:
  //   variable 'w' is declared twice, as float32[2, 3] persistable parameter
  //   and as float32[3, 2] persistable parameter
  absl::Status AddVar(VarDesc var);
  // Adds `var`, or replaces the declaration of `var.name` whatever it was: for
  // passes that copy or rewrite a program's variables (the placer, the
  // data-parallel replication), not for declaring them.
  VarDesc& SetVar(VarDesc var);
  // nullptr if absent.
  const VarDesc* FindVar(absl::string_view name) const;
  VarDesc* FindVar(absl::string_view name);
  bool HasVar(absl::string_view name) const { return FindVar(name) != nullptr; }
  // Variables in creation order.
  const std::vector<VarDesc>& vars() const { return vars_; }

  OpDesc& AppendOp(OpDesc op);
  OpDesc& InsertOp(size_t index, OpDesc op);
  const std::vector<OpDesc>& ops() const { return ops_; }
  std::vector<OpDesc>& mutable_ops() { return ops_; }

 private:
  std::vector<VarDesc> vars_;
  absl::flat_hash_map<std::string, size_t> var_index_;  // name -> index into vars_
  std::vector<OpDesc> ops_;
};

class Program {
 public:
  Block& block() { return block_; }
  const Block& block() const { return block_; }

  // Readable listing: variables, then one line per op with its role and
  // requested place, e.g.
  //   #3 [cpu] lookup_table(Ids=[data], W=[emb_w]) -> (Out=[emb]) {...}
  std::string DebugString() const;

  // Text form (JSON) that FromJson reads back into an equal program.
  std::string ToJson() const;
  // InvalidArgument naming the offending field when the text is malformed.
  static absl::StatusOr<Program> FromJson(absl::string_view text);

  friend bool operator==(const Program& a, const Program& b);

 private:
  Block block_;
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_PROGRAM_PROGRAM_H_
