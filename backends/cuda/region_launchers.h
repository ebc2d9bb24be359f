// Launchers of the CUDA backend's region copies (slice, crop_tensor and their
// gradients), implemented in region_launchers.cu, and the geometry they take
// (computed by PlanRegion, region_plan.h). Plain C++.
//
//   ASSIGN_OR_RETURN(RegionGeometry g, PlanRegion(op, x.shape(), box));
//   CUDA_RETURN_IF_ERROR(LaunchGatherRegion<float>(x, out, g, stream));   // slice
//   CUDA_RETURN_IF_ERROR(LaunchScatterRegion<float>(dout, dx, g, stream)); // its grad
//
// Each call enqueues one kernel on `stream` and returns at once (async) with
// the launch status; nothing is launched for an empty region. Pointers are
// device memory of the stream's GPU. Instantiated for float, double, int32_t,
// int64_t, bfloat16 and float16. Thread-safe.
#ifndef TANDEM_BACKENDS_CUDA_REGION_LAUNCHERS_H_
#define TANDEM_BACKENDS_CUDA_REGION_LAUNCHERS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "framework/types/float16.h"

namespace tandem {
namespace cuda {

// Most dims a region copy handles after merging (dims of size 1 dropped,
// dims contiguous in the full tensor merged).
constexpr int kMaxRegionDims = 8;

// A box-shaped region of a contiguous "full" tensor: region element i (row
// major over dims) is full element offset + sum_d c_d * strides[d], c its
// coordinates. rank 0 is a single element (count 1) or, with count 0, none.
struct RegionGeometry {
  int rank = 0;
  int64_t dims[kMaxRegionDims] = {};
  int64_t strides[kMaxRegionDims] = {};
  int64_t offset = 0;
  int64_t count = 0;  // product of dims: the region's element count
};

// region[i] = full[element i of the region] (region contiguous).
template <typename T>
cudaError_t LaunchGatherRegion(const T* full, T* region, const RegionGeometry& g,
                               cudaStream_t stream);

// full[element i of the region] = region[i]; the rest of `full` is left as
// it is.
template <typename T>
cudaError_t LaunchScatterRegion(const T* region, T* full, const RegionGeometry& g,
                                cudaStream_t stream);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_REGION_LAUNCHERS_H_
