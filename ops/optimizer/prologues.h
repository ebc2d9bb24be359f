// Kernel prologues of the optimizer ops (sgd, momentum, adam): the input
// checks that the host kernels (optimizer_kernels.h) and the gpu kernels
// (backends/cuda) share, so every place validates in the same order with
// the same messages:
//
//   absl::Status Compute(KernelContext* ctx) override {
//     ASSIGN_OR_RETURN(const prologue::AdamArgs a, prologue::GetAdamArgs(ctx));
//     RETURN_IF_ERROR(prologue::CheckBetaPow(*ctx, "Beta1Pow", beta1_pow));  // host memory
//     ...  // update *a.u.param, *a.m1, *a.m2 in place
//   }
//
// Errors are InvalidArgument naming the op, the argument, its variable and
// the offending dtype, shape or row (ops/optimizer/shape_fns.h). A sparse
// Grad's rows and the LearningRate are host data (SelectedRows rows,
// HostMemory), so these checks read them on every place. Stateless and
// thread-safe.
#ifndef TANDEM_OPS_OPTIMIZER_PROLOGUES_H_
#define TANDEM_OPS_OPTIMIZER_PROLOGUES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/kernel/kernel_context.h"
#include "framework/tensor/selected_rows.h"
#include "framework/tensor/tensor.h"
#include "framework/tensor/variable.h"
#include "ops/optimizer/shape_fns.h"

namespace tandem {
namespace prologue {

// Param, Grad (a dense tensor or SelectedRows) and LearningRate of an
// update op, present and initialised (else InvalidArgument naming the
// argument and its variable).
struct UpdateArgs {
  const Tensor* param = nullptr;
  const Variable* grad = nullptr;
  const Tensor* learning_rate = nullptr;  // in host memory
  // SkipUpdate's value (dynamic loss scaling skips the step): the kernel
  // then binds its outputs to its inputs and changes nothing.
  bool skip = false;
  // GradScale (gradient clipping's factor: Param's dtype with one element,
  // on the op's place), null when not bound: the kernels use Grad *
  // GradScale (in Param's dtype); only a dense Grad may be scaled. Host
  // kernels read it with GradScaleOnHost; a device kernel passes its
  // address to the launch, so no step waits for the factor on the host.
  const Tensor* grad_scale = nullptr;

  bool sparse() const { return grad->is_selected_rows(); }
  TensorMeta param_meta() const { return {param->dtype(), param->shape()}; }
  // A sparse Grad's meta is its dense shape [height, ...].
  TensorMeta grad_meta() const;
  TensorMeta learning_rate_meta() const { return {learning_rate->dtype(), learning_rate->shape()}; }
  float lr() const { return learning_rate->data<float>()[0]; }
  // GradScale's value (1 when not bound); its memory must be addressable by
  // the host (a host kernel's place).
  double GradScaleOnHost() const;
};
absl::StatusOr<UpdateArgs> GetUpdateArgs(const KernelContext& ctx);

// For a sparse Grad (after the op's meta checks): one value row per index
// and every index in [0, Param.dim(0)), else InvalidArgument naming the
// position, the index and both variables. OK for a dense Grad.
absl::Status CheckSparseGrad(const KernelContext& ctx, const UpdateArgs& a);

// sgd's arguments, checked (CheckSgdArgs, CheckSparseGrad).
absl::StatusOr<UpdateArgs> GetSgdArgs(const KernelContext& ctx);

// momentum's arguments and Velocity, checked (CheckMomentumArgs,
// CheckSparseGrad).
struct MomentumArgs {
  UpdateArgs u;
  const Tensor* velocity = nullptr;
};
absl::StatusOr<MomentumArgs> GetMomentumArgs(const KernelContext& ctx);

// adam's arguments, moments and beta powers (host memory), checked
// (CheckAdamArgs, CheckSparseGrad); the beta powers' values are checked by
// CheckBetaPow.
struct AdamArgs {
  UpdateArgs u;
  const Tensor* m1 = nullptr;
  const Tensor* m2 = nullptr;
  const Tensor* beta1_pow = nullptr;
  const Tensor* beta2_pow = nullptr;
};
absl::StatusOr<AdamArgs> GetAdamArgs(const KernelContext& ctx);
// adam's ParamCastOut (the 16-bit working copy) allocated with Param's
// shape and the op's param_cast_dtype; nullptr when the op does not bind
// it. InvalidArgument (naming the op and the variable) unless Param is
// float32 with a dense Grad and the dtype bfloat16 or float16.
absl::StatusOr<Tensor*> AllocateParamCast(KernelContext* ctx, const AdamArgs& a);

// Binds momentum's ParamOut and VelocityOut, and adam's ParamOut,
// Moment1Out, Moment2Out, Beta1PowOut and Beta2PowOut, to their inputs'
// tensors: the updates are in place.
absl::Status BindMomentumOutputs(KernelContext* ctx, const MomentumArgs& a);
absl::Status BindAdamOutputs(KernelContext* ctx, const AdamArgs& a);

// InvalidArgument unless a beta power (`arg`, one element) is in [0, 1).
absl::Status CheckBetaPow(const KernelContext& ctx, const char* arg, double value);

// check_finite_and_unscale's arguments with Out (X's values' dtype and
// shape) and FoundInfinite (bool [1]) allocated. `values` holds X's buffer
// (dense, or a SelectedRows X's values), alive when Out replaces X.
struct UnscaleArgs {
  Tensor values;
  std::optional<SelectedRows> sparse;  // X's rows and height, when sparse
  float divisor = 1;                   // Scale's value (host memory)
  Tensor* out = nullptr;
  Tensor* found_infinite = nullptr;
};
absl::StatusOr<UnscaleArgs> GetUnscaleArgs(KernelContext* ctx);
// After the values are written: a sparse X's Out becomes SelectedRows with
// X's rows and height and Out's values.
absl::Status FinishUnscale(KernelContext* ctx, const UnscaleArgs& a);

// squared_l2_norm's X (dense floating) and its Out allocated: one element,
// float64 for float64 X, float32 otherwise. InvalidArgument naming the
// variable for a SelectedRows or non-floating X.
struct SquaredNormArgs {
  const Tensor* x = nullptr;
  Tensor* out = nullptr;
};
absl::StatusOr<SquaredNormArgs> GetSquaredNormArgs(KernelContext* ctx);

// global_norm_clip's SquaredNorms (on the op's place, each of Scale's
// dtype with one element; checked, not read), its max_norm, and its two
// outputs allocated.
struct GlobalNormClipArgs {
  std::vector<const Tensor*> squared_norms;
  DataType dtype = DataType::kFloat32;  // of the norms and both outputs
  double max_norm = 1;
  Tensor* scale = nullptr;
  Tensor* global_norm = nullptr;
};
absl::StatusOr<GlobalNormClipArgs> GetGlobalNormClipArgs(KernelContext* ctx, double max_norm);
// The host's global_norm_clip on host-addressable memory: adds the squared
// norms in double in input order, then writes GlobalNorm = sqrt(sum) and
// Scale = min(1, max_norm / (GlobalNorm + 1e-6)) (PyTorch's
// clip_grad_norm_; a NaN norm gives a NaN Scale), rounded to their dtype.
// The CUDA kernel computes the same, in the same order.
void ComputeGlobalNormClip(const GlobalNormClipArgs& a);

}  // namespace prologue
}  // namespace tandem

#endif  // TANDEM_OPS_OPTIMIZER_PROLOGUES_H_
