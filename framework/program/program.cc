#include "framework/program/program.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tandem {

std::string VarDeclString(const VarDesc& v) {
  return absl::StrCat(DataTypeName(v.dtype), v.shape.ToString(),
                      v.kind == VarKind::kSelectedRows ? " selected_rows" : "",
                      v.persistable ? " persistable" : "", v.is_parameter ? " parameter" : "",
                      v.stop_gradient ? " stop_gradient" : "");
}

absl::Status Block::AddVar(VarDesc var) {
  auto it = var_index_.find(var.name);
  if (it == var_index_.end()) {
    var_index_.emplace(var.name, vars_.size());
    vars_.push_back(std::move(var));
    return absl::OkStatus();
  }
  const VarDesc& declared = vars_[it->second];
  if (declared == var) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("variable '", var.name, "' is declared twice, as ",
                                                 VarDeclString(declared), " and as ",
                                                 VarDeclString(var)));
}

VarDesc& Block::SetVar(VarDesc var) {
  auto it = var_index_.find(var.name);
  if (it != var_index_.end()) {
    vars_[it->second] = std::move(var);
    return vars_[it->second];
  }
  var_index_.emplace(var.name, vars_.size());
  vars_.push_back(std::move(var));
  return vars_.back();
}

const VarDesc* Block::FindVar(absl::string_view name) const {
  auto it = var_index_.find(name);
  return it == var_index_.end() ? nullptr : &vars_[it->second];
}

VarDesc* Block::FindVar(absl::string_view name) {
  auto it = var_index_.find(name);
  return it == var_index_.end() ? nullptr : &vars_[it->second];
}

OpDesc& Block::AppendOp(OpDesc op) {
  ops_.push_back(std::move(op));
  return ops_.back();
}

OpDesc& Block::InsertOp(size_t index, OpDesc op) {
  return *ops_.insert(ops_.begin() + index, std::move(op));
}

std::string Program::DebugString() const {
  std::string out = "vars:\n";
  for (const VarDesc& v : block_.vars()) {
    absl::StrAppend(&out, "  ", v.name, ": ", DataTypeName(v.dtype), v.shape.ToString(),
                    v.kind == VarKind::kSelectedRows ? " selected_rows" : "",
                    v.is_parameter ? " parameter" : v.persistable ? " persistable" : "",
                    "\n");
  }
  absl::StrAppend(&out, "ops:\n");
  for (size_t i = 0; i < block_.ops().size(); ++i) {
    const OpDesc& op = block_.ops()[i];
    absl::StrAppend(&out, "  #", i, " [", op.op_device.empty() ? "default" : op.op_device,
                    "] ", op.role == OpRole::kForward ? "" : absl::StrCat("(", OpRoleName(op.role), ") "));
    OpDesc copy = op;
    copy.op_device.clear();
    absl::StrAppend(&out, copy.DebugString(), "\n");
  }
  return out;
}

bool operator==(const Program& a, const Program& b) {
  const Block& x = a.block();
  const Block& y = b.block();
  if (x.vars() != y.vars() || x.ops().size() != y.ops().size()) return false;
  for (size_t i = 0; i < x.ops().size(); ++i) {
    const OpDesc& p = x.ops()[i];
    const OpDesc& q = y.ops()[i];
    if (p.type != q.type || p.inputs != q.inputs || p.outputs != q.outputs ||
        p.attrs != q.attrs || p.op_device != q.op_device || p.role != q.role ||
        p.transfer_policy != q.transfer_policy || p.origin != q.origin) {
      return false;
    }
  }
  return true;
}

}  // namespace tandem
