// lookup_table and l2_normalize kernels. See nn_launchers.h.
#include "backends/cuda/device_check.h"
#include "backends/cuda/device_reduce.h"
#include "backends/cuda/nn_launchers.h"

namespace tandem {
namespace cuda {
namespace {

using device::Blocks;
using device::BlockSum;
using device::kMaxBlocks;
using device::kThreads;
using device::NoteBadInput;
using device::PublishBadInput;
using device::WarpSum;

template <typename T>
__global__ void LookupKernel(const int64_t* ids, const T* w, int64_t rows, int64_t dim,
                             int64_t padding_row, T* out, int64_t total, CheckSlot check) {
  TANDEM_GRID_LOOP(i, total) {
    const int64_t p = i / dim, j = i - p * dim;
    const int64_t id = ids[p];
    T v = 0;
    if (id < 0 || id >= rows) {
      if (j == 0) NoteBadInput(check, p);
    } else if (id != padding_row) {
      v = w[id * dim + j];
    }
    out[i] = v;
  }
  PublishBadInput(check, ids);
}

__global__ void CheckIdsKernel(const int64_t* ids, int64_t n, int64_t rows, CheckSlot check) {
  TANDEM_GRID_LOOP(p, n) {
    const int64_t id = ids[p];
    if (id < 0 || id >= rows) NoteBadInput(check, p);
  }
  PublishBadInput(check, ids);
}

// Positions a thread of LookupGradDenseKernel loads before it adds them.
constexpr int kLookupGradAhead = 16;

// One thread per (segment, column): adjacent threads read adjacent columns.
// The positions are added in order (the host's bits), but loaded
// kLookupGradAhead at a time: a frequent id's thread (a space in a byte
// corpus: thousands of positions) waits for one batch of loads, not one
// load per position.
template <typename T>
__global__ void LookupGradDenseKernel(const int64_t* order, const int64_t* starts,
                                      const int64_t* rows, const T* dout, int64_t dim, T* dw,
                                      int64_t total) {
  TANDEM_GRID_LOOP(i, total) {
    const int64_t s = i / dim, j = i - s * dim;
    const int64_t end = starts[s + 1];
    int64_t k = starts[s];
    T sum = 0;
    for (; k + kLookupGradAhead <= end; k += kLookupGradAhead) {
      T v[kLookupGradAhead];
#pragma unroll
      for (int u = 0; u < kLookupGradAhead; ++u) v[u] = dout[order[k + u] * dim + j];
#pragma unroll
      for (int u = 0; u < kLookupGradAhead; ++u) sum += v[u];
    }
    for (; k < end; ++k) sum += dout[order[k] * dim + j];
    dw[rows[s] * dim + j] = sum;
  }
}

template <typename T>
__global__ void LookupGradSparseValueKernel(const int64_t* ids, const T* dout, int64_t dim,
                                            int64_t padding_row, T* value, int64_t total) {
  TANDEM_GRID_LOOP(i, total) {
    const int64_t p = i / dim;
    value[i] = ids[p] == padding_row ? T(0) : dout[i];
  }
}

// l2_normalize rows. Row r = (o, i) of an [outer, n, inner] view starts at
// o * n * inner + i and steps by inner. Three layouts of the same math:
//   warp per row     (short rows; the default),
//   block per row    (long rows: n >= kLongRow),
//   thread per row   (inner >= 32: adjacent threads read adjacent memory).
// kGrad computes dx from x, out and dout; otherwise out from x.
constexpr int64_t kLongRow = 2048;

struct RowArgs {
  int64_t rows, n, inner;
  double epsilon;
};

__device__ __forceinline__ int64_t RowBase(const RowArgs& a, int64_t r) {
  const int64_t o = r / a.inner, i = r - o * a.inner;
  return o * a.n * a.inner + i;
}

// Accumulates this thread's share (k = first, first + step, ...) of the
// row's sums: x^2, and dout * out for the gradient.
template <typename T, bool kGrad>
__device__ __forceinline__ void RowSums(const T* x, const T* out, const T* dout, int64_t base,
                                        const RowArgs& a, int64_t first, int64_t step, double* sq,
                                        double* dot) {
  for (int64_t k = first; k < a.n; k += step) {
    const int64_t at = base + k * a.inner;
    const double v = static_cast<double>(x[at]);
    *sq += v * v;
    if (kGrad) *dot += static_cast<double>(dout[at]) * static_cast<double>(out[at]);
  }
}

template <typename T, bool kGrad>
__device__ __forceinline__ void RowWrite(const T* x, const T* out, const T* dout, T* result,
                                         int64_t base, const RowArgs& a, int64_t first,
                                         int64_t step, double sq, double dot) {
  const double norm = sqrt(sq + a.epsilon);
  for (int64_t k = first; k < a.n; k += step) {
    const int64_t at = base + k * a.inner;
    if (kGrad) {
      const double d = static_cast<double>(dout[at]) - static_cast<double>(out[at]) * dot;
      result[at] = static_cast<T>(d / norm);
    } else {
      result[at] = static_cast<T>(static_cast<double>(x[at]) / norm);
    }
  }
}

template <typename T, bool kGrad>
__global__ void L2WarpKernel(const T* x, const T* out, const T* dout, T* result, RowArgs a) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t{gridDim.x} * blockDim.x) >> 5;
  for (int64_t r = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) >> 5; r < a.rows;
       r += warps) {  // warp-uniform: every lane of a warp takes the same rows
    const int64_t base = RowBase(a, r);
    double sq = 0, dot = 0;
    RowSums<T, kGrad>(x, out, dout, base, a, lane, 32, &sq, &dot);
    sq = WarpSum(sq);
    if (kGrad) dot = WarpSum(dot);
    RowWrite<T, kGrad>(x, out, dout, result, base, a, lane, 32, sq, dot);
  }
}

template <typename T, bool kGrad>
__global__ void L2BlockKernel(const T* x, const T* out, const T* dout, T* result, RowArgs a) {
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const int64_t base = RowBase(a, r);
    double sq = 0, dot = 0;
    RowSums<T, kGrad>(x, out, dout, base, a, threadIdx.x, blockDim.x, &sq, &dot);
    sq = BlockSum(sq);
    if (kGrad) dot = BlockSum(dot);
    RowWrite<T, kGrad>(x, out, dout, result, base, a, threadIdx.x, blockDim.x, sq, dot);
  }
}

template <typename T, bool kGrad>
__global__ void L2ThreadKernel(const T* x, const T* out, const T* dout, T* result, RowArgs a) {
  TANDEM_GRID_LOOP(r, a.rows) {
    const int64_t base = RowBase(a, r);
    double sq = 0, dot = 0;
    RowSums<T, kGrad>(x, out, dout, base, a, 0, 1, &sq, &dot);
    RowWrite<T, kGrad>(x, out, dout, result, base, a, 0, 1, sq, dot);
  }
}

template <typename T, bool kGrad>
cudaError_t LaunchL2(const T* x, const T* out, const T* dout, T* result, const AxisGeometry& g,
                     double epsilon, cudaStream_t stream) {
  const RowArgs a{g.outer * g.inner, g.n, g.inner, epsilon};
  if (a.rows == 0 || a.n == 0) return cudaSuccess;
  if (a.n >= kLongRow) {
    const int blocks = static_cast<int>(a.rows < kMaxBlocks ? a.rows : kMaxBlocks);
    L2BlockKernel<T, kGrad><<<blocks, kThreads, 0, stream>>>(x, out, dout, result, a);
  } else if (a.inner >= 32) {
    L2ThreadKernel<T, kGrad><<<Blocks(a.rows), kThreads, 0, stream>>>(x, out, dout, result, a);
  } else {
    constexpr int kWarpsPerBlock = kThreads / 32;
    const int64_t blocks = (a.rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
    L2WarpKernel<T, kGrad>
        <<<static_cast<int>(blocks < kMaxBlocks ? blocks : kMaxBlocks), kThreads, 0, stream>>>(
            x, out, dout, result, a);
  }
  return cudaGetLastError();
}

}  // namespace

template <typename T>
cudaError_t LaunchLookup(const int64_t* ids, int64_t n, const T* w, int64_t rows, int64_t dim,
                         int64_t padding_row, T* out, const CheckSlot& check, cudaStream_t stream) {
  const int64_t total = n * dim;
  if (total == 0) return cudaSuccess;
  LookupKernel<T>
      <<<Blocks(total), kThreads, 0, stream>>>(ids, w, rows, dim, padding_row, out, total, check);
  return cudaGetLastError();
}

cudaError_t LaunchCheckIds(const int64_t* ids, int64_t n, int64_t rows, const CheckSlot& check,
                           cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  CheckIdsKernel<<<Blocks(n), kThreads, 0, stream>>>(ids, n, rows, check);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchLookupGradDense(const int64_t* order, const int64_t* starts, const int64_t* rows,
                                  int64_t segments, const T* dout, int64_t dim, T* dw,
                                  cudaStream_t stream) {
  const int64_t total = segments * dim;
  if (total == 0) return cudaSuccess;
  LookupGradDenseKernel<T>
      <<<Blocks(total), kThreads, 0, stream>>>(order, starts, rows, dout, dim, dw, total);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchLookupGradSparseValue(const int64_t* ids, int64_t n, const T* dout, int64_t dim,
                                        int64_t padding_row, T* value, cudaStream_t stream) {
  const int64_t total = n * dim;
  if (total == 0) return cudaSuccess;
  LookupGradSparseValueKernel<T>
      <<<Blocks(total), kThreads, 0, stream>>>(ids, dout, dim, padding_row, value, total);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchL2Normalize(const T* x, T* out, const AxisGeometry& g, double epsilon,
                              cudaStream_t stream) {
  return LaunchL2<T, false>(x, nullptr, nullptr, out, g, epsilon, stream);
}

template <typename T>
cudaError_t LaunchL2NormalizeGrad(const T* x, const T* out, const T* dout, T* dx,
                                  const AxisGeometry& g, double epsilon, cudaStream_t stream) {
  return LaunchL2<T, true>(x, out, dout, dx, g, epsilon, stream);
}

#define TANDEM_INSTANTIATE(T)                                                                     \
  template cudaError_t LaunchLookup<T>(const int64_t*, int64_t, const T*, int64_t, int64_t,       \
                                       int64_t, T*, const CheckSlot&, cudaStream_t);              \
  template cudaError_t LaunchLookupGradDense<T>(const int64_t*, const int64_t*, const int64_t*,   \
                                                int64_t, const T*, int64_t, T*, cudaStream_t);    \
  template cudaError_t LaunchLookupGradSparseValue<T>(const int64_t*, int64_t, const T*, int64_t, \
                                                      int64_t, T*, cudaStream_t);                 \
  template cudaError_t LaunchL2Normalize<T>(const T*, T*, const AxisGeometry&, double,            \
                                            cudaStream_t);                                        \
  template cudaError_t LaunchL2NormalizeGrad<T>(const T*, const T*, const T*, T*,                 \
                                                const AxisGeometry&, double, cudaStream_t);
TANDEM_INSTANTIATE(float)
TANDEM_INSTANTIATE(double)
#undef TANDEM_INSTANTIATE

}  // namespace cuda
}  // namespace tandem
