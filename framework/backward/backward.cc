#include "framework/backward/backward.h"

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"

namespace tandem {
namespace {

// Adds VarDescs for the outputs of `op` from its shape inference.
absl::Status DeclareOutputs(Block* block, const OpDesc& op) {
  ASSIGN_OR_RETURN(const OpSchema* schema, OpRegistry::Global().Find(op.type));
  std::map<std::string, std::vector<TensorMeta>> metas;
  for (const auto& [arg, vars] : op.inputs) {
    for (const std::string& v : vars) {
      const VarDesc* d = block->FindVar(v);
      if (d == nullptr) {
        return absl::InternalError(
            absl::StrCat("backward: op '", op.type, "' reads '", v, "', which has no description"));
      }
      metas[arg].push_back(TensorMeta{d->dtype, d->shape, d->kind == VarKind::kSelectedRows});
    }
  }
  InferShapeContext ctx(op, std::move(metas));
  if (schema->infer_shape()) RETURN_IF_ERROR(schema->infer_shape()(&ctx));
  for (const auto& [arg, vars] : op.outputs) {
    auto it = ctx.outputs().find(arg);
    for (size_t i = 0; i < vars.size(); ++i) {
      VarDesc v{vars[i]};
      if (it != ctx.outputs().end() && i < it->second.size()) {
        v.dtype = it->second[i].dtype;
        v.shape = it->second[i].shape;
        v.kind = it->second[i].selected_rows ? VarKind::kSelectedRows : VarKind::kDense;
      }
      absl::Status declared = block->AddVar(v);
      if (!declared.ok()) {
        return absl::Status(declared.code(), absl::StrCat("backward: op '", op.type, "' output '",
                                                          arg, "': ", declared.message()));
      }
    }
  }
  return absl::OkStatus();
}

// Variables that depend on a trainable parameter (through ops whose outputs
// do not stop the gradient), and the index of the op that writes `loss`
// (-1 when none does).
struct ForwardFlow {
  std::set<std::string> needs_grad;
  int loss_producer = -1;
};

ForwardFlow TraceForward(const Block& block, const std::vector<OpDesc>& forward,
                         const std::string& loss) {
  ForwardFlow flow;
  for (const VarDesc& v : block.vars()) {
    if (v.is_parameter && !v.stop_gradient) flow.needs_grad.insert(v.name);
  }
  for (size_t i = 0; i < forward.size(); ++i) {
    bool any = false;
    for (const std::string& in : ArgumentVars(forward[i].inputs)) {
      any |= flow.needs_grad.count(in) > 0;
    }
    for (const std::string& out : ArgumentVars(forward[i].outputs)) {
      const VarDesc* d = block.FindVar(out);
      if (any && d != nullptr && !d->stop_gradient) flow.needs_grad.insert(out);
      if (out == loss) flow.loss_producer = static_cast<int>(i);
    }
  }
  return flow;
}

// Which of forward[0..loss_producer] write a variable the loss is computed from.
std::vector<bool> OpsOnPathToLoss(const std::vector<OpDesc>& forward, int loss_producer,
                                  const std::string& loss) {
  std::set<std::string> reaches_loss = {loss};
  std::vector<bool> on_path(forward.size(), false);
  for (int i = loss_producer; i >= 0; --i) {
    bool feeds = false;
    for (const std::string& out : ArgumentVars(forward[i].outputs)) {
      feeds |= reaches_loss.count(out) > 0;
    }
    if (!feeds) continue;
    on_path[i] = true;
    for (const std::string& in : ArgumentVars(forward[i].inputs)) reaches_loss.insert(in);
  }
  return on_path;
}

// d loss / d loss = 1 (the placer puts it with the loss op).
absl::Status AppendLossGradFill(Block* block, const VarDesc& loss, int loss_producer) {
  OpDesc fill;
  fill.type = "fill_constant";
  fill.outputs["Out"] = {GradVarName(loss.name)};
  fill.attrs = {{"shape", loss.shape.ToVector()}, {"dtype", loss.dtype}, {"value", 1.0}};
  fill.role = OpRole::kLoss;
  fill.origin = {OpOrigin::Kind::kLossGradOf, loss_producer, ""};
  RETURN_IF_ERROR(block->AddVar(VarDesc{GradVarName(loss.name), loss.dtype, loss.shape}));
  block->AppendOp(fill);
  return absl::OkStatus();
}

// Appends one gradient op of forward op #`forward_index`. Gradient outputs
// that already exist, or that this op writes twice (concat(x, x)), are
// produced under a new name (counted by *rename_counter) and summed into
// the existing one by an elementwise_add appended after it.
absl::Status AppendGradOp(Block* block, OpDesc g, const OpDesc& fwd, int forward_index,
                          int* rename_counter) {
  g.role = OpRole::kBackward;
  g.origin = {OpOrigin::Kind::kGradOf, forward_index, ""};
  g.transfer_policy = fwd.transfer_policy;
  std::vector<std::pair<std::string, std::string>> accumulate;
  std::set<std::string> written;
  for (auto& [arg, vars] : g.outputs) {
    for (std::string& v : vars) {
      const bool exists = block->HasVar(v) || written.count(v) > 0;
      if (exists && v.size() > 5 && v.compare(v.size() - 5, 5, kGradSuffix) == 0) {
        const std::string renamed = absl::StrCat(v, "@RENAME@", (*rename_counter)++);
        accumulate.emplace_back(v, renamed);
        v = renamed;
      }
      written.insert(v);
    }
  }
  RETURN_IF_ERROR(DeclareOutputs(block, g));
  block->AppendOp(g);
  for (const auto& [total, partial] : accumulate) {
    if (block->FindVar(partial)->kind == VarKind::kSelectedRows) {
      return absl::UnimplementedError(
          absl::StrCat("AppendBackward: '", total,
                       "' has several sparse gradient contributions; "
                       "summing SelectedRows is not supported (use is_sparse=false)"));
    }
    OpDesc sum;
    sum.type = "elementwise_add";
    sum.inputs = {{"X", {total}}, {"Y", {partial}}};
    sum.outputs = {{"Out", {total}}};
    sum.attrs = {{"axis", int64_t{-1}}};
    sum.role = OpRole::kBackward;
    sum.origin = {OpOrigin::Kind::kGradSumOf, -1, partial};
    block->AppendOp(sum);
  }
  return absl::OkStatus();
}

// Appends the gradient ops of forward op #i, given which variables have a
// gradient so far (*has_grad, extended by the inputs this op gives one).
absl::Status AppendGradOpsOf(Block* block, const std::vector<OpDesc>& forward, int i,
                             const std::set<std::string>& needs_grad,
                             std::set<std::string>* has_grad, int* rename_counter) {
  const OpDesc& fwd = forward[i];
  bool out_has_grad = false;
  for (const std::string& out : ArgumentVars(fwd.outputs)) {
    out_has_grad |= has_grad->count(out) > 0;
  }
  if (!out_has_grad) return absl::OkStatus();
  GradContext ctx;
  for (const std::string& in : ArgumentVars(fwd.inputs)) {
    if (needs_grad.count(in)) ctx.wanted.push_back(in);
  }
  if (ctx.wanted.empty()) return absl::OkStatus();
  ctx.meta = [block](const std::string& var) -> std::optional<TensorMeta> {
    const VarDesc* d = block->FindVar(var);
    if (d == nullptr) return std::nullopt;
    return TensorMeta{d->dtype, d->shape, d->kind == VarKind::kSelectedRows};
  };
  ASSIGN_OR_RETURN(const OpSchema* schema, OpRegistry::Global().Find(fwd.type));
  if (!schema->grad_maker()) {
    return absl::NotFoundError(absl::StrCat("AppendBackward: op '", fwd.type, "' (#", i,
                                            ") has no gradient, but its inputs ", ctx.wanted[0],
                                            "... need one"));
  }
  ASSIGN_OR_RETURN(std::vector<OpDesc> grad_ops, schema->grad_maker()(fwd, ctx));
  for (OpDesc& g : grad_ops) {
    RETURN_IF_ERROR(AppendGradOp(block, std::move(g), fwd, i, rename_counter));
  }
  for (const std::string& in : ctx.wanted) has_grad->insert(in);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GradMap> AppendBackward(ProgramBuilder* builder, Var loss) {
  if (!builder->status().ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("AppendBackward: the program has an error: ", builder->status().message()));
  }
  Block& block = builder->main_program().block();
  const VarDesc* loss_desc = block.FindVar(loss.name);
  if (loss_desc == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("AppendBackward: unknown loss '", loss.name, "'"));
  }
  const std::vector<OpDesc> forward = block.ops();
  const ForwardFlow flow = TraceForward(block, forward, loss.name);
  if (flow.loss_producer < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("AppendBackward: no op produces the loss '", loss.name, "'"));
  }
  if (!flow.needs_grad.count(loss.name)) {
    return absl::FailedPreconditionError(
        absl::StrCat("AppendBackward: no trainable parameter reaches the loss '", loss.name, "'"));
  }
  const std::vector<bool> on_path = OpsOnPathToLoss(forward, flow.loss_producer, loss.name);
  RETURN_IF_ERROR(AppendLossGradFill(&block, *loss_desc, flow.loss_producer));

  std::set<std::string> has_grad = {loss.name};
  int rename_counter = 0;
  for (int i = flow.loss_producer; i >= 0; --i) {
    if (!on_path[i]) continue;
    RETURN_IF_ERROR(
        AppendGradOpsOf(&block, forward, i, flow.needs_grad, &has_grad, &rename_counter));
  }

  GradMap grads;
  for (const VarDesc& v : block.vars()) {
    if (v.is_parameter && !v.stop_gradient && has_grad.count(v.name) &&
        block.HasVar(GradVarName(v.name))) {
      grads[v.name] = GradVarName(v.name);
    }
  }
  if (grads.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("AppendBackward: no trainable parameter reaches the loss '", loss.name, "'"));
  }
  return grads;
}

}  // namespace tandem
