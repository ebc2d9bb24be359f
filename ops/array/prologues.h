// Kernel prologues of the layout ops (transpose, concat, split and their
// gradients): the attributes, input checks and output shapes that the host
// kernels (layout_kernels.h) and the gpu kernels (backends/cuda) share, so
// every place validates in the same order with the same messages:
//
//   absl::Status Init(const OpDesc& op) override { return attrs_.Read(op, /*grad=*/false); }
//   absl::Status Compute(KernelContext* ctx) override {
//     ASSIGN_OR_RETURN(const prologue::SplitArgs a, prologue::GetSplitArgs(ctx, attrs_));
//     ...  // copy piece i of *a.x into *a.outs[i]
//   }
//
// Errors are InvalidArgument naming the op, the argument and the offending
// shape or attribute (ops/array/shape_fns.h). Nothing here reads tensor
// data, so every function works on any place. Stateless and thread-safe.
#ifndef TANDEM_OPS_ARRAY_PROLOGUES_H_
#define TANDEM_OPS_ARRAY_PROLOGUES_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/kernel/kernel_context.h"
#include "framework/op/op_desc.h"
#include "framework/tensor/tensor.h"
#include "ops/array/shape_fns.h"

namespace tandem {
namespace prologue {

// The input of transpose (X) or transpose_grad (Out@GRAD), the permutation
// applied to it (attr axis; its inverse for the gradient, after axis is
// validated against the input's rank) and the output (Out, X@GRAD)
// allocated.
struct TransposeArgs {
  const Tensor* x = nullptr;
  std::vector<int64_t> axis;
  Tensor* out = nullptr;
};
absl::StatusOr<TransposeArgs> GetTransposeArgs(KernelContext* ctx,
                                               const std::vector<int64_t>& axis_attr, bool grad);

// concat(_grad)'s attrs (grad_positions for the gradient only).
struct ConcatAttrs {
  int64_t axis = 0;
  std::vector<int64_t> grad_positions;

  absl::Status Read(const OpDesc& op, bool grad);
};

// The X list of concat (every X of X[0]'s dtype) and its geometry along
// axis, with Out allocated.
struct ConcatArgs {
  std::vector<const Tensor*> xs;
  AxisPieces p;
  Tensor* out = nullptr;
};
absl::StatusOr<ConcatArgs> GetConcatArgs(KernelContext* ctx, int64_t axis);

// concat_grad: the X list (read for its shapes), Out@GRAD (the concatenated
// shape, X's dtype) and X@GRAD[j] allocated for each X at grad_positions[j]
// (grads[i]: X[i]'s gradient, null where none is wanted).
struct ConcatGradArgs {
  std::vector<const Tensor*> xs;
  AxisPieces p;
  const Tensor* dout = nullptr;
  std::vector<Tensor*> grads;
};
absl::StatusOr<ConcatGradArgs> GetConcatGradArgs(KernelContext* ctx, const ConcatAttrs& attrs);

// split(_grad)'s attrs (grad_positions for the gradient only) and the
// pieces they cut X into.
struct SplitAttrs {
  int64_t axis = 0, num = 0;
  std::vector<int64_t> sections;
  std::vector<int64_t> grad_positions;

  absl::Status Read(const OpDesc& op, bool grad);
  absl::StatusOr<AxisPieces> PiecesOf(const KernelContext& ctx, const Tensor& x) const {
    return SplitGeometry(ctx.op().type, x.shape(), axis, num, sections);
  }
};

// X of split, its pieces, and one Out variable allocated per piece.
struct SplitArgs {
  const Tensor* x = nullptr;
  AxisPieces p;
  std::vector<Tensor*> outs;
};
absl::StatusOr<SplitArgs> GetSplitArgs(KernelContext* ctx, const SplitAttrs& attrs);

// split_grad: X (read for its shape), its pieces, Out@GRAD[j] checked
// against piece grad_positions[j] (grads[i]: piece i's gradient, null where
// none is given) and X@GRAD allocated.
struct SplitGradArgs {
  const Tensor* x = nullptr;
  AxisPieces p;
  std::vector<int64_t> positions;
  std::vector<const Tensor*> grads;
  Tensor* dx = nullptr;
};
absl::StatusOr<SplitGradArgs> GetSplitGradArgs(KernelContext* ctx, const SplitAttrs& attrs);

}  // namespace prologue
}  // namespace tandem

#endif  // TANDEM_OPS_ARRAY_PROLOGUES_H_
