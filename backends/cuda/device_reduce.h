// Device-side helpers shared by the CUDA backend's .cu files: grid-stride
// loops, launch sizes, warp and block sums and maxima. CUDA code: include it
// only from .cu files (compiled by nvcc through cuda_library).
//
//   __global__ void K(const float* x, double* out, int64_t n) {
//     double acc = 0;
//     TANDEM_GRID_LOOP(i, n) { acc += x[i]; }
//     acc = BlockSum(acc);          // every thread of the block calls it
//     if (threadIdx.x == 0) out[blockIdx.x] = acc;
//   }
#ifndef TANDEM_BACKENDS_CUDA_DEVICE_REDUCE_H_
#define TANDEM_BACKENDS_CUDA_DEVICE_REDUCE_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace tandem {
namespace cuda {
namespace device {

constexpr int kThreads = 256;  // threads per block of the element-wise kernels
constexpr int64_t kMaxBlocks = 65536;

// Whether `p` is a multiple of `bytes` (a vectorised kernel's loads and
// stores of that size are aligned). Host and device.
__host__ __device__ inline bool AlignedTo(const void* p, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// Blocks for one thread per element (capped; kernels loop over the rest).
inline int Blocks(int64_t n, int threads = kThreads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<int>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// for (i = this thread's first element; i < n; i += all threads of the grid)
#define TANDEM_GRID_LOOP(i, n)                                              \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += int64_t{blockDim.x} * gridDim.x)

// Combines two values of a reduction (sum or max); Identity() is its
// neutral value.
struct SumOp {
  __device__ __forceinline__ static double Identity() { return 0.0; }
  __device__ __forceinline__ double operator()(double a, double b) const { return a + b; }
};
struct MaxOp {
  __device__ __forceinline__ static double Identity() {
    return __longlong_as_double(static_cast<long long>(0xfff0000000000000ull));  // -inf
  }
  __device__ __forceinline__ double operator()(double a, double b) const { return fmax(a, b); }
};

// `v` reduced over the 32 lanes of the warp, returned to every lane. All
// lanes must call it.
template <typename Op>
__device__ __forceinline__ double WarpReduce(double v, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// `v` reduced over the block (blockDim.x a multiple of 32, at most 1024),
// returned to every thread. Every thread of the block must call it; it may
// be called again right away (it synchronises before returning).
template <typename Op>
__device__ __forceinline__ double BlockReduce(double v, Op op) {
  __shared__ double warp_results[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = WarpReduce(v, op);
  if (lane == 0) warp_results[warp] = v;
  __syncthreads();
  const int warps = blockDim.x >> 5;
  v = lane < warps ? warp_results[lane] : Op::Identity();
  v = WarpReduce(v, op);  // every warp reduces the warp results: no second broadcast
  __syncthreads();        // warp_results is read before a next call overwrites it
  return v;
}

__device__ __forceinline__ double WarpSum(double v) { return WarpReduce(v, SumOp()); }
__device__ __forceinline__ double BlockSum(double v) { return BlockReduce(v, SumOp()); }
__device__ __forceinline__ double WarpMax(double v) { return WarpReduce(v, MaxOp()); }
__device__ __forceinline__ double BlockMax(double v) { return BlockReduce(v, MaxOp()); }

}  // namespace device
}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_DEVICE_REDUCE_H_
