// Broadcasting add and sum-reduction kernels. See broadcast_launchers.h.
#include "backends/cuda/broadcast_launchers.h"

namespace tandem {
namespace cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;
// Reductions at least this long get a block per output element.
constexpr int64_t kBlockReduceMin = 256;

int Blocks(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

#define TANDEM_GRID_LOOP(i, n)                                              \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += int64_t{blockDim.x} * gridDim.x)

template <typename T>
__global__ void AddSameKernel(const T* x, const T* y, T* out, int64_t n) {
  TANDEM_GRID_LOOP(i, n) { out[i] = x[i] + y[i]; }
}

template <typename T>
__global__ void AddRowKernel(const T* x, const T* y, T* out, int64_t n, int64_t cols) {
  TANDEM_GRID_LOOP(i, n) { out[i] = x[i] + y[i % cols]; }
}

template <typename T>
__global__ void AddStridedKernel(const T* x, const T* y, T* out, AddGeometry g, int64_t n) {
  TANDEM_GRID_LOOP(i, n) {
    int64_t rest = i, xo = 0, yo = 0;
    for (int d = g.rank - 1; d >= 0; --d) {
      const int64_t c = rest % g.dims[d];
      rest /= g.dims[d];
      xo += c * g.x_strides[d];
      yo += c * g.y_strides[d];
    }
    out[i] = x[xo] + y[yo];
  }
}

template <typename T>
struct Accumulator {
  using type = T;
};
template <>
struct Accumulator<float> {
  using type = double;
};
template <>
struct Accumulator<int32_t> {
  using type = int64_t;
};

__device__ int64_t KeepBase(const ReduceGeometry& g, int64_t j) {
  int64_t base = 0;
  for (int d = g.keep_rank - 1; d >= 0; --d) {
    base += (j % g.keep_dims[d]) * g.keep_strides[d];
    j /= g.keep_dims[d];
  }
  return base;
}

__device__ int64_t ReduceOffset(const ReduceGeometry& g, int64_t r) {
  int64_t offset = 0;
  for (int d = g.reduce_rank - 1; d >= 0; --d) {
    offset += (r % g.reduce_dims[d]) * g.reduce_strides[d];
    r /= g.reduce_dims[d];
  }
  return offset;
}

// One thread per output element: short reductions.
template <typename T>
__global__ void ReduceThreadKernel(const T* in, T* out, ReduceGeometry g) {
  using Acc = typename Accumulator<T>::type;
  TANDEM_GRID_LOOP(j, g.out_count) {
    const T* base = in + KeepBase(g, j);
    Acc acc = 0;
    for (int64_t r = 0; r < g.reduce_count; ++r) acc += base[ReduceOffset(g, r)];
    out[j] = static_cast<T>(acc);
  }
}

// One block per output element: long reductions, a tree sum in shared memory.
template <typename T>
__global__ void ReduceBlockKernel(const T* in, T* out, ReduceGeometry g) {
  using Acc = typename Accumulator<T>::type;
  __shared__ Acc partial[kThreads];
  for (int64_t j = blockIdx.x; j < g.out_count; j += gridDim.x) {
    const T* base = in + KeepBase(g, j);
    Acc acc = 0;
    for (int64_t r = threadIdx.x; r < g.reduce_count; r += blockDim.x) {
      acc += base[ReduceOffset(g, r)];
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int width = kThreads / 2; width > 0; width /= 2) {
      if (threadIdx.x < width) partial[threadIdx.x] += partial[threadIdx.x + width];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[j] = static_cast<T>(partial[0]);
    __syncthreads();  // partial[0] is read before the next element reuses it
  }
}

#undef TANDEM_GRID_LOOP

}  // namespace

template <typename T>
cudaError_t LaunchAddSame(const T* x, const T* y, T* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  AddSameKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, y, out, n);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchAddRow(const T* x, const T* y, T* out, int64_t n, int64_t cols,
                         cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  AddRowKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, y, out, n, cols);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchAddStrided(const T* x, const T* y, T* out, const AddGeometry& g,
                             cudaStream_t stream) {
  int64_t n = 1;
  for (int d = 0; d < g.rank; ++d) n *= g.dims[d];
  if (n == 0) return cudaSuccess;
  AddStridedKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, y, out, g, n);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchReduceSum(const T* in, T* out, const ReduceGeometry& g, cudaStream_t stream) {
  if (g.out_count == 0) return cudaSuccess;
  if (g.reduce_count >= kBlockReduceMin) {
    const int blocks = static_cast<int>(g.out_count < kMaxBlocks ? g.out_count : kMaxBlocks);
    ReduceBlockKernel<T><<<blocks, kThreads, 0, stream>>>(in, out, g);
  } else {
    ReduceThreadKernel<T><<<Blocks(g.out_count), kThreads, 0, stream>>>(in, out, g);
  }
  return cudaGetLastError();
}

#define TANDEM_INSTANTIATE(T)                                                                   \
  template cudaError_t LaunchAddSame<T>(const T*, const T*, T*, int64_t, cudaStream_t);         \
  template cudaError_t LaunchAddRow<T>(const T*, const T*, T*, int64_t, int64_t, cudaStream_t); \
  template cudaError_t LaunchAddStrided<T>(const T*, const T*, T*, const AddGeometry&,          \
                                           cudaStream_t);                                       \
  template cudaError_t LaunchReduceSum<T>(const T*, T*, const ReduceGeometry&, cudaStream_t);
TANDEM_INSTANTIATE(float)
TANDEM_INSTANTIATE(double)
TANDEM_INSTANTIATE(int32_t)
TANDEM_INSTANTIATE(int64_t)
#undef TANDEM_INSTANTIATE

}  // namespace cuda
}  // namespace tandem
