// Host-side planning for the broadcasting kernels: merges dims that broadcast
// alike and picks the cheapest kernel for a binary element-wise op
// (elementwise_add, _sub, _mul, _div), describes the sum that reduces an
// output gradient to an input's shape, and the copy that broadcasts a
// tensor back.
//
//   ASSIGN_OR_RETURN(Shape y_aligned, AlignForBroadcast(op, x, y, axis));
//   ASSIGN_OR_RETURN(Shape out, BroadcastShapes(op, x, y, axis));
//   ASSIGN_OR_RETURN(AddPlan plan, PlanAdd(op, x, y_aligned, out));
//   CUDA_RETURN_IF_ERROR(LaunchBinary<float>(BinaryOp::kSub, x, y, o, plan, stream));
//   ASSIGN_OR_RETURN(ReduceGeometry g, PlanReduceTo(op, out, x));
//
// The planners are pure functions of shapes (no device work); thread-safe.
#ifndef TANDEM_BACKENDS_CUDA_BROADCAST_PLAN_H_
#define TANDEM_BACKENDS_CUDA_BROADCAST_PLAN_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "backends/cuda/broadcast_launchers.h"
#include "framework/types/shape.h"

namespace tandem {
namespace cuda {

// How to compute a binary element-wise op (any of BinaryOp).
struct AddPlan {
  enum class Kind {
    kSame,     // LaunchBinarySame over n elements
    kRow,      // LaunchBinaryRow(full, row, n, cols)
    kStrided,  // LaunchBinaryStrided(geometry)
  };
  Kind kind = Kind::kSame;
  // kRow: X is the repeated row (and Y the full operand).
  bool swap = false;
  int64_t n = 0;     // output elements
  int64_t cols = 1;  // kRow: row length
  AddGeometry geometry;
};

// `x`, `y_aligned` (Y after AlignForBroadcast) and `out` (BroadcastShapes of
// them) are valid shapes. Unimplemented if more than kMaxBroadcastDims
// dims remain after merging.
absl::StatusOr<AddPlan> PlanAdd(absl::string_view op, const Shape& x, const Shape& y_aligned,
                                const Shape& out);

// The sum of a contiguous tensor of shape `out` down to `target`, whose
// dims (right-aligned with `out`; missing leading dims are 1) equal out's or
// are 1 where out was broadcast. reduce_rank 0 means no dim is summed: the
// data is copied as is. Unimplemented beyond kMaxBroadcastDims merged dims.
absl::StatusOr<ReduceGeometry> PlanReduceTo(absl::string_view op, const Shape& out,
                                            const Shape& target);

// The geometry of LaunchBroadcastDivide that broadcasts a contiguous tensor
// of shape `in` (right-aligned with `out`, its dims equal to out's or 1) to
// `out`. Unimplemented beyond kMaxBroadcastDims merged dims.
absl::StatusOr<AddGeometry> PlanBroadcastTo(absl::string_view op, const Shape& in,
                                            const Shape& out);

// Enqueues out = x <op> y on `stream` as `plan` (PlanAdd of x, Y aligned
// and out) says; returns the launch status.
template <typename T>
cudaError_t LaunchBinary(BinaryOp op, const T* x, const T* y, T* out, const AddPlan& plan,
                         cudaStream_t stream) {
  switch (plan.kind) {
    case AddPlan::Kind::kSame:
      return LaunchBinarySame<T>(op, x, y, out, plan.n, stream);
    case AddPlan::Kind::kRow:
      return plan.swap
                 ? LaunchBinaryRow<T>(op, y, x, /*row_is_x=*/true, out, plan.n, plan.cols, stream)
                 : LaunchBinaryRow<T>(op, x, y, /*row_is_x=*/false, out, plan.n, plan.cols, stream);
    case AddPlan::Kind::kStrided:
      return LaunchBinaryStrided<T>(op, x, y, out, plan.geometry, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_BROADCAST_PLAN_H_
