#include "ops/optimizer/shape_fns.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace {

// "float32[5, 3]", "float32[5, 3] (SelectedRows)".
std::string Describe(const TensorMeta &m) {
  return absl::StrCat(DataTypeName(m.dtype), m.shape.ToString(),
                      m.selected_rows ? " (SelectedRows)" : "");
}

bool SameShape(const Shape &a, const Shape &b) {
  if (a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i) {
    if (a.dim(i) != b.dim(i) && a.dim(i) != -1 && b.dim(i) != -1) return false;
  }
  return true;
}

// `arg` must be a dense tensor of Param's dtype and shape.
absl::Status CheckLikeParam(const OpDesc &op, const std::string &arg, const TensorMeta &param,
                            const TensorMeta &state) {
  if (state.dtype != param.dtype || state.selected_rows || !SameShape(state.shape, param.shape)) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op.type, "': ", arg, " '", op.Input(arg), "' is ", Describe(state),
                     " but Param '", op.Input("Param"), "' is ", Describe(param),
                     "; it must be dense with Param's dtype and shape"));
  }
  return absl::OkStatus();
}

// `arg` must have Param's dtype and one element.
absl::Status CheckScalarLikeParam(const OpDesc &op, const std::string &arg, const TensorMeta &param,
                                  const TensorMeta &value) {
  const absl::StatusOr<int64_t> size = value.shape.NumElements();
  if (value.dtype != param.dtype || value.selected_rows || (size.ok() && *size != 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "op '", op.type, "': ", arg, " '", op.Input(arg), "' must be ", DataTypeName(param.dtype),
        " (Param's dtype) with one element, got ", Describe(value)));
  }
  return absl::OkStatus();
}

absl::Status AttrError(const OpDesc &op, const std::string &attr, double value,
                       const std::string &want) {
  return absl::InvalidArgumentError(
      absl::StrCat("op '", op.type, "': attribute '", attr, "' must be ", want, ", got ", value));
}

}  // namespace

absl::Status CheckSgdArgs(const OpDesc &op, const TensorMeta &param, const TensorMeta &grad,
                          const TensorMeta &learning_rate) {
  RETURN_IF_ERROR(CheckFloating(op.type, "Param", param.dtype));
  // Mixed precision: a float32 parameter's dense 16-bit gradient, widened
  // (exactly) inside the kernel.
  const bool widened = IsLowPrecisionFloat(grad.dtype) && param.dtype == DataType::kFloat32 &&
                       !grad.selected_rows;
  if ((grad.dtype != param.dtype && !widened) || !SameShape(grad.shape, param.shape)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "op '", op.type, "': Grad '", op.Input("Grad"), "' is ", Describe(grad), " but Param '",
        op.Input("Param"), "' is ", Describe(param),
        "; they must have the same dtype and shape (or a dense bfloat16 or float16 Grad of a "
        "float32 Param)"));
  }
  const absl::StatusOr<int64_t> lr_size = learning_rate.shape.NumElements();
  if (learning_rate.dtype != DataType::kFloat32 || (lr_size.ok() && *lr_size != 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op.type, "': LearningRate '", op.Input("LearningRate"),
                     "' must be float32 with one element, got ", Describe(learning_rate)));
  }
  return absl::OkStatus();
}

absl::StatusOr<MomentumAttrs> GetMomentumAttrs(const OpDesc &op) {
  MomentumAttrs a;
  ASSIGN_OR_RETURN(a.mu, GetAttr<double>(op.attrs, "mu", op.type));
  ASSIGN_OR_RETURN(a.use_nesterov, GetAttr<bool>(op.attrs, "use_nesterov", op.type));
  if (!std::isfinite(a.mu) || a.mu < 0) return AttrError(op, "mu", a.mu, "finite and >= 0");
  return a;
}

absl::Status CheckMomentumArgs(const OpDesc &op, const TensorMeta &param, const TensorMeta &grad,
                               const TensorMeta &velocity, const TensorMeta &learning_rate) {
  RETURN_IF_ERROR(CheckSgdArgs(op, param, grad, learning_rate));
  return CheckLikeParam(op, "Velocity", param, velocity);
}

absl::StatusOr<AdamAttrs> GetAdamAttrs(const OpDesc &op) {
  AdamAttrs a;
  ASSIGN_OR_RETURN(a.beta1, GetAttr<double>(op.attrs, "beta1", op.type));
  ASSIGN_OR_RETURN(a.beta2, GetAttr<double>(op.attrs, "beta2", op.type));
  ASSIGN_OR_RETURN(a.epsilon, GetAttr<double>(op.attrs, "epsilon", op.type));
  ASSIGN_OR_RETURN(a.weight_decay, GetAttr<double>(op.attrs, "weight_decay", op.type));
  ASSIGN_OR_RETURN(a.decoupled_weight_decay,
                   GetAttr<bool>(op.attrs, "decoupled_weight_decay", op.type));
  for (const auto &[name, value] :
       {std::pair<const char *, double>{"beta1", a.beta1}, {"beta2", a.beta2}}) {
    if (!(value >= 0 && value < 1)) return AttrError(op, name, value, "in [0, 1)");
  }
  for (const auto &[name, value] :
       {std::pair<const char *, double>{"epsilon", a.epsilon}, {"weight_decay", a.weight_decay}}) {
    if (!std::isfinite(value) || value < 0) {
      return AttrError(op, name, value, "finite and >= 0");
    }
  }
  return a;
}

absl::Status CheckAdamArgs(const OpDesc &op, const AdamMetas &m) {
  RETURN_IF_ERROR(CheckSgdArgs(op, m.param, m.grad, m.learning_rate));
  RETURN_IF_ERROR(CheckLikeParam(op, "Moment1", m.param, m.moment1));
  RETURN_IF_ERROR(CheckLikeParam(op, "Moment2", m.param, m.moment2));
  RETURN_IF_ERROR(CheckScalarLikeParam(op, "Beta1Pow", m.param, m.beta1_pow));
  return CheckScalarLikeParam(op, "Beta2Pow", m.param, m.beta2_pow);
}

absl::Status CheckScalarArg(const OpDesc &op, const char *arg, const TensorMeta &meta,
                            DataType dtype) {
  const absl::StatusOr<int64_t> size = meta.shape.NumElements();
  if (meta.dtype == dtype && !meta.selected_rows && (!size.ok() || *size == 1)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("op '", op.type, "': ", arg, " '", op.Input(arg),
                                                 "' must be ", DataTypeName(dtype),
                                                 " with one element, got ", Describe(meta)));
}

absl::Status CheckSkipUpdate(const OpDesc &op, const TensorMeta &skip) {
  return CheckScalarArg(op, "SkipUpdate", skip, DataType::kBool);
}

absl::Status CheckOptionalUpdateArgs(InferShapeContext *ctx, DataType param_dtype) {
  if (ctx->HasInput("SkipUpdate")) {
    ASSIGN_OR_RETURN(TensorMeta skip, ctx->Input("SkipUpdate"));
    RETURN_IF_ERROR(CheckSkipUpdate(ctx->op(), skip));
  }
  if (ctx->HasInput("GradScale")) {
    ASSIGN_OR_RETURN(TensorMeta scale, ctx->Input("GradScale"));
    RETURN_IF_ERROR(CheckScalarArg(ctx->op(), "GradScale", scale, param_dtype));
  }
  return absl::OkStatus();
}

absl::StatusOr<LossScalingAttrs> GetLossScalingAttrs(const OpDesc &op) {
  LossScalingAttrs a;
  ASSIGN_OR_RETURN(a.growth_factor, GetAttr<double>(op.attrs, "growth_factor", op.type));
  ASSIGN_OR_RETURN(a.backoff_factor, GetAttr<double>(op.attrs, "backoff_factor", op.type));
  ASSIGN_OR_RETURN(a.growth_interval, GetAttr<int64_t>(op.attrs, "growth_interval", op.type));
  if (!std::isfinite(a.growth_factor) || a.growth_factor <= 1) {
    return AttrError(op, "growth_factor", a.growth_factor, "finite and > 1");
  }
  if (!(a.backoff_factor > 0 && a.backoff_factor < 1)) {
    return AttrError(op, "backoff_factor", a.backoff_factor, "in (0, 1)");
  }
  if (a.growth_interval < 1) {
    return AttrError(op, "growth_interval", static_cast<double>(a.growth_interval), ">= 1");
  }
  return a;
}

absl::Status CheckParamCast(const OpDesc &op, DataType param_dtype, bool sparse_grad,
                            DataType cast_dtype) {
  if (IsLowPrecisionFloat(cast_dtype) && param_dtype == DataType::kFloat32 && !sparse_grad) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "op '", op.type, "': ParamCastOut '", op.Output("ParamCastOut"),
      "' needs a float32 Param with a dense Grad and param_cast_dtype bfloat16 or float16; got "
      "Param ",
      DataTypeName(param_dtype), sparse_grad ? " with a sparse Grad" : "", ", param_cast_dtype ",
      DataTypeName(cast_dtype)));
}

}  // namespace tandem
