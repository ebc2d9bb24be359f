// Kernel prologues of the nn ops (lookup_table, fc, dropout, conv2d,
// pool2d, layer_norm, self_attention and their gradients): the attributes, input checks and
// output shapes that the host kernels (nn_kernels.h, nn_layer_kernels.h,
// backends/cpu's oneDNN kernels) and the gpu kernels (backends/cuda) share,
// so every place validates in the same order with the same messages:
//
//   absl::Status Compute(KernelContext* ctx) override {
//     ASSIGN_OR_RETURN(const prologue::FcGradArgs a, prologue::GetFcGradArgs(ctx, cols_));
//     ...  // inputs checked; the bound gradients allocated (else null)
//   }
//
// Errors are InvalidArgument naming the op, the argument and the offending
// dtype, shape or attribute (ops/nn/shape_fns.h). Nothing here reads
// tensor data (id ranges are the kernels' own checks, with BadIdError's
// message), so every function works on any place. Stateless, thread-safe.
#ifndef TANDEM_OPS_NN_PROLOGUES_H_
#define TANDEM_OPS_NN_PROLOGUES_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "framework/kernel/kernel_context.h"
#include "framework/op/op_desc.h"
#include "framework/tensor/tensor.h"
#include "framework/types/shape.h"
#include "ops/math/shape_fns.h"
#include "ops/nn/shape_fns.h"

namespace tandem {
namespace prologue {

// lookup_table(_grad)'s attrs.
struct LookupAttrs {
  int64_t padding_idx = -1;
  bool is_sparse = false;

  absl::Status Read(const OpDesc& op);
};

// Ids (int64) and W (a float [rows, dim] table) of lookup_table(_grad),
// checked (LookupTableShape), with attr padding_idx as a row (-1: none).
// The ids themselves are not range-checked here.
struct Lookup {
  const Tensor* ids = nullptr;
  const Tensor* w = nullptr;
  Shape out;  // Ids.shape + [dim]
  int64_t n = 0, rows = 0, dim = 0;
  int64_t padding_row = -1;
};
absl::StatusOr<Lookup> GetLookup(const KernelContext& ctx, int64_t padding_idx);
// The error of an id outside [0, rows): "op 'lookup_table': id 12 at
// position 3 is out of range [0, 10) of table 'emb_w'".
absl::Status BadIdError(absl::string_view op, absl::string_view table, int64_t id, int64_t position,
                        int64_t rows);

// fc's geometry (FcShape) from the tensors; `bias` may be null.
absl::StatusOr<FlatMatmulDims> GetFcDims(const KernelContext& ctx, const Tensor& input,
                                         const Tensor& w, const Tensor* bias,
                                         int64_t in_num_col_dims);

// Input, W and the optional Bias of fc, checked, and Out allocated.
struct FcArgs {
  const Tensor* input = nullptr;
  const Tensor* w = nullptr;
  const Tensor* bias = nullptr;  // null when absent
  FlatMatmulDims d;
  Tensor* out = nullptr;
};
absl::StatusOr<FcArgs> GetFcArgs(KernelContext* ctx, int64_t in_num_col_dims);

// Input, W and Out@GRAD of fc_grad, checked; Input@GRAD, W@GRAD and
// Bias@GRAD ([M]) allocated when bound (else null).
struct FcGradArgs {
  const Tensor* input = nullptr;
  const Tensor* w = nullptr;
  const Tensor* dout = nullptr;
  FlatMatmulDims d;
  Tensor* dinput = nullptr;
  Tensor* dw = nullptr;
  Tensor* dbias = nullptr;
};
absl::StatusOr<FcGradArgs> GetFcGradArgs(KernelContext* ctx, int64_t in_num_col_dims);

// dropout(_grad)'s attrs, validated.
struct DropoutAttrs {
  double prob = 0.5;
  bool is_test = false;

  absl::Status Read(const OpDesc& op);
  // What kept elements are multiplied by: 1 / (1 - prob) in T (1 when
  // is_test; 0 when prob is 1, as nothing is kept).
  template <typename T>
  T Scale() const {
    if (is_test) return T(1);
    return prob >= 1 ? T(0) : static_cast<T>(1.0 / (1.0 - prob));
  }
};
// X of dropout with Out (X's dtype and shape) and Mask (bool) allocated.
struct DropoutArgs {
  const Tensor* x = nullptr;
  Tensor* out = nullptr;
  Tensor* mask = nullptr;
};
absl::StatusOr<DropoutArgs> GetDropoutArgs(KernelContext* ctx);

// Mask and Out@GRAD of dropout_grad, checked (Mask bool of Out@GRAD's
// shape), and X@GRAD allocated.
struct DropoutGradArgs {
  const Tensor* mask = nullptr;
  const Tensor* dout = nullptr;
  Tensor* dx = nullptr;
};
absl::StatusOr<DropoutGradArgs> GetDropoutGradArgs(KernelContext* ctx);

// The inputs of conv2d(_grad) and their geometry: Input and Filter float of
// the same dtype, shapes and attrs checked by Conv2DShape; for the gradient
// (`grad`), Output@GRAD of Input's dtype and the output's shape.
struct Conv {
  const Tensor* input = nullptr;
  const Tensor* filter = nullptr;
  const Tensor* dout = nullptr;  // gradient only
  Conv2DGeometry g;
};
absl::StatusOr<Conv> GetConv(const KernelContext& ctx, const Conv2DParams& params, bool grad);

// Sizes of conv2d's per-(sample, group) products through im2col columns.
struct ConvDims {
  int64_t groups, cg, mg;  // groups; channels and filters per group
  int64_t k, p;            // K = cg * kh * kw, P = oh * ow
  int64_t plane;           // h * w
  // 1x1 filter, stride 1, no padding: the columns are the input itself.
  bool direct;

  explicit ConvDims(const Conv2DGeometry& g);
};

// The inputs of pool2d(_grad) and their geometry; for the gradient, Out and
// Out@GRAD of X's dtype and the output's shape.
struct Pool {
  const Tensor* x = nullptr;
  const Tensor* out = nullptr;   // gradient only
  const Tensor* dout = nullptr;  // gradient only
  Pool2DGeometry g;
};
absl::StatusOr<Pool> GetPool(const KernelContext& ctx, const Pool2DParams& params, bool grad);

// layer_norm(_grad)'s attrs.
struct NormAttrs {
  int64_t begin_norm_axis = 1;
  double epsilon = 1e-5;

  absl::Status Read(const OpDesc& op);
};

// The inputs of layer_norm(_grad): X float, optional Scale (and Bias for
// the forward) [cols] of X's dtype; for the gradient, Mean and Variance
// [rows] and Y@GRAD of X's shape, all of X's dtype.
struct Norm {
  const Tensor* x = nullptr;
  const Tensor* scale = nullptr;  // null when absent
  const Tensor* bias = nullptr;   // forward only; null when absent
  const Tensor* mean = nullptr;   // gradient only
  const Tensor* var = nullptr;    // gradient only
  const Tensor* dy = nullptr;     // gradient only
  LayerNormDims d;
};
absl::StatusOr<Norm> GetNorm(const KernelContext& ctx, int64_t begin_norm_axis, bool grad);

// layer_norm's outputs Y (X's shape), Mean and Variance ([rows]), allocated.
struct NormOutputs {
  Tensor* y = nullptr;
  Tensor* mean = nullptr;
  Tensor* var = nullptr;
};
absl::StatusOr<NormOutputs> AllocateNormOutputs(KernelContext* ctx, const Norm& n);

// layer_norm_grad's X@GRAD, Scale@GRAD and Bias@GRAD ([cols]), each
// allocated when bound (else null).
struct NormGrads {
  Tensor* dx = nullptr;
  Tensor* dscale = nullptr;
  Tensor* dbias = nullptr;
};
absl::StatusOr<NormGrads> AllocateNormGrads(KernelContext* ctx, const Norm& n);

// self_attention(_grad)'s attrs.
struct AttentionAttrs {
  int64_t num_heads = 1;
  bool causal = true;
  double scale = 0;

  absl::Status Read(const OpDesc& op);
};

// The inputs of self_attention(_grad): QKV [batch, seq, 3 * width] float; for
// the gradient, Out and Out@GRAD [batch, seq, width] of QKV's dtype and Lse
// [batch, heads, seq] of ComputeDataType(QKV's dtype). `d.scale` is the
// scale the kernel applies (the attr, or 1 / sqrt(head_dim)).
struct Attention {
  const Tensor* qkv = nullptr;
  const Tensor* out = nullptr;
  const Tensor* lse = nullptr;
  const Tensor* dout = nullptr;
  AttentionDims d;
};
absl::StatusOr<Attention> GetAttention(const KernelContext& ctx, const AttentionAttrs& attrs,
                                       bool grad);

// self_attention's Out and Lse, allocated.
struct AttentionOutputs {
  Tensor* out = nullptr;
  Tensor* lse = nullptr;
};
absl::StatusOr<AttentionOutputs> AllocateAttentionOutputs(KernelContext* ctx, const Attention& a);

}  // namespace prologue
}  // namespace tandem

#endif  // TANDEM_OPS_NN_PROLOGUES_H_
