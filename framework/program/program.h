// Program: the ops and variables of a training or inference computation.
//
//   Program prog;
//   Block& b = prog.block();
//   b.AddVar(VarDesc{"x", DataType::kFloat32, Shape({-1, 16})});
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

class Block {
 public:
  // Adds or replaces the variable `var.name`.
  VarDesc& AddVar(VarDesc var);
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
