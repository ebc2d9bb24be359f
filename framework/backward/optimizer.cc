#include "framework/backward/optimizer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"

namespace tandem {
namespace {

// Optimizer::set_fold_gradient_casts: each gradient written only by a
// widening cast of a dense 16-bit value, and read by nothing yet, is
// replaced in `grads` by that value; the casts are removed (backward ops:
// no op's origin points at them).
void FoldGradientCasts(Block* block, GradMap* grads) {
  std::map<std::string, int> readers, writers;
  std::map<std::string, size_t> producer;
  const std::vector<OpDesc>& ops = block->ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    for (const std::string& v : ArgumentVars(ops[i].inputs)) ++readers[v];
    for (const std::string& v : ArgumentVars(ops[i].outputs)) {
      ++writers[v];
      producer[v] = i;
    }
  }
  std::set<size_t> folded;
  for (auto& [param, grad] : *grads) {
    auto p = producer.find(grad);
    if (p == producer.end() || writers[grad] != 1 || readers[grad] != 0) continue;
    const OpDesc& cast = ops[p->second];
    const VarDesc* narrow = block->FindVar(cast.Input("X"));
    const VarDesc* wide = block->FindVar(grad);
    const VarDesc* param_var = block->FindVar(param);
    if (cast.type != "cast" || narrow == nullptr || wide == nullptr || param_var == nullptr ||
        !IsLowPrecisionFloat(narrow->dtype) || narrow->kind != VarKind::kDense ||
        wide->dtype != DataType::kFloat32 || param_var->dtype != DataType::kFloat32) {
      continue;
    }
    grad = narrow->name;
    folded.insert(p->second);
  }
  std::vector<OpDesc>& mutable_ops = block->mutable_ops();
  for (auto it = folded.rbegin(); it != folded.rend(); ++it) {
    mutable_ops.erase(mutable_ops.begin() + static_cast<std::ptrdiff_t>(*it));
  }
}

// The (parameter, gradient) pairs in the order the program first reads
// the parameters (never read: last, by name). Update ops appended in this
// order let a pipelined next step start its forward as soon as its first
// layers' parameters are updated, while the later ones still are (host
// workers and streams take ready ops in program order).
std::vector<std::pair<std::string, std::string>> InForwardReadOrder(const Block& block,
                                                                    const GradMap& grads) {
  std::map<std::string, size_t> first_read;
  for (size_t i = 0; i < block.ops().size(); ++i) {
    for (const std::string& v : ArgumentVars(block.ops()[i].inputs)) first_read.emplace(v, i);
  }
  std::vector<std::pair<std::string, std::string>> order(grads.begin(), grads.end());
  auto read_at = [&](const std::string& param) {
    auto it = first_read.find(param);
    return it == first_read.end() ? block.ops().size() : it->second;
  };
  std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    return read_at(a.first) < read_at(b.first);
  });
  return order;
}

// Fills `op`'s attribute defaults and runs its shape inference on the
// declared variables, so bad hyper-parameters or state fail here, naming
// the op, rather than when the program is prepared.
absl::Status ValidateUpdate(const Block& block, OpDesc* op) {
  ASSIGN_OR_RETURN(const OpSchema* schema, OpRegistry::Global().Find(op->type));
  RETURN_IF_ERROR(schema->Validate(op));
  std::map<std::string, std::vector<TensorMeta>> metas;
  for (const auto& [arg, vars] : op->inputs) {
    for (const std::string& v : vars) {
      const VarDesc* d = block.FindVar(v);
      if (d == nullptr) {
        return absl::InternalError(absl::StrCat("op '", op->type, "': no variable '", v, "'"));
      }
      metas[arg].push_back({d->dtype, d->shape, d->kind == VarKind::kSelectedRows});
    }
  }
  InferShapeContext ctx(*op, std::move(metas));
  return schema->infer_shape()(&ctx);
}

// Removes the ops at `indices` (ascending) from `block`; the origins of the
// others that point at ops after a removed one are renumbered. No op may
// derive from a removed one.
void EraseOps(Block* block, const std::vector<int>& indices) {
  std::vector<OpDesc>& ops = block->mutable_ops();
  for (OpDesc& op : ops) {
    if (op.origin.op < 0) continue;
    op.origin.op -= static_cast<int>(
        std::lower_bound(indices.begin(), indices.end(), op.origin.op) - indices.begin());
  }
  for (auto it = indices.rbegin(); it != indices.rend(); ++it) {
    ops.erase(ops.begin() + *it);
  }
}

// Optimizer::set_working_copies, after the updates were appended: each
// forward cast of a parameter to 16 bits whose update op (of type
// `update_type`, with a dense gradient) can write it becomes that update's
// ParamCastOut, persistable, initialised by a cast in `startup`.
absl::Status FoldWorkingCopies(const std::string& update_type, Block* block, Block* startup) {
  std::map<std::string, int> update_of, writers;
  std::set<int> derived_from;
  const std::vector<OpDesc>& ops = block->ops();
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    if (ops[i].origin.op >= 0) derived_from.insert(ops[i].origin.op);
    for (const std::string& v : ArgumentVars(ops[i].outputs)) ++writers[v];
    if (ops[i].type == update_type && ops[i].origin.kind == OpOrigin::Kind::kUpdateOf) {
      update_of[ops[i].origin.var] = i;
    }
  }
  std::vector<int> folded;
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    const OpDesc& cast = ops[i];
    if (cast.type != "cast" || cast.origin.kind != OpOrigin::Kind::kAmpCast) continue;
    auto update = update_of.find(cast.Input("X"));
    const VarDesc* param = block->FindVar(cast.Input("X"));
    VarDesc* copy = block->FindVar(cast.Output("Out"));
    if (update == update_of.end() || param == nullptr || copy == nullptr || !param->persistable ||
        param->dtype != DataType::kFloat32 || !IsLowPrecisionFloat(copy->dtype) ||
        copy->persistable || writers[copy->name] != 1 || derived_from.count(i) > 0) {
      continue;
    }
    OpDesc& op = block->mutable_ops()[update->second];
    const VarDesc* grad = block->FindVar(op.Input("Grad"));
    if (grad == nullptr || grad->kind != VarKind::kDense) continue;
    op.outputs["ParamCastOut"] = {copy->name};
    op.attrs["param_cast_dtype"] = copy->dtype;
    RETURN_IF_ERROR(ValidateUpdate(*block, &op));
    copy->persistable = true;
    copy->stop_gradient = true;
    startup->SetVar(*copy);
    OpDesc initial = cast;  // once, where the parameter is initialised (cast-at-source)
    initial.origin.op = -1;
    startup->AppendOp(std::move(initial));
    folded.push_back(i);
  }
  EraseOps(block, folded);
  return absl::OkStatus();
}

// A persistable constant initialised by the startup program, outside any
// device_guard of the caller: the placer places its initialiser from `origin`.
void CreateUnpinnedConstant(ProgramBuilder* builder, const std::string& name, DataType dtype,
                            const Shape& shape, double value, const OpOrigin& origin) {
  auto unpinned = builder->device_guard("");
  builder->CreatePersistableConstant(name, dtype, shape, value);
  std::vector<OpDesc>& init = builder->startup_program().block().mutable_ops();
  if (builder->status().ok() && !init.empty()) init.back().origin = origin;
}

}  // namespace

const std::map<std::string, std::string>& Optimizer::state_vars(const std::string& param) const {
  static const auto* const kNone = new std::map<std::string, std::string>();
  auto it = state_.find(param);
  return it == state_.end() ? *kNone : it->second;
}

void Optimizer::AddState(ProgramBuilder* builder, const VarDesc& param, OpDesc* op,
                         const std::string& arg, const std::string& slot, DataType dtype,
                         const Shape& shape, double value, bool on_host) {
  const std::string name = builder->UniqueName(absl::StrCat(param.name, "_", slot));
  CreateUnpinnedConstant(builder, name, dtype, shape, value,
                         on_host ? OpOrigin{OpOrigin::Kind::kHostState, -1, ""}
                                 : OpOrigin{OpOrigin::Kind::kStateOf, -1, param.name});
  op->inputs[arg] = {name};
  op->outputs[arg + "Out"] = {name};
  state_[param.name][slot] = name;
}

absl::Status Optimizer::Minimize(ProgramBuilder* builder, Var loss) {
  if (!std::isfinite(learning_rate_) || learning_rate_ <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(op_type_, ": learning rate must be finite and > 0, got ", learning_rate_));
  }
  Var target = loss;
  if (loss_scaling_.has_value()) {
    ASSIGN_OR_RETURN(target, ScaleLoss(builder, loss));
  }
  ASSIGN_OR_RETURN(GradMap grads, AppendBackward(builder, target));
  if (fold_gradient_casts_ && !loss_scaling_.has_value()) {
    FoldGradientCasts(&builder->main_program().block(), &grads);
  }
  std::string skip;
  if (loss_scaling_.has_value()) {
    ASSIGN_OR_RETURN(skip, AppendUnscale(builder, grads));
  }
  if (max_grad_norm_.has_value()) RETURN_IF_ERROR(AppendGradientClip(builder, grads));
  lr_var_ = builder->UniqueName("learning_rate");  // read by every update kernel on the host
  CreateUnpinnedConstant(builder, lr_var_, DataType::kFloat32, Shape({1}), learning_rate_,
                         {OpOrigin::Kind::kHostState, -1, ""});
  Block& block = builder->main_program().block();
  for (const auto& [param, grad] : InForwardReadOrder(block, grads)) {
    OpDesc op;
    op.type = op_type_;
    op.inputs = {{"Param", {param}}, {"Grad", {grad}}, {"LearningRate", {lr_var_}}};
    if (!skip.empty()) op.inputs["SkipUpdate"] = {skip};
    if (!clip_scale_var_.empty()) op.inputs["GradScale"] = {clip_scale_var_};
    op.outputs = {{"ParamOut", {param}}};
    op.role = OpRole::kOptimize;
    op.origin = {OpOrigin::Kind::kUpdateOf, -1, param};
    const VarDesc* desc = block.FindVar(param);
    if (desc == nullptr) {
      return absl::InternalError(absl::StrCat(op_type_, ": no variable '", param, "'"));
    }
    AddUpdateArgs(builder, VarDesc(*desc), &op);
    RETURN_IF_ERROR(builder->status());
    RETURN_IF_ERROR(ValidateUpdate(block, &op));
    block.AppendOp(std::move(op));
  }
  RETURN_IF_ERROR(builder->status());
  if (working_copies_ && WritesWorkingCopies()) {
    RETURN_IF_ERROR(FoldWorkingCopies(op_type_, &block, &builder->startup_program().block()));
  }
  return absl::OkStatus();
}

absl::StatusOr<Var> Optimizer::ScaleLoss(ProgramBuilder* builder, Var loss) {
  const LossScalingOptions& o = *loss_scaling_;
  if (!std::isfinite(o.initial_scale) || o.initial_scale <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        op_type_, ": the initial loss scale must be finite and > 0, got ", o.initial_scale));
  }
  const OpOrigin host{OpOrigin::Kind::kHostState, -1, ""};
  LossScalingVars& v = loss_scaling_vars_;
  v.scale = builder->UniqueName("loss_scaling");
  v.good_steps = builder->UniqueName("loss_scaling_good_steps");
  v.step_skipped = builder->UniqueName("loss_scaling_step_skipped");
  CreateUnpinnedConstant(builder, v.scale, DataType::kFloat32, Shape({1}), o.initial_scale, host);
  CreateUnpinnedConstant(builder, v.good_steps, DataType::kInt32, Shape({1}), 0, host);
  CreateUnpinnedConstant(builder, v.step_skipped, DataType::kBool, Shape({1}), 0, host);
  RETURN_IF_ERROR(builder->status());
  builder->main_program().block().FindVar(v.scale)->stop_gradient = true;
  Var scaled = builder->ElementwiseMul(loss, Var{v.scale});
  RETURN_IF_ERROR(builder->status());
  return scaled;
}

absl::StatusOr<std::string> Optimizer::AppendUnscale(ProgramBuilder* builder,
                                                     const GradMap& grads) {
  const LossScalingVars& v = loss_scaling_vars_;
  Block& block = builder->main_program().block();
  OpDesc update;
  update.type = "update_loss_scaling";
  update.inputs = {{"PrevLossScaling", {v.scale}}, {"InGoodSteps", {v.good_steps}}};
  update.outputs = {{"LossScaling", {v.scale}},
                    {"OutGoodSteps", {v.good_steps}},
                    {"StepSkipped", {v.step_skipped}}};
  update.attrs = {{"growth_factor", loss_scaling_->growth_factor},
                  {"backoff_factor", loss_scaling_->backoff_factor},
                  {"growth_interval", loss_scaling_->growth_interval}};
  update.role = OpRole::kOptimize;
  for (const auto& [param, grad] : grads) {
    VarDesc flag;
    flag.name = builder->UniqueName(grad + ".found_infinite");
    flag.dtype = DataType::kBool;
    flag.shape = Shape({1});
    flag.stop_gradient = true;
    block.SetVar(flag);
    OpDesc check;
    check.type = "check_finite_and_unscale";
    check.inputs = {{"X", {grad}}, {"Scale", {v.scale}}};
    check.outputs = {{"Out", {grad}}, {"FoundInfinite", {flag.name}}};
    check.role = OpRole::kOptimize;
    check.origin = {OpOrigin::Kind::kUpdateOf, -1, param};  // placed with the update
    RETURN_IF_ERROR(ValidateUpdate(block, &check));
    block.AppendOp(std::move(check));
    update.inputs["FoundInfinite"].push_back(flag.name);
  }
  RETURN_IF_ERROR(ValidateUpdate(block, &update));
  block.AppendOp(std::move(update));
  return v.step_skipped;
}

absl::Status Optimizer::AppendGradientClip(ProgramBuilder* builder, const GradMap& grads) {
  if (!(*max_grad_norm_ > 0) || std::isinf(*max_grad_norm_)) {
    return absl::InvalidArgumentError(absl::StrCat(
        op_type_, ": the gradient clipping norm must be finite and > 0, got ", *max_grad_norm_));
  }
  Block& block = builder->main_program().block();
  std::optional<DataType> dtype;
  for (const auto& [param, grad] : grads) {
    const VarDesc* g = block.FindVar(grad);
    if (g == nullptr) return absl::InternalError(absl::StrCat("no gradient variable '", grad, "'"));
    if (g->kind == VarKind::kSelectedRows) {
      return absl::UnimplementedError(
          absl::StrCat(op_type_, ": gradient clipping of the sparse gradient '", grad,
                       "' is not supported (build its lookup_table with is_sparse = false)"));
    }
    // The norms and the factor in the parameters' dtype (a folded 16-bit
    // gradient of a float32 parameter is summed in float32).
    const VarDesc* p = block.FindVar(param);
    const DataType t = p == nullptr ? g->dtype : p->dtype;
    if ((t != DataType::kFloat32 && t != DataType::kFloat64) ||
        (dtype.has_value() && t != *dtype) || (g->dtype != t && !IsLowPrecisionFloat(g->dtype))) {
      return absl::InvalidArgumentError(absl::StrCat(
          op_type_, ": gradient clipping needs float32 or float64 parameters of one dtype; '",
          param, "' is ", DataTypeName(t), " (its gradient '", grad, "' ", DataTypeName(g->dtype),
          ")"));
    }
    dtype = t;
  }
  if (!dtype.has_value()) return absl::OkStatus();  // nothing to clip
  auto declare = [&](const std::string& prefix) {
    VarDesc v;
    v.name = builder->UniqueName(prefix);
    v.dtype = *dtype;
    v.shape = Shape({1});
    v.stop_gradient = true;
    block.SetVar(v);
    return v.name;
  };
  auto append = [&](OpDesc op) -> absl::Status {
    op.role = OpRole::kOptimize;
    RETURN_IF_ERROR(ValidateUpdate(block, &op));
    block.AppendOp(std::move(op));
    return absl::OkStatus();
  };
  OpDesc clip;
  clip.type = "global_norm_clip";
  clip.attrs = {{"max_norm", *max_grad_norm_}};
  for (const auto& [param, grad] : grads) {
    OpDesc norm;
    norm.type = "squared_l2_norm";
    norm.inputs = {{"X", {grad}}};
    norm.outputs = {{"Out", {declare(grad + ".squared_norm")}}};
    clip.inputs["SquaredNorms"].push_back(norm.Output("Out"));
    // Where the gradient is produced (rule grad-norm): only the scalar
    // crosses when the update runs elsewhere (optimizer offload).
    norm.origin = {OpOrigin::Kind::kGradNormOf, -1, grad};
    RETURN_IF_ERROR(append(std::move(norm)));
  }
  clip_scale_var_ = declare("gradient_clip_scale");
  global_norm_var_ = declare("gradient_global_norm");
  clip.outputs = {{"Scale", {clip_scale_var_}}, {"GlobalNorm", {global_norm_var_}}};
  return append(std::move(clip));
}

void Momentum::AddUpdateArgs(ProgramBuilder* builder, const VarDesc& param, OpDesc* op) {
  AddState(builder, param, op, "Velocity", "velocity", param.dtype, param.shape, 0,
           /*on_host=*/false);
  op->attrs = {{"mu", mu_}, {"use_nesterov", use_nesterov_}};
}

void Adam::AddUpdateArgs(ProgramBuilder* builder, const VarDesc& param, OpDesc* op) {
  const AdamOptions& o = options_;
  AddState(builder, param, op, "Moment1", "moment1", param.dtype, param.shape, 0, false);
  AddState(builder, param, op, "Moment2", "moment2", param.dtype, param.shape, 0, false);
  AddState(builder, param, op, "Beta1Pow", "beta1_pow", param.dtype, Shape({1}), o.beta1, true);
  AddState(builder, param, op, "Beta2Pow", "beta2_pow", param.dtype, Shape({1}), o.beta2, true);
  op->attrs = {{"beta1", o.beta1},
               {"beta2", o.beta2},
               {"epsilon", o.epsilon},
               {"weight_decay", o.weight_decay},
               {"decoupled_weight_decay", o.decoupled_weight_decay}};
}

}  // namespace tandem
