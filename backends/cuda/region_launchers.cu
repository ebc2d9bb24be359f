// Region gather/scatter kernels. See region_launchers.h.
#include "backends/cuda/device_reduce.h"
#include "backends/cuda/region_launchers.h"

namespace tandem {
namespace cuda {
namespace {

using device::Blocks;
using device::kThreads;

__device__ __forceinline__ int64_t FullIndex(const RegionGeometry& g, int64_t i) {
  int64_t at = g.offset;
  for (int d = g.rank - 1; d >= 0; --d) {
    const int64_t c = i % g.dims[d];
    i /= g.dims[d];
    at += c * g.strides[d];
  }
  return at;
}

template <typename T>
__global__ void GatherKernel(const T* full, T* region, RegionGeometry g) {
  TANDEM_GRID_LOOP(i, g.count) { region[i] = full[FullIndex(g, i)]; }
}

template <typename T>
__global__ void ScatterKernel(const T* region, T* full, RegionGeometry g) {
  TANDEM_GRID_LOOP(i, g.count) { full[FullIndex(g, i)] = region[i]; }
}

}  // namespace

template <typename T>
cudaError_t LaunchGatherRegion(const T* full, T* region, const RegionGeometry& g,
                               cudaStream_t stream) {
  if (g.count == 0) return cudaSuccess;
  GatherKernel<T><<<Blocks(g.count), kThreads, 0, stream>>>(full, region, g);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchScatterRegion(const T* region, T* full, const RegionGeometry& g,
                                cudaStream_t stream) {
  if (g.count == 0) return cudaSuccess;
  ScatterKernel<T><<<Blocks(g.count), kThreads, 0, stream>>>(region, full, g);
  return cudaGetLastError();
}

#define TANDEM_INSTANTIATE(T)                                                                    \
  template cudaError_t LaunchGatherRegion<T>(const T*, T*, const RegionGeometry&, cudaStream_t); \
  template cudaError_t LaunchScatterRegion<T>(const T*, T*, const RegionGeometry&, cudaStream_t);
TANDEM_INSTANTIATE(float)
TANDEM_INSTANTIATE(double)
TANDEM_INSTANTIATE(int32_t)
TANDEM_INSTANTIATE(int64_t)
TANDEM_INSTANTIATE(bfloat16)
TANDEM_INSTANTIATE(float16)
#undef TANDEM_INSTANTIATE

}  // namespace cuda
}  // namespace tandem
