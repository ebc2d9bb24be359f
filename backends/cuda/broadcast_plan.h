// Host-side planning for the broadcasting kernels: merges dims that broadcast
// alike and picks the cheapest kernel for elementwise_add, and describes the
// sum that reduces an output gradient to an input's shape.
//
//   ASSIGN_OR_RETURN(Shape y_aligned, AlignForBroadcast(op, x, y, axis));
//   ASSIGN_OR_RETURN(Shape out, BroadcastShapes(op, x, y, axis));
//   ASSIGN_OR_RETURN(AddPlan plan, PlanAdd(op, x, y_aligned, out));
//   ASSIGN_OR_RETURN(ReduceGeometry g, PlanReduceTo(op, out, x));
//
// Pure functions of shapes (no device work); thread-safe.
#ifndef TANDEM_BACKENDS_CUDA_BROADCAST_PLAN_H_
#define TANDEM_BACKENDS_CUDA_BROADCAST_PLAN_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "backends/cuda/broadcast_launchers.h"
#include "framework/types/shape.h"

namespace tandem {
namespace cuda {

struct AddPlan {
  enum class Kind {
    kSame,     // LaunchAddSame over n elements
    kRow,      // LaunchAddRow(full, row, n, cols)
    kStrided,  // LaunchAddStrided(geometry)
  };
  Kind kind = Kind::kSame;
  // kRow: X is the repeated row, so the kernel computes Y + X (same result).
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

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_BROADCAST_PLAN_H_
