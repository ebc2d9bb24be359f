// Host-side planning of the region copies (slice, crop_tensor, concat,
// split, transpose and their gradients): turns a Box of a tensor
// (ops/array/shape_fns.h), or a permutation of its dims, into the
// RegionGeometry the gather/scatter kernels take, dropping dims of size 1
// and merging dims that are contiguous in the full tensor.
//
//   ASSIGN_OR_RETURN(Box box, SliceBox(op, x.shape(), axes, starts, ends));
//   ASSIGN_OR_RETURN(RegionGeometry g, PlanRegion(op, x.shape(), box));
//   ASSIGN_OR_RETURN(RegionGeometry t, PlanTranspose(op, x.shape(), axis));
//
// Pure functions of shapes (no device work); thread-safe.
#ifndef TANDEM_BACKENDS_CUDA_REGION_PLAN_H_
#define TANDEM_BACKENDS_CUDA_REGION_PLAN_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "backends/cuda/region_launchers.h"
#include "framework/types/shape.h"
#include "ops/array/shape_fns.h"

namespace tandem {
namespace cuda {

// `box` lies inside `full` (validated by SliceBox / CropBox). Unimplemented
// when more than kMaxRegionDims dims remain after merging.
absl::StatusOr<RegionGeometry> PlanRegion(absl::string_view op, const Shape& full, const Box& box);

// The gather that transposes a contiguous tensor of shape `x` by `axis` (a
// permutation validated by TransposeShape): region element i, row-major
// over the transposed shape, is x's element at coordinates permuted back.
// Unimplemented when more than kMaxRegionDims dims remain after merging.
absl::StatusOr<RegionGeometry> PlanTranspose(absl::string_view op, const Shape& x,
                                             absl::Span<const int64_t> axis);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_REGION_PLAN_H_
