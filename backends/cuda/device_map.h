// Element-wise maps over flat arrays for the CUDA backend's .cu files: each
// thread handles kMapPack consecutive elements, read and written as aligned
// vectors (one 16-byte load moves eight 16-bit values where a scalar loop
// makes eight 2-byte loads), then the n % kMapPack last elements one a
// thread. Every element is f of the same inputs as in a scalar loop, so
// the results are the same bits. CUDA code: include it only from .cu files.
//
//   struct Twice { __device__ float operator()(float x) const { return 2 * x; } };
//   cudaError_t e = device::LaunchMap(Twice(), x, out, n, stream);   // async
//
// Launches enqueue one kernel on `stream` and return its launch status at
// once; n == 0 launches nothing. Pointers are device memory; `out` may be
// an input itself (each element is read, then written, by one thread).
#ifndef TANDEM_BACKENDS_CUDA_DEVICE_MAP_H_
#define TANDEM_BACKENDS_CUDA_DEVICE_MAP_H_

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "backends/cuda/device_reduce.h"

namespace tandem {
namespace cuda {
namespace device {

constexpr int kMapPack = 8;

// kMapPack consecutive values of T as one aligned value.
template <typename T>
struct alignas(sizeof(T) * kMapPack) MapPack {
  T v[kMapPack];
};

template <typename T>
__device__ __forceinline__ const MapPack<T>& PackAt(const T* p, int64_t pack) {
  return reinterpret_cast<const MapPack<T>*>(p)[pack];
}

// out[i] = f(x[i]), packed.
template <typename F, typename X, typename Out>
__global__ void PackedMapKernel(F f, const X* x, Out* out, int64_t n) {
  const int64_t packs = n / kMapPack;
  TANDEM_GRID_LOOP(p, packs) {
    const MapPack<X> a = PackAt(x, p);
    MapPack<Out> o;
#pragma unroll
    for (int k = 0; k < kMapPack; ++k) o.v[k] = f(a.v[k]);
    reinterpret_cast<MapPack<Out>*>(out)[p] = o;
  }
  const int64_t rest = packs * kMapPack + blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (rest < n) out[rest] = f(x[rest]);
}

// out[i] = f(x[i], y[i]), packed.
template <typename F, typename X, typename Y, typename Out>
__global__ void PackedMap2Kernel(F f, const X* x, const Y* y, Out* out, int64_t n) {
  const int64_t packs = n / kMapPack;
  TANDEM_GRID_LOOP(p, packs) {
    const MapPack<X> a = PackAt(x, p);
    const MapPack<Y> b = PackAt(y, p);
    MapPack<Out> o;
#pragma unroll
    for (int k = 0; k < kMapPack; ++k) o.v[k] = f(a.v[k], b.v[k]);
    reinterpret_cast<MapPack<Out>*>(out)[p] = o;
  }
  const int64_t rest = packs * kMapPack + blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (rest < n) out[rest] = f(x[rest], y[rest]);
}

template <typename F, typename X, typename Out>
__global__ void ScalarMapKernel(F f, const X* x, Out* out, int64_t n) {
  TANDEM_GRID_LOOP(i, n) { out[i] = f(x[i]); }
}

template <typename F, typename X, typename Y, typename Out>
__global__ void ScalarMap2Kernel(F f, const X* x, const Y* y, Out* out, int64_t n) {
  TANDEM_GRID_LOOP(i, n) { out[i] = f(x[i], y[i]); }
}

// Threads a packed kernel over n elements needs: one per pack, and at
// least one per element of the rest.
inline int64_t PackedThreads(int64_t n) { return std::max<int64_t>(n / kMapPack, n % kMapPack); }

// out[i] = f(x[i]) for i < n: packed where every pointer is aligned to its
// pack (allocations are), else one element a thread.
template <typename F, typename X, typename Out>
cudaError_t LaunchMap(F f, const X* x, Out* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (AlignedTo(x, sizeof(MapPack<X>)) && AlignedTo(out, sizeof(MapPack<Out>))) {
    PackedMapKernel<<<Blocks(PackedThreads(n)), kThreads, 0, stream>>>(f, x, out, n);
  } else {
    ScalarMapKernel<<<Blocks(n), kThreads, 0, stream>>>(f, x, out, n);
  }
  return cudaGetLastError();
}

// out[i] = f(x[i], y[i]) for i < n, as LaunchMap.
template <typename F, typename X, typename Y, typename Out>
cudaError_t LaunchMap2(F f, const X* x, const Y* y, Out* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (AlignedTo(x, sizeof(MapPack<X>)) && AlignedTo(y, sizeof(MapPack<Y>)) &&
      AlignedTo(out, sizeof(MapPack<Out>))) {
    PackedMap2Kernel<<<Blocks(PackedThreads(n)), kThreads, 0, stream>>>(f, x, y, out, n);
  } else {
    ScalarMap2Kernel<<<Blocks(n), kThreads, 0, stream>>>(f, x, y, out, n);
  }
  return cudaGetLastError();
}

}  // namespace device
}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_DEVICE_MAP_H_
