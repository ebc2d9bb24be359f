#include "backends/cuda/region_plan.h"

#include <vector>

#include "absl/strings/str_cat.h"

namespace tandem {
namespace cuda {

absl::StatusOr<RegionGeometry> PlanRegion(absl::string_view op, const Shape& full, const Box& box) {
  RegionGeometry g;
  g.count = box.shape.num_elements();
  if (g.count == 0) return g;
  // (size, stride) per dim, outermost first; size-1 dims only add to offset.
  std::vector<int64_t> sizes, strides;
  int64_t stride = 1;
  for (int d = full.rank() - 1; d >= 0; --d) {
    g.offset += box.offsets[d] * stride;
    if (box.shape.dim(d) != 1) {
      sizes.insert(sizes.begin(), box.shape.dim(d));
      strides.insert(strides.begin(), stride);
    }
    stride *= full.dim(d);
  }
  // Merge dim d into d + 1 when d's stride steps over exactly the inner
  // one's extent: together they are one run of equally spaced elements.
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
        absl::StrCat("op '", op, "' on gpu: the region ", box.shape.ToString(), " of ",
                     full.ToString(), " has ", merged_sizes.size(),
                     " separate dims after merging; at most ", kMaxRegionDims, " are supported"));
  }
  g.rank = static_cast<int>(merged_sizes.size());
  for (int d = 0; d < g.rank; ++d) {
    g.dims[d] = merged_sizes[d];
    g.strides[d] = merged_strides[d];
  }
  return g;
}

}  // namespace cuda
}  // namespace tandem
