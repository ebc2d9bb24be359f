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

// The per-element arithmetic NormLine and the register kernels share, so
// that both give the same bits.
template <typename T>
__device__ __forceinline__ double NormOut(double centered, double inv, const T* scale,
                                          const T* bias, int64_t j) {
  double out = centered * inv;
  if (scale != nullptr) out *= static_cast<double>(scale[j]);
  if (bias != nullptr) out += static_cast<double>(bias[j]);
  return out;
}

template <typename T>
__device__ __forceinline__ double ScaledGrad(T dy, const T* scale, int64_t j) {
  return static_cast<double>(dy) * (scale == nullptr ? 1.0 : static_cast<double>(scale[j]));
}

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
      yr[j] = static_cast<T>(NormOut(static_cast<double>(xr[j]) - mu, inv, scale, bias, j));
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
      const double gj = ScaledGrad(dyr[j], scale, j);
      sum_g += gj;
      sum_gx += gj * (static_cast<double>(xr[j]) - mu) * inv;
    }
    const double mean_g = g.Sum(sum_g) / static_cast<double>(cols);
    const double mean_gx = g.Sum(sum_gx) / static_cast<double>(cols);
    for (int64_t j = g.first; j < cols; j += g.step) {
      const double xhat = (static_cast<double>(xr[j]) - mu) * inv;
      dx[row * cols + j] =
          static_cast<T>(inv * (ScaledGrad(dyr[j], scale, j) - mean_g - xhat * mean_gx));
    }
  }
};

// Lines of kMinRegisterCols..kMaxRegisterCols columns (GPT's 768): a warp
// per line that loads its line into registers once, every load in flight
// at once, where NormLine and NormGradLine read it in two or three passes
// of dependent loads. Element j is lane j % 32's value j / 32, as with the
// warp groups of LaunchLines: the same sums in the same order, the same bits.
constexpr int64_t kMinRegisterCols = 65;
constexpr int64_t kMaxRegisterCols = 1024;

template <typename T, int kPerLane>
__global__ void NormRowsInRegistersKernel(NormLine<T> p, int64_t rows) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t{gridDim.x} * blockDim.x) >> 5;
  const int64_t cols = p.cols;
  for (int64_t row = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) >> 5; row < rows;
       row += warps) {  // warp-uniform
    const T* xr = p.x + row * cols;
    T v[kPerLane];  // in T: half the registers of double, so more warps a multiprocessor
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int64_t j = lane + 32 * i;
      v[i] = j < cols ? xr[j] : T(0);
    }
    double sum = 0;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      if (lane + 32 * i < cols) sum += static_cast<double>(v[i]);
    }
    const double mu = device::WarpSum(sum) / static_cast<double>(cols);
    double sq = 0;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      if (lane + 32 * i < cols) {
        const double c = static_cast<double>(v[i]) - mu;
        sq += c * c;
      }
    }
    const double var = device::WarpSum(sq) / static_cast<double>(cols);
    const double inv = 1 / sqrt(var + p.epsilon);
    T* yr = p.y + row * cols;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int64_t j = lane + 32 * i;
      if (j < cols) {
        yr[j] = static_cast<T>(NormOut(static_cast<double>(v[i]) - mu, inv, p.scale, p.bias, j));
      }
    }
    if (lane == 0) {
      p.mean[row] = static_cast<T>(mu);
      p.var[row] = static_cast<T>(var);
    }
  }
}

template <typename T, int kPerLane>
__global__ void NormGradRowsInRegistersKernel(NormGradLine<T> p, int64_t rows) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t{gridDim.x} * blockDim.x) >> 5;
  const int64_t cols = p.cols;
  for (int64_t row = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) >> 5; row < rows;
       row += warps) {  // warp-uniform
    const T* xr = p.x + row * cols;
    const T* dyr = p.dy + row * cols;
    const double mu = static_cast<double>(p.mean[row]);
    const double inv = 1 / sqrt(static_cast<double>(p.var[row]) + p.epsilon);
    T xv[kPerLane], dyv[kPerLane];  // in T: fewer registers, more warps a multiprocessor
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int64_t j = lane + 32 * i;
      xv[i] = j < cols ? xr[j] : T(0);
      dyv[i] = j < cols ? dyr[j] : T(0);
    }
    double sum_g = 0, sum_gx = 0;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int64_t j = lane + 32 * i;
      if (j < cols) {
        const double gj = ScaledGrad(dyv[i], p.scale, j);
        sum_g += gj;
        sum_gx += gj * (static_cast<double>(xv[i]) - mu) * inv;
      }
    }
    const double mean_g = device::WarpSum(sum_g) / static_cast<double>(cols);
    const double mean_gx = device::WarpSum(sum_gx) / static_cast<double>(cols);
    T* dxr = p.dx + row * cols;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int64_t j = lane + 32 * i;
      if (j < cols) {
        const double xhat = (static_cast<double>(xv[i]) - mu) * inv;
        dxr[j] = static_cast<T>(inv * (ScaledGrad(dyv[i], p.scale, j) - mean_g - xhat * mean_gx));
      }
    }
  }
}

// Launches Kernel<T, kPerLane> (a warp per line, 8 lines a block) with the
// smallest kPerLane of 4, 8, 16, 24, 32 that holds `cols`.
template <template <typename, int> class Launch, typename T, typename Line>
cudaError_t LaunchInRegisters(const Line& line, int64_t rows, int64_t cols, cudaStream_t stream) {
  constexpr int kWarpsPerBlock = kThreads / 32;
  const int64_t wanted = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  const int blocks = static_cast<int>(wanted < device::kMaxBlocks ? wanted : device::kMaxBlocks);
  const int64_t per_lane = (cols + 31) / 32;
  if (per_lane <= 4) return Launch<T, 4>::Run(line, rows, blocks, stream);
  if (per_lane <= 8) return Launch<T, 8>::Run(line, rows, blocks, stream);
  if (per_lane <= 16) return Launch<T, 16>::Run(line, rows, blocks, stream);
  if (per_lane <= 24) return Launch<T, 24>::Run(line, rows, blocks, stream);
  return Launch<T, 32>::Run(line, rows, blocks, stream);
}

template <typename T, int kPerLane>
struct NormInRegisters {
  static cudaError_t Run(const NormLine<T>& line, int64_t rows, int blocks, cudaStream_t stream) {
    NormRowsInRegistersKernel<T, kPerLane><<<blocks, kThreads, 0, stream>>>(line, rows);
    return cudaGetLastError();
  }
};

template <typename T, int kPerLane>
struct NormGradInRegisters {
  static cudaError_t Run(const NormGradLine<T>& line, int64_t rows, int blocks,
                         cudaStream_t stream) {
    NormGradRowsInRegistersKernel<T, kPerLane><<<blocks, kThreads, 0, stream>>>(line, rows);
    return cudaGetLastError();
  }
};

bool FitsInRegisters(int64_t rows, int64_t cols) {
  return rows > 0 && cols >= kMinRegisterCols && cols <= kMaxRegisterCols;
}

// partials[c * cols + j] and partials[(chunks + c) * cols + j]: the sums of
// dy * xhat and dy over chunk c's rows of column j, in row order. A block
// takes a chunk and kThreads of its columns, a thread per column; the
// chunk's rows' mean and 1 / sqrt(var + epsilon) are computed once per row
// into shared memory (kStatRows at a time), not once per element.
constexpr int kStatRows = 128;

template <typename T>
__global__ void ParamPartialsKernel(const T* x, const T* mean, const T* var, const T* dy,
                                    int64_t rows, int64_t cols, double epsilon, int64_t chunks,
                                    int64_t chunk_rows, double* partials) {
  __shared__ double row_mean[kStatRows], row_inv[kStatRows];
  const int64_t col_blocks = (cols + blockDim.x - 1) / blockDim.x;
  for (int64_t blk = blockIdx.x; blk < chunks * col_blocks; blk += gridDim.x) {  // block-uniform
    const int64_t c = blk / col_blocks;
    const int64_t j = (blk - c * col_blocks) * blockDim.x + threadIdx.x;
    const int64_t end = (c + 1) * chunk_rows < rows ? (c + 1) * chunk_rows : rows;
    double s = 0, b = 0;
    for (int64_t tile = c * chunk_rows; tile < end; tile += kStatRows) {
      const int64_t tile_end = tile + kStatRows < end ? tile + kStatRows : end;
      __syncthreads();  // the previous tile's statistics have been read
      for (int64_t r = tile + threadIdx.x; r < tile_end; r += blockDim.x) {
        row_mean[r - tile] = static_cast<double>(mean[r]);
        row_inv[r - tile] = 1 / sqrt(static_cast<double>(var[r]) + epsilon);
      }
      __syncthreads();
      if (j < cols) {
#pragma unroll 4
        for (int64_t r = tile; r < tile_end; ++r) {  // unrolled: loads in flight together
          const double d = static_cast<double>(dy[r * cols + j]);
          s +=
              d * ((static_cast<double>(x[r * cols + j]) - row_mean[r - tile]) * row_inv[r - tile]);
          b += d;
        }
      }
    }
    if (j < cols) {
      partials[c * cols + j] = s;
      partials[chunks * cols + c * cols + j] = b;
    }
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
  const NormLine<T> line{x, scale, bias, cols, epsilon, y, mean, var};
  if (FitsInRegisters(rows, cols)) {
    return LaunchInRegisters<NormInRegisters, T>(line, rows, cols, stream);
  }
  return LaunchLines(line, rows, cols, 1, stream);
}

template <typename T>
cudaError_t LaunchLayerNormGradX(const T* x, const T* scale, const T* mean, const T* var,
                                 const T* dy, int64_t rows, int64_t cols, double epsilon, T* dx,
                                 cudaStream_t stream) {
  const NormGradLine<T> line{x, scale, mean, var, dy, cols, epsilon, dx};
  if (FitsInRegisters(rows, cols)) {
    return LaunchInRegisters<NormGradInRegisters, T>(line, rows, cols, stream);
  }
  return LaunchLines(line, rows, cols, 1, stream);
}

template <typename T>
cudaError_t LaunchLayerNormParamGrads(const T* x, const T* mean, const T* var, const T* dy,
                                      int64_t rows, int64_t cols, double epsilon, double* partials,
                                      int64_t chunks, T* dscale, T* dbias, cudaStream_t stream) {
  if (cols == 0) return cudaSuccess;
  const int64_t col_blocks = (cols + kThreads - 1) / kThreads;
  const int64_t blocks = chunks * col_blocks;
  ParamPartialsKernel<T>
      <<<static_cast<int>(blocks < device::kMaxBlocks ? blocks : device::kMaxBlocks), kThreads, 0,
         stream>>>(x, mean, var, dy, rows, cols, epsilon, chunks, ChunkRows(rows), partials);
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
