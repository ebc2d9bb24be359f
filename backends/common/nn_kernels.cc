#include "backends/common/nn_kernels.h"

#include "absl/strings/str_cat.h"

namespace tandem {
namespace nn_kernels_internal {

absl::StatusOr<Lookup> GetLookup(const KernelContext& ctx, int64_t padding_idx) {
  Lookup l;
  ASSIGN_OR_RETURN(l.ids, ctx.InputTensor("Ids"));
  ASSIGN_OR_RETURN(l.w, ctx.InputTensor("W"));
  const std::string& op = ctx.op().type;
  ASSIGN_OR_RETURN(
      l.out, LookupTableShape(op, {l.ids->dtype(), l.ids->shape()}, {l.w->dtype(), l.w->shape()}));
  l.rows = l.w->shape().dim(0);
  l.dim = l.w->shape().dim(1);
  ASSIGN_OR_RETURN(l.padding_row, PaddingRow(op, padding_idx, l.rows));
  const int64_t* ids = l.ids->data<int64_t>();
  const int64_t bad = FirstOutOfRange(ids, l.ids->NumElements(), l.rows);
  if (bad >= 0) {
    return ctx.InvalidArgument(absl::StrCat("id ", ids[bad], " at position ", bad,
                                            " is out of range [0, ", l.rows, ") of table '",
                                            ctx.InputName("W"), "'"));
  }
  return l;
}

absl::StatusOr<FlatMatmulDims> GetFcDims(const KernelContext& ctx, const Tensor& input,
                                         const Tensor& w, const Tensor* bias,
                                         int64_t in_num_col_dims) {
  if (bias == nullptr) {
    return FcShape(ctx.op().type, {input.dtype(), input.shape()}, in_num_col_dims,
                   {w.dtype(), w.shape()}, nullptr);
  }
  const TensorMeta bias_meta{bias->dtype(), bias->shape()};
  return FcShape(ctx.op().type, {input.dtype(), input.shape()}, in_num_col_dims,
                 {w.dtype(), w.shape()}, &bias_meta);
}

}  // namespace nn_kernels_internal
}  // namespace tandem
