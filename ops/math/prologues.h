// Kernel prologues of the math ops: the attributes, input checks and output
// shapes that the host kernels (math_kernels.h) and the gpu kernels
// (backends/cuda) share, so both validate in the same order and fail with
// the same messages. A kernel reads its attrs in Init and its arguments at
// the top of Compute, then does only its own work:
//
//   absl::Status Init(const OpDesc& op) override { return cols_.Read(op); }
//   absl::Status Compute(KernelContext* ctx) override {
//     ASSIGN_OR_RETURN(const prologue::MulGradArgs a, prologue::GetMulGradArgs(ctx, cols_));
//     ...  // a.x, a.y, a.dout checked; a.dx, a.dy allocated when bound (else null)
//   }
//
// Errors are InvalidArgument naming the op, the argument, dtypes and shapes
// (ops/math/shape_fns.h). Nothing here reads tensor data, so every function
// works on any place. Stateless and thread-safe.
#ifndef TANDEM_OPS_MATH_PROLOGUES_H_
#define TANDEM_OPS_MATH_PROLOGUES_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "framework/kernel/kernel_context.h"
#include "framework/op/op_desc.h"
#include "framework/tensor/tensor.h"
#include "framework/types/data_type.h"
#include "framework/types/shape.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace prologue {

// Attribute `name` of `op` into *value (NotFound or InvalidArgument as
// GetAttr), for one-attribute kernels:
//   absl::Status Init(const OpDesc& op) override { return ReadAttr(op, "axis", &axis_); }
template <typename T>
absl::Status ReadAttr(const OpDesc& op, absl::string_view name, T* value) {
  absl::StatusOr<T> v = GetAttr<T>(op.attrs, name, op.type);
  if (!v.ok()) return v.status();
  *value = *std::move(v);
  return absl::OkStatus();
}

// *out = *v, or v's error: for Init methods that keep what an attribute
// reader returns:
//   absl::Status Init(const OpDesc& op) override { return Store(ReadConv2DParams(op), &params_); }
template <typename T>
absl::Status Store(absl::StatusOr<T> v, T* out) {
  if (!v.ok()) return v.status();
  *out = *std::move(v);
  return absl::OkStatus();
}

// Output `arg` allocated as dtype[shape] when the op binds it, else null
// (a gradient nobody asked for).
absl::StatusOr<Tensor*> AllocateIfBound(KernelContext* ctx, absl::string_view arg, DataType dtype,
                                        const Shape& shape);

// InvalidArgument unless X and Y have the same dtype: "op 'matmul': X is
// float32[2, 3] but Y is float64[3, 2]; cast one of them".
absl::Status CheckSameDtype(const KernelContext& ctx, const Tensor& x, const Tensor& y);
// InvalidArgument unless Out@GRAD is `dtype` with shape `expected`:
// "op 'matmul_grad': Out@GRAD is float32[2, 3], expected float32[2, 2]".
absl::Status CheckOutGrad(const KernelContext& ctx, const Tensor& dout, DataType dtype,
                          const Shape& expected);

// fill_constant's attrs; a negative dim of `shape` is InvalidArgument
// "op 'fill_constant': attribute 'shape': ...".
struct FillConstantAttrs {
  Shape shape;
  double value = 0;
  DataType dtype = DataType::kFloat32;

  absl::Status Read(const OpDesc& op);
};

// scale's attrs.
struct ScaleAttrs {
  double scale = 1;
  double bias = 0;
  bool bias_after_scale = true;

  absl::Status Read(const OpDesc& op);
};

// The shapes of elementwise_<op>(_grad): Y aligned to X by `axis` and the
// broadcast output. Validates dtypes and shapes.
struct BinaryShapes {
  Shape y_aligned;
  Shape out;
};
absl::StatusOr<BinaryShapes> GetBinaryShapes(const KernelContext& ctx, const Tensor& x,
                                             const Tensor& y, int64_t axis);

// X, Y and Out@GRAD of elementwise_<op>_grad, checked, and for div
// (`reads_out`) the forward Out, which must have the output's shape and X's
// dtype.
struct ElementwiseGradArgs {
  const Tensor* x = nullptr;
  const Tensor* y = nullptr;
  const Tensor* dout = nullptr;
  const Tensor* out = nullptr;  // reads_out only
  BinaryShapes shapes;
};
absl::StatusOr<ElementwiseGradArgs> GetElementwiseGradArgs(const KernelContext& ctx, int64_t axis,
                                                           bool reads_out);

// Whether every bound gradient (X@GRAD, Y@GRAD) has Out's elements, so
// nothing is summed over broadcast dims (they hold Out@GRAD's elements in
// its order: an add's are G itself, a sub's G and -G).
bool GradientsUnbroadcast(const KernelContext& ctx, const ElementwiseGradArgs& a);

// elementwise_add_grad with nothing to sum over broadcast dims, where the
// step may forward Out@GRAD (KernelContext::may_forward_inputs): binds each
// bound gradient to Out@GRAD's own tensor, shaped as its input (no copy:
// both are G), and returns true; otherwise binds nothing and returns false.
absl::StatusOr<bool> ForwardAddGradients(KernelContext* ctx, const ElementwiseGradArgs& a);

// matmul(_grad)'s attrs.
struct MatmulAttrs {
  bool tx = false;
  bool ty = false;
  double alpha = 1;

  absl::Status Read(const OpDesc& op);
};

// X and Y (and Out@GRAD for the gradient) of matmul(_grad), checked, with
// the product's geometry (MatmulShape).
struct MatmulArgs {
  const Tensor* x = nullptr;
  const Tensor* y = nullptr;
  const Tensor* dout = nullptr;  // gradient only
  MatmulDims d;
};
absl::StatusOr<MatmulArgs> GetMatmulArgs(const KernelContext& ctx, const MatmulAttrs& attrs,
                                         bool grad);

// reduce_sum / reduce_mean's attrs (and their gradients').
struct ReduceAttrs {
  std::vector<int64_t> dims;
  bool keep_dim = false;
  bool reduce_all = false;

  absl::Status Read(const OpDesc& op);
};
// ReduceShape of X with `attrs` (and CheckMeanCount for a mean).
absl::StatusOr<ReduceDims> GetReduceDims(const KernelContext& ctx, const Shape& x,
                                         const ReduceAttrs& attrs, bool mean);

// X and Out@GRAD of reduce_sum/mean_grad, checked, and X@GRAD allocated.
struct ReduceGradArgs {
  const Tensor* x = nullptr;
  const Tensor* dout = nullptr;
  ReduceDims r;
  Tensor* dx = nullptr;
};
absl::StatusOr<ReduceGradArgs> GetReduceGradArgs(KernelContext* ctx, const ReduceAttrs& attrs,
                                                 bool mean);

// mul(_grad)'s attrs x_num_col_dims and y_num_col_dims.
struct NumColDims {
  int64_t x = 1;
  int64_t y = 1;

  absl::Status Read(const OpDesc& op);
};
// mul's geometry (FlatMatmulShape) after checking X and Y share a dtype.
absl::StatusOr<FlatMatmulDims> GetMulDims(const KernelContext& ctx, const Tensor& x,
                                          const Tensor& y, const NumColDims& cols);

// X and Y of mul, checked, with Out allocated.
struct MulArgs {
  const Tensor* x = nullptr;
  const Tensor* y = nullptr;
  FlatMatmulDims d;
  Tensor* out = nullptr;
};
absl::StatusOr<MulArgs> GetMulArgs(KernelContext* ctx, const NumColDims& cols);

// X, Y and Out@GRAD of mul_grad, checked; X@GRAD and Y@GRAD allocated when
// bound (else null).
struct MulGradArgs {
  const Tensor* x = nullptr;
  const Tensor* y = nullptr;
  const Tensor* dout = nullptr;
  FlatMatmulDims d;
  Tensor* dx = nullptr;
  Tensor* dy = nullptr;
};
absl::StatusOr<MulGradArgs> GetMulGradArgs(KernelContext* ctx, const NumColDims& cols);

// The forward tensor an activation's gradient reads (`fwd_arg`: "Out" for
// relu/sigmoid/tanh_grad, "X" for gelu_grad; backends/common/activation.h's GradReadsInput)
// and Out@GRAD, checked (same dtype and shape), and X@GRAD allocated.
struct ActivationGradArgs {
  const Tensor* fwd = nullptr;
  const Tensor* dout = nullptr;
  Tensor* dx = nullptr;
};
absl::StatusOr<ActivationGradArgs> GetActivationGradArgs(KernelContext* ctx,
                                                         absl::string_view fwd_arg);

}  // namespace prologue
}  // namespace tandem

#endif  // TANDEM_OPS_MATH_PROLOGUES_H_
