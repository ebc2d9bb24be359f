// Shape functions of the optimizer ops (sgd, momentum, adam), used by their
// schemas (ops/optimizer/*_op.cc) and by kernels, so both agree.
//
//   RETURN_IF_ERROR(CheckSgdArgs(op, param, grad, learning_rate));
//   ASSIGN_OR_RETURN(MomentumAttrs a, GetMomentumAttrs(op));
//   RETURN_IF_ERROR(CheckMomentumArgs(op, param, grad, velocity,
//   learning_rate)); ASSIGN_OR_RETURN(AdamAttrs a, GetAdamAttrs(op));
//   RETURN_IF_ERROR(CheckAdamArgs(op, {param, grad, lr, m1, m2, beta1_pow,
//   beta2_pow}));
#ifndef TANDEM_OPS_OPTIMIZER_SHAPE_FNS_H_
#define TANDEM_OPS_OPTIMIZER_SHAPE_FNS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/op/op_desc.h"
#include "framework/op/op_schema.h"

namespace tandem {

// Checks the arguments of `op` (an sgd op): Param is float32 or float64;
// Grad has Param's shape and dtype (or, dense, bfloat16 or float16 for a
// float32 Param: a mixed-precision gradient), dense or as SelectedRows (whose meta
// shape is [height, ...], so its height must be Param's dim 0); the
// learning rate is float32 with one element. Unknown dims (-1) match any.
// InvalidArgument naming the op, the argument, its variable and the metas.
absl::Status CheckSgdArgs(const OpDesc &op, const TensorMeta &param, const TensorMeta &grad,
                          const TensorMeta &learning_rate);

// Attributes of a momentum op: mu finite and >= 0.
struct MomentumAttrs {
  double mu = 0.9;
  bool use_nesterov = false;
};
// InvalidArgument naming the op and the attribute for a bad value.
absl::StatusOr<MomentumAttrs> GetMomentumAttrs(const OpDesc &op);

// CheckSgdArgs, and Velocity is a dense tensor of Param's dtype and shape.
absl::Status CheckMomentumArgs(const OpDesc &op, const TensorMeta &param, const TensorMeta &grad,
                               const TensorMeta &velocity, const TensorMeta &learning_rate);

// Attributes of an adam op: beta1, beta2 in [0, 1); epsilon finite and
// >= 0; weight_decay finite and >= 0, applied decoupled (AdamW) or as an
// L2 term added to the gradient.
struct AdamAttrs {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double weight_decay = 0;
  bool decoupled_weight_decay = true;
};
absl::StatusOr<AdamAttrs> GetAdamAttrs(const OpDesc &op);

// The input metas of an adam op.
struct AdamMetas {
  TensorMeta param, grad, learning_rate, moment1, moment2, beta1_pow, beta2_pow;
};
// CheckSgdArgs; Moment1 and Moment2 dense with Param's dtype and shape;
// Beta1Pow and Beta2Pow of Param's dtype with one element.
absl::Status CheckAdamArgs(const OpDesc &op, const AdamMetas &m);

// An update op's optional SkipUpdate (dynamic loss scaling's "this step
// overflowed"): bool with one element. InvalidArgument naming the op and
// the variable otherwise.
absl::Status CheckSkipUpdate(const OpDesc &op, const TensorMeta &skip);

// An update op's optional inputs, when bound: SkipUpdate (CheckSkipUpdate)
// and GradScale (gradient clipping's factor: Param's dtype with one element).
absl::Status CheckOptionalUpdateArgs(InferShapeContext *ctx, DataType param_dtype);

// adam's ParamCastOut (the 16-bit working copy): a float32 Param, a dense
// Grad and param_cast_dtype bfloat16 or float16; else InvalidArgument
// naming the op and the output's variable.
absl::Status CheckParamCast(const OpDesc &op, DataType param_dtype, bool sparse_grad,
                            DataType cast_dtype);

// Attributes of update_loss_scaling: growth_factor > 1, backoff_factor in
// (0, 1), growth_interval >= 1.
struct LossScalingAttrs {
  double growth_factor = 2;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};
absl::StatusOr<LossScalingAttrs> GetLossScalingAttrs(const OpDesc &op);

// A float32 scalar with one element (the loss scale) or an int32 one (the
// good-step count) of input `arg`; InvalidArgument naming it otherwise.
absl::Status CheckScalarArg(const OpDesc &op, const char *arg, const TensorMeta &meta,
                            DataType dtype);

}  // namespace tandem

#endif  // TANDEM_OPS_OPTIMIZER_SHAPE_FNS_H_
