// square_error_cost and mean kernels. See loss_launchers.h.
#include "backends/cuda/device_lines.h"
#include "backends/cuda/device_reduce.h"
#include "backends/cuda/loss_launchers.h"

namespace tandem {
namespace cuda {
namespace {

using device::Blocks;
using device::BlockSum;
using device::kThreads;

constexpr int kMaxParts = 1024;
// Elements per thread of the first mean pass before another block is used.
constexpr int64_t kMeanPerThread = 16;

template <typename T>
__global__ void SquareErrorCostKernel(const T* x, const T* y, T* out, int64_t n) {
  TANDEM_GRID_LOOP(i, n) {
    const T d = x[i] - y[i];
    out[i] = d * d;
  }
}

template <typename T>
__global__ void SquareErrorCostGradKernel(const T* x, const T* y, const T* dout, T* dx, T* dy,
                                          int64_t n) {
  TANDEM_GRID_LOOP(i, n) {
    const T g = T(2) * (x[i] - y[i]) * dout[i];
    if (dx != nullptr) dx[i] = g;
    if (dy != nullptr) dy[i] = -g;
  }
}

// The last-block pattern of CUDA's threadFenceReduction sample: each block
// publishes its partial sum and counts itself; the last one adds them all.
template <typename T>
__global__ void MeanKernel(const T* x, int64_t n, double* partials, unsigned int* blocks_done,
                           T* out) {
  __shared__ bool last;
  double acc = 0;
  TANDEM_GRID_LOOP(i, n) { acc += static_cast<double>(x[i]); }
  acc = BlockSum(acc);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = acc;
    __threadfence();  // the partial is visible before the count
    last = atomicAdd(blocks_done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  acc = 0;
  for (unsigned int b = threadIdx.x; b < gridDim.x; b += blockDim.x) {
    acc += __ldcg(partials + b);  // from L2: other blocks wrote them
  }
  acc = BlockSum(acc);
  if (threadIdx.x == 0) {
    out[0] = static_cast<T>(acc / static_cast<double>(n));
    *blocks_done = 0;
  }
}

template <typename T>
__global__ void MeanGradKernel(const T* dout, T* dx, int64_t n) {
  const T g = static_cast<T>(static_cast<double>(dout[0]) / static_cast<double>(n));
  TANDEM_GRID_LOOP(i, n) { dx[i] = g; }
}

// The fused l2_normalize -> square_error_cost -> mean, forward and
// backward: each line (of n elements `inner` apart) is reduced by a warp, a
// block or a thread (device_lines.h), its sums in double.

// sqrt(sum(x^2 over the line) + epsilon), over the group.
template <typename T, typename G>
__device__ double LineNorm(const T* x, int64_t start, int64_t n, int64_t inner, double epsilon,
                           const G& g) {
  double sum = 0;
  for (int64_t k = g.first; k < n; k += g.step) {
    const double v = static_cast<double>(x[start + k * inner]);
    sum += v * v;
  }
  return sqrt(g.Sum(sum) + epsilon);
}

// line_sums[line] = the line's sum of (x / norm - label)^2, each term rounded in T.
template <typename T>
struct L2NormSquareErrorLine {
  const T* x;
  const T* label;
  int64_t n, inner;
  double epsilon;
  double* line_sums;
  template <typename G>
  __device__ void operator()(int64_t line, const G& g) const {
    const int64_t start = device::LineStart(line, n, inner);
    const double norm = LineNorm(x, start, n, inner, epsilon, g);
    double sum = 0;
    for (int64_t k = g.first; k < n; k += g.step) {
      const int64_t at = start + k * inner;
      const T diff = static_cast<T>(static_cast<double>(x[at]) / norm) - label[at];
      sum += static_cast<double>(static_cast<T>(diff * diff));
    }
    sum = g.Sum(sum);
    if (g.first == 0) line_sums[line] = sum;
  }
};

// out[0] = the lines' sums' total / (lines * n): one block, in a fixed order.
template <typename T>
__global__ void SumLinesKernel(const double* line_sums, int64_t lines, int64_t n, T* out) {
  double total = 0;
  for (int64_t line = threadIdx.x; line < lines; line += blockDim.x) total += line_sums[line];
  total = BlockSum(total);
  if (threadIdx.x == 0) out[0] = static_cast<T>(total / static_cast<double>(lines * n));
}

// dx and dlabel of the line, from the mean's gradient dout[0].
template <typename T>
struct L2NormSquareErrorGradLine {
  const T* x;
  const T* label;
  int64_t lines, n, inner;
  double epsilon;
  const T* dout;
  T* dx;
  T* dlabel;
  template <typename G>
  __device__ void operator()(int64_t line, const G& g) const {
    const T dcost = static_cast<T>(static_cast<double>(dout[0]) / static_cast<double>(lines * n));
    const int64_t start = device::LineStart(line, n, inner);
    const double norm = LineNorm(x, start, n, inner, epsilon, g);
    double dot = 0;
    for (int64_t k = g.first; k < n; k += g.step) {
      const int64_t at = start + k * inner;
      const T y = static_cast<T>(static_cast<double>(x[at]) / norm);
      const T dy = static_cast<T>(T(2) * (y - label[at]) * dcost);
      dot += static_cast<double>(dy) * static_cast<double>(y);
    }
    dot = g.Sum(dot);
    for (int64_t k = g.first; k < n; k += g.step) {
      const int64_t at = start + k * inner;
      const T y = static_cast<T>(static_cast<double>(x[at]) / norm);
      const T dy = static_cast<T>(T(2) * (y - label[at]) * dcost);
      if (dx != nullptr) {
        dx[at] = static_cast<T>((static_cast<double>(dy) - static_cast<double>(y) * dot) / norm);
      }
      if (dlabel != nullptr) dlabel[at] = -dy;
    }
  }
};

}  // namespace

template <typename T>
cudaError_t LaunchL2NormalizeSquareErrorMean(const T* x, const T* label, int64_t outer, int64_t n,
                                             int64_t inner, double epsilon, double* line_sums,
                                             T* out, cudaStream_t stream) {
  const int64_t lines = outer * inner;
  if (lines == 0 || n == 0) return cudaSuccess;
  const cudaError_t e = device::LaunchLines(
      L2NormSquareErrorLine<T>{x, label, n, inner, epsilon, line_sums}, lines, n, inner, stream);
  if (e != cudaSuccess) return e;
  SumLinesKernel<T><<<1, kThreads, 0, stream>>>(line_sums, lines, n, out);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchL2NormalizeSquareErrorMeanGrad(const T* x, const T* label, int64_t outer,
                                                 int64_t n, int64_t inner, double epsilon,
                                                 const T* dout, T* dx, T* dlabel,
                                                 cudaStream_t stream) {
  const int64_t lines = outer * inner;
  if (lines == 0 || n == 0 || (dx == nullptr && dlabel == nullptr)) return cudaSuccess;
  return device::LaunchLines(
      L2NormSquareErrorGradLine<T>{x, label, lines, n, inner, epsilon, dout, dx, dlabel}, lines, n,
      inner, stream);
}

#define TANDEM_INSTANTIATE_FUSED(T)                                                      \
  template cudaError_t LaunchL2NormalizeSquareErrorMean<T>(                              \
      const T*, const T*, int64_t, int64_t, int64_t, double, double*, T*, cudaStream_t); \
  template cudaError_t LaunchL2NormalizeSquareErrorMeanGrad<T>(                          \
      const T*, const T*, int64_t, int64_t, int64_t, double, const T*, T*, T*, cudaStream_t);
TANDEM_INSTANTIATE_FUSED(float)
TANDEM_INSTANTIATE_FUSED(double)
#undef TANDEM_INSTANTIATE_FUSED

template <typename T>
cudaError_t LaunchSquareErrorCost(const T* x, const T* y, T* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  SquareErrorCostKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, y, out, n);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchSquareErrorCostGrad(const T* x, const T* y, const T* dout, T* dx, T* dy,
                                      int64_t n, cudaStream_t stream) {
  if (n == 0 || (dx == nullptr && dy == nullptr)) return cudaSuccess;
  SquareErrorCostGradKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, y, dout, dx, dy, n);
  return cudaGetLastError();
}

int MeanPartCount(int64_t n) {
  const int64_t per_block = kThreads * kMeanPerThread;
  const int64_t parts = (n + per_block - 1) / per_block;
  return static_cast<int>(parts < 1 ? 1 : parts > kMaxParts ? kMaxParts : parts);
}

template <typename T>
cudaError_t LaunchMean(const T* x, int64_t n, double* partials, int parts,
                       unsigned int* blocks_done, T* out, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  MeanKernel<T><<<parts, kThreads, 0, stream>>>(x, n, partials, blocks_done, out);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchMeanGrad(const T* dout, T* dx, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  MeanGradKernel<T><<<Blocks(n), kThreads, 0, stream>>>(dout, dx, n);
  return cudaGetLastError();
}

#define TANDEM_INSTANTIATE(T)                                                                      \
  template cudaError_t LaunchSquareErrorCost<T>(const T*, const T*, T*, int64_t, cudaStream_t);    \
  template cudaError_t LaunchSquareErrorCostGrad<T>(const T*, const T*, const T*, T*, T*, int64_t, \
                                                    cudaStream_t);                                 \
  template cudaError_t LaunchMean<T>(const T*, int64_t, double*, int, unsigned int*, T*,           \
                                     cudaStream_t);                                                \
  template cudaError_t LaunchMeanGrad<T>(const T*, T*, int64_t, cudaStream_t);
TANDEM_INSTANTIATE(float)
TANDEM_INSTANTIATE(double)
#undef TANDEM_INSTANTIATE

}  // namespace cuda
}  // namespace tandem
