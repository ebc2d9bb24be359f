// Device-side helpers for kernels that reduce along lines of a tensor
// (softmax, cross entropy, accuracy, layer_norm): a line of n elements,
// `inner` apart, is handled by a warp (short lines), a block (long lines) or
// one thread (lines strided by 32 or more, so that neighbouring threads read
// neighbouring memory). CUDA code: include it only from .cu files.
//
//   struct SumLine {
//     const float* x; double* out; int64_t n, inner;
//     template <typename G>
//     __device__ void operator()(int64_t line, const G& g) const {
//       const int64_t start = LineStart(line, n, inner);
//       double s = 0;
//       for (int64_t k = g.first; k < n; k += g.step) s += x[start + k * inner];
//       s = g.Sum(s);                            // every member calls it
//       if (g.first == 0) out[line] = s;
//     }
//   };
//   cudaError_t e = LaunchLines(SumLine{x, out, n, inner}, lines, n, inner, stream);
#ifndef TANDEM_BACKENDS_CUDA_DEVICE_LINES_H_
#define TANDEM_BACKENDS_CUDA_DEVICE_LINES_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/device_reduce.h"

namespace tandem {
namespace cuda {
namespace device {

// Lines at least this long get a block each.
constexpr int64_t kLongLine = 2048;

// The threads that reduce one line together: this thread handles elements
// first, first + step, ...; Sum and Max reduce over the group and return
// the result to every member. Every member must call them.
struct WarpGroup {
  int first, step;
  __device__ __forceinline__ double Sum(double v) const { return WarpSum(v); }
  __device__ __forceinline__ double Max(double v) const { return WarpMax(v); }
};
struct BlockGroup {
  int first, step;
  __device__ __forceinline__ double Sum(double v) const { return BlockSum(v); }
  __device__ __forceinline__ double Max(double v) const { return BlockMax(v); }
};
struct ThreadGroup {
  int first, step;
  __device__ __forceinline__ double Sum(double v) const { return v; }
  __device__ __forceinline__ double Max(double v) const { return v; }
};

// Line `line` of an [outer, n, inner] view starts here; its elements are
// `inner` apart.
__device__ __forceinline__ int64_t LineStart(int64_t line, int64_t n, int64_t inner) {
  const int64_t o = line / inner;
  return o * n * inner + (line - o * inner);
}

template <typename Op>
__global__ void WarpLinesKernel(Op op, int64_t lines) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t{gridDim.x} * blockDim.x) >> 5;
  for (int64_t r = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) >> 5; r < lines;
       r += warps) {  // warp-uniform: every lane of a warp takes the same lines
    op(r, WarpGroup{lane, 32});
  }
}

template <typename Op>
__global__ void BlockLinesKernel(Op op, int64_t lines) {
  for (int64_t r = blockIdx.x; r < lines; r += gridDim.x) {
    op(r, BlockGroup{static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)});
  }
}

template <typename Op>
__global__ void ThreadLinesKernel(Op op, int64_t lines) {
  TANDEM_GRID_LOOP(r, lines) { op(r, ThreadGroup{0, 1}); }
}

// Runs op(line, group) for every line of n elements `inner` apart.
template <typename Op>
cudaError_t LaunchLines(const Op& op, int64_t lines, int64_t n, int64_t inner,
                        cudaStream_t stream) {
  if (lines == 0 || n == 0) return cudaSuccess;
  if (n >= kLongLine) {
    BlockLinesKernel<<<static_cast<int>(lines < kMaxBlocks ? lines : kMaxBlocks), kThreads, 0,
                       stream>>>(op, lines);
  } else if (inner >= 32) {
    ThreadLinesKernel<<<Blocks(lines), kThreads, 0, stream>>>(op, lines);
  } else {
    constexpr int kWarpsPerBlock = kThreads / 32;
    const int64_t blocks = (lines + kWarpsPerBlock - 1) / kWarpsPerBlock;
    WarpLinesKernel<<<static_cast<int>(blocks < kMaxBlocks ? blocks : kMaxBlocks), kThreads, 0,
                      stream>>>(op, lines);
  }
  return cudaGetLastError();
}

}  // namespace device
}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_DEVICE_LINES_H_
