// layer_norm kernels. See layer_norm_launchers.h.
#include "backends/cuda/device_lines.h"
#include "backends/cuda/device_reduce.h"
#include "backends/cuda/layer_norm_launchers.h"

namespace tandem {
namespace cuda {
namespace {

using device::Blocks;
using device::kThreads;
using device::LaunchLines;

constexpr int64_t kMaxChunks = 4096;
constexpr int64_t kRowsPerChunk = 32;

template <typename T>
struct NormLine {
  const T* x;
  const T* scale;
  const T* bias;
  int64_t cols;
  double epsilon;
  T* y;
  T* mean;
  T* var;

  template <typename G>
  __device__ __forceinline__ void operator()(int64_t row, const G& g) const {
    const T* xr = x + row * cols;
    double sum = 0;
    for (int64_t j = g.first; j < cols; j += g.step) sum += static_cast<double>(xr[j]);
    const double mu = g.Sum(sum) / static_cast<double>(cols);
    double sq = 0;
    for (int64_t j = g.first; j < cols; j += g.step) {
      const double c = static_cast<double>(xr[j]) - mu;
      sq += c * c;
    }
    const double v = g.Sum(sq) / static_cast<double>(cols);
    const double inv = 1 / sqrt(v + epsilon);
    T* yr = y + row * cols;
    for (int64_t j = g.first; j < cols; j += g.step) {
      double out = (static_cast<double>(xr[j]) - mu) * inv;
      if (scale != nullptr) out *= static_cast<double>(scale[j]);
      if (bias != nullptr) out += static_cast<double>(bias[j]);
      yr[j] = static_cast<T>(out);
    }
    if (g.first == 0) {
      mean[row] = static_cast<T>(mu);
      var[row] = static_cast<T>(v);
    }
  }
};

template <typename T>
struct NormGradLine {
  const T* x;
  const T* scale;
  const T* mean;
  const T* var;
  const T* dy;
  int64_t cols;
  double epsilon;
  T* dx;

  template <typename G>
  __device__ __forceinline__ void operator()(int64_t row, const G& g) const {
    const T* xr = x + row * cols;
    const T* dyr = dy + row * cols;
    const double mu = static_cast<double>(mean[row]);
    const double inv = 1 / sqrt(static_cast<double>(var[row]) + epsilon);
    double sum_g = 0, sum_gx = 0;
    for (int64_t j = g.first; j < cols; j += g.step) {
      const double gj =
          static_cast<double>(dyr[j]) * (scale == nullptr ? 1.0 : static_cast<double>(scale[j]));
      sum_g += gj;
      sum_gx += gj * (static_cast<double>(xr[j]) - mu) * inv;
    }
    const double mean_g = g.Sum(sum_g) / static_cast<double>(cols);
    const double mean_gx = g.Sum(sum_gx) / static_cast<double>(cols);
    for (int64_t j = g.first; j < cols; j += g.step) {
      const double gj =
          static_cast<double>(dyr[j]) * (scale == nullptr ? 1.0 : static_cast<double>(scale[j]));
      const double xhat = (static_cast<double>(xr[j]) - mu) * inv;
      dx[row * cols + j] = static_cast<T>(inv * (gj - mean_g - xhat * mean_gx));
    }
  }
};

// partials[c * cols + j] and partials[(chunks + c) * cols + j]: the sums of
// dy * xhat and dy over chunk c's rows of column j.
template <typename T>
__global__ void ParamPartialsKernel(const T* x, const T* mean, const T* var, const T* dy,
                                    int64_t rows, int64_t cols, double epsilon, int64_t chunks,
                                    int64_t chunk_rows, double* partials) {
  TANDEM_GRID_LOOP(i, chunks * cols) {
    const int64_t c = i / cols, j = i - c * cols;
    const int64_t end = (c + 1) * chunk_rows < rows ? (c + 1) * chunk_rows : rows;
    double s = 0, b = 0;
    for (int64_t r = c * chunk_rows; r < end; ++r) {
      const double inv = 1 / sqrt(static_cast<double>(var[r]) + epsilon);
      const double d = static_cast<double>(dy[r * cols + j]);
      s += d * ((static_cast<double>(x[r * cols + j]) - static_cast<double>(mean[r])) * inv);
      b += d;
    }
    partials[i] = s;
    partials[chunks * cols + i] = b;
  }
}

// A warp per column j: lane l adds chunks l, l + 32, ... in order, then the
// warp adds the lanes' sums (a fixed tree): the same sums on every run, and
// every chunk read by a thread of its own instead of one thread per column
// walking all of them (3 blocks of threads for 768 columns, each waiting on
// one load per chunk).
constexpr int kFinalWarpsPerBlock = kThreads / 32;

template <typename T>
__global__ void ParamFinalKernel(const double* partials, int64_t chunks, int64_t cols, T* dscale,
                                 T* dbias) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t{gridDim.x} * kFinalWarpsPerBlock;
  for (int64_t j = int64_t{blockIdx.x} * kFinalWarpsPerBlock + threadIdx.x / 32; j < cols;
       j += warps) {  // the whole warp takes the same columns
    double s = 0, b = 0;
    for (int64_t c = lane; c < chunks; c += 32) {
      s += partials[c * cols + j];
      b += partials[(chunks + c) * cols + j];
    }
    s = device::WarpSum(s);
    b = device::WarpSum(b);
    if (lane == 0) {
      if (dscale != nullptr) dscale[j] = static_cast<T>(s);
      if (dbias != nullptr) dbias[j] = static_cast<T>(b);
    }
  }
}

int64_t ChunkRows(int64_t rows) {
  const int64_t by_cap = (rows + kMaxChunks - 1) / kMaxChunks;
  return by_cap > kRowsPerChunk ? by_cap : kRowsPerChunk;
}

}  // namespace

int64_t LayerNormRowChunks(int64_t rows) {
  const int64_t chunks = (rows + ChunkRows(rows) - 1) / ChunkRows(rows);
  return chunks < 1 ? 1 : chunks;
}

template <typename T>
cudaError_t LaunchLayerNorm(const T* x, const T* scale, const T* bias, int64_t rows, int64_t cols,
                            double epsilon, T* y, T* mean, T* var, cudaStream_t stream) {
  return LaunchLines(NormLine<T>{x, scale, bias, cols, epsilon, y, mean, var}, rows, cols, 1,
                     stream);
}

template <typename T>
cudaError_t LaunchLayerNormGradX(const T* x, const T* scale, const T* mean, const T* var,
                                 const T* dy, int64_t rows, int64_t cols, double epsilon, T* dx,
                                 cudaStream_t stream) {
  return LaunchLines(NormGradLine<T>{x, scale, mean, var, dy, cols, epsilon, dx}, rows, cols, 1,
                     stream);
}

template <typename T>
cudaError_t LaunchLayerNormParamGrads(const T* x, const T* mean, const T* var, const T* dy,
                                      int64_t rows, int64_t cols, double epsilon, double* partials,
                                      int64_t chunks, T* dscale, T* dbias, cudaStream_t stream) {
  if (cols == 0) return cudaSuccess;
  ParamPartialsKernel<T><<<Blocks(chunks * cols), kThreads, 0, stream>>>(
      x, mean, var, dy, rows, cols, epsilon, chunks, ChunkRows(rows), partials);
  ParamFinalKernel<T>
      <<<Blocks(cols * 32), kThreads, 0, stream>>>(partials, chunks, cols, dscale, dbias);
  return cudaGetLastError();
}

#define TANDEM_INSTANTIATE(T)                                                                     \
  template cudaError_t LaunchLayerNorm<T>(const T*, const T*, const T*, int64_t, int64_t, double, \
                                          T*, T*, T*, cudaStream_t);                              \
  template cudaError_t LaunchLayerNormGradX<T>(const T*, const T*, const T*, const T*, const T*,  \
                                               int64_t, int64_t, double, T*, cudaStream_t);       \
  template cudaError_t LaunchLayerNormParamGrads<T>(const T*, const T*, const T*, const T*,       \
                                                    int64_t, int64_t, double, double*, int64_t,   \
                                                    T*, T*, cudaStream_t);
TANDEM_INSTANTIATE(float)
TANDEM_INSTANTIATE(double)
#undef TANDEM_INSTANTIATE

}  // namespace cuda
}  // namespace tandem
