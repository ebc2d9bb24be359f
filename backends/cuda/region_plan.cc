#include "backends/cuda/region_plan.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace tandem {
namespace cuda {

namespace {

// The geometry of a region with per-dim `sizes` and `strides` (outermost
// first, size-1 dims already dropped), merging dim d into d + 1 when d's
// stride steps over exactly the inner one's extent: together they are one
// run of equally spaced elements.
absl::StatusOr<RegionGeometry> Merge(absl::string_view op, const std::vector<int64_t>& sizes,
                                     const std::vector<int64_t>& strides, int64_t offset,
                                     int64_t count, const std::string& what) {
  RegionGeometry g;
  g.offset = offset;
  g.count = count;
  std::vector<int64_t> merged_sizes, merged_strides;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (!merged_sizes.empty() && merged_strides.back() == sizes[d] * strides[d]) {
      merged_sizes.back() *= sizes[d];
      merged_strides.back() = strides[d];
    } else {
      merged_sizes.push_back(sizes[d]);
      merged_strides.push_back(strides[d]);
    }
  }
  if (merged_sizes.size() > static_cast<size_t>(kMaxRegionDims)) {
    return absl::UnimplementedError(
        absl::StrCat("op '", op, "' on gpu: ", what, " has ", merged_sizes.size(),
                     " separate dims after merging; at most ", kMaxRegionDims, " are supported"));
  }
  g.rank = static_cast<int>(merged_sizes.size());
  for (int d = 0; d < g.rank; ++d) {
    g.dims[d] = merged_sizes[d];
    g.strides[d] = merged_strides[d];
  }
  return g;
}

}  // namespace

absl::StatusOr<RegionGeometry> PlanRegion(absl::string_view op, const Shape& full, const Box& box) {
  const int64_t count = box.shape.num_elements();
  if (count == 0) return RegionGeometry();
  // (size, stride) per dim, outermost first; size-1 dims only add to offset.
  std::vector<int64_t> sizes, strides;
  int64_t stride = 1, offset = 0;
  for (int d = full.rank() - 1; d >= 0; --d) {
    offset += box.offsets[d] * stride;
    if (box.shape.dim(d) != 1) {
      sizes.insert(sizes.begin(), box.shape.dim(d));
      strides.insert(strides.begin(), stride);
    }
    stride *= full.dim(d);
  }
  return Merge(op, sizes, strides, offset, count,
               absl::StrCat("the region ", box.shape.ToString(), " of ", full.ToString()));
}

absl::StatusOr<RegionGeometry> PlanTranspose(absl::string_view op, const Shape& x,
                                             absl::Span<const int64_t> axis) {
  const int64_t count = x.num_elements();
  if (count == 0) return RegionGeometry();
  std::vector<int64_t> x_strides(x.rank(), 1);
  for (int d = x.rank() - 2; d >= 0; --d) x_strides[d] = x_strides[d + 1] * x.dim(d + 1);
  std::vector<int64_t> sizes, strides;
  for (const int64_t a : axis) {
    if (x.dim(a) == 1) continue;
    sizes.push_back(x.dim(a));
    strides.push_back(x_strides[a]);
  }
  return Merge(op, sizes, strides, 0, count, absl::StrCat("transposing ", x.ToString()));
}

}  // namespace cuda
}  // namespace tandem
