// Broadcasting binary, broadcast-copy and sum-reduction kernels. See
// broadcast_launchers.h.
#include <type_traits>

#include "backends/cuda/broadcast_launchers.h"
#include "backends/cuda/device_float16.h"
#include "backends/cuda/device_map.h"

namespace tandem {
namespace cuda {
namespace {

using device::Blocks;
using device::kMaxBlocks;
using device::kThreads;
// Reductions at least this long get a block per output element.
constexpr int64_t kBlockReduceMin = 256;

// op(a, b) in T's compute type (float for the 16-bit types, rounded once).
template <typename T, typename Op>
__device__ __forceinline__ T Apply(Op op, T a, T b) {
  return device::Narrow<T>(op(device::Widen(a), device::Widen(b)));
}

// Apply as a functor of the two elements (for device::LaunchMap2).
template <typename T, typename Op>
struct Applied {
  Op op;
  __device__ __forceinline__ T operator()(T a, T b) const { return Apply(op, a, b); }
};

// Index: uint32_t when n fits (a 64-bit i % cols is a long instruction
// sequence per element of, e.g., fc's bias add; a 32-bit one is short),
// else int64_t.
template <typename T, typename Index, typename Op>
__global__ void RowKernel(Op op, const T* full, const T* row, bool row_is_x, T* out, Index n,
                          Index cols) {
  for (Index i = blockIdx.x * Index{blockDim.x} + threadIdx.x; i < n;
       i += Index{blockDim.x} * gridDim.x) {
    const T r = row[i % cols];
    out[i] = row_is_x ? Apply(op, r, full[i]) : Apply(op, full[i], r);
  }
}

template <typename T, typename Op>
__global__ void StridedKernel(Op op, const T* x, const T* y, T* out, AddGeometry g, int64_t n) {
  TANDEM_GRID_LOOP(i, n) {
    int64_t rest = i, xo = 0, yo = 0;
    for (int d = g.rank - 1; d >= 0; --d) {
      const int64_t c = rest % g.dims[d];
      rest /= g.dims[d];
      xo += c * g.x_strides[d];
      yo += c * g.y_strides[d];
    }
    out[i] = Apply(op, x[xo], y[yo]);
  }
}

template <typename T>
__global__ void BroadcastDivideKernel(const T* in, T* out, AddGeometry g, int64_t n, T divisor) {
  TANDEM_GRID_LOOP(i, n) {
    int64_t rest = i, at = 0;
    for (int d = g.rank - 1; d >= 0; --d) {
      at += (rest % g.dims[d]) * g.x_strides[d];
      rest /= g.dims[d];
    }
    out[i] = in[at] / divisor;
  }
}

// Calls launch(Binary<op>{}) with `op` as a template argument.
template <typename Launch>
void WithOp(BinaryOp op, Launch&& launch) {
  switch (op) {
    case BinaryOp::kAdd:
      return launch(Binary<BinaryOp::kAdd>());
    case BinaryOp::kSub:
      return launch(Binary<BinaryOp::kSub>());
    case BinaryOp::kMul:
      return launch(Binary<BinaryOp::kMul>());
    case BinaryOp::kDiv:
      return launch(Binary<BinaryOp::kDiv>());
  }
}

int64_t Count(const AddGeometry& g) {
  int64_t n = 1;
  for (int d = 0; d < g.rank; ++d) n *= g.dims[d];
  return n;
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
    out[j] = static_cast<T>(acc) / static_cast<T>(g.divisor);
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
    if (threadIdx.x == 0) out[j] = static_cast<T>(partial[0]) / static_cast<T>(g.divisor);
    __syncthreads();  // partial[0] is read before the next element reuses it
  }
}

// Column sums of a contiguous [rows, cols] matrix (a bias gradient: the
// leading dims summed, the trailing ones kept), divided by `divisor`. A
// block takes kColumnTile adjacent columns with kColumnThreads /
// kColumnTile row lanes, so a warp reads whole 32-byte sectors and a block
// keeps many loads in flight; the lanes' sums are added in shared memory
// in a fixed tree order (deterministic).
constexpr int kColumnTile = 8;
constexpr int kColumnThreads = 1024;

template <typename T>
__global__ void __launch_bounds__(kColumnThreads)
    ColumnSumKernel(const T* in, T* out, int64_t rows, int64_t cols, int64_t divisor) {
  using Acc = typename Accumulator<T>::type;
  constexpr int kLanes = kColumnThreads / kColumnTile;
  __shared__ Acc partial[kLanes][kColumnTile];
  const int c = threadIdx.x % kColumnTile, lane = threadIdx.x / kColumnTile;
  for (int64_t first = blockIdx.x * int64_t{kColumnTile}; first < cols;
       first += int64_t{kColumnTile} * gridDim.x) {
    const int64_t col = first + c;
    Acc acc = 0;
    if (col < cols) {
      const T* p = in + lane * cols + col;
      const int64_t step = kLanes * cols;
#pragma unroll 4
      for (int64_t r = lane; r < rows; r += kLanes, p += step) acc += *p;
    }
    partial[lane][c] = acc;
    __syncthreads();
    for (int width = kLanes / 2; width > 0; width /= 2) {
      if (lane < width) partial[lane][c] += partial[lane + width][c];
      __syncthreads();
    }
    if (lane == 0 && col < cols) out[col] = static_cast<T>(partial[0][c]) / static_cast<T>(divisor);
    __syncthreads();  // partial[0] is read before the next tile reuses it
  }
}

// Whether `g` sums the rows of a [reduce_count, out_count] matrix.
bool IsColumnSum(const ReduceGeometry& g) {
  return g.keep_rank == 1 && g.reduce_rank == 1 && g.keep_strides[0] == 1 &&
         g.reduce_strides[0] == g.keep_dims[0];
}

}  // namespace

template <typename T>
cudaError_t LaunchBinarySame(BinaryOp op, const T* x, const T* y, T* out, int64_t n,
                             cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  cudaError_t e = cudaSuccess;
  WithOp(op, [&](auto apply) {
    e = device::LaunchMap2(Applied<T, decltype(apply)>{apply}, x, y, out, n, stream);
  });
  return e;
}

template <typename T>
cudaError_t LaunchBinaryRow(BinaryOp op, const T* full, const T* row, bool row_is_x, T* out,
                            int64_t n, int64_t cols, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  // n + the grid's stride (<= kMaxBlocks * kThreads) must fit the index.
  const bool narrow = n <= int64_t{INT32_MAX};
  WithOp(op, [&](auto apply) {
    if (narrow) {
      RowKernel<T, uint32_t><<<Blocks(n), kThreads, 0, stream>>>(
          apply, full, row, row_is_x, out, static_cast<uint32_t>(n), static_cast<uint32_t>(cols));
    } else {
      RowKernel<T, int64_t>
          <<<Blocks(n), kThreads, 0, stream>>>(apply, full, row, row_is_x, out, n, cols);
    }
  });
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchBinaryStrided(BinaryOp op, const T* x, const T* y, T* out, const AddGeometry& g,
                                cudaStream_t stream) {
  const int64_t n = Count(g);
  if (n == 0) return cudaSuccess;
  WithOp(op, [&](auto apply) {
    StridedKernel<T><<<Blocks(n), kThreads, 0, stream>>>(apply, x, y, out, g, n);
  });
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchBroadcastDivide(const T* in, T* out, const AddGeometry& g, int64_t divisor,
                                  cudaStream_t stream) {
  const int64_t n = Count(g);
  if (n == 0) return cudaSuccess;
  BroadcastDivideKernel<T>
      <<<Blocks(n), kThreads, 0, stream>>>(in, out, g, n, static_cast<T>(divisor));
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchReduceSum(const T* in, T* out, const ReduceGeometry& g, cudaStream_t stream) {
  if (g.out_count == 0) return cudaSuccess;
  if (g.reduce_count >= kBlockReduceMin && IsColumnSum(g)) {
    const int64_t tiles = (g.out_count + kColumnTile - 1) / kColumnTile;
    ColumnSumKernel<T>
        <<<static_cast<int>(tiles < kMaxBlocks ? tiles : kMaxBlocks), kColumnThreads, 0, stream>>>(
            in, out, g.reduce_count, g.out_count, g.divisor);
  } else if (g.reduce_count >= kBlockReduceMin) {
    const int blocks = static_cast<int>(g.out_count < kMaxBlocks ? g.out_count : kMaxBlocks);
    ReduceBlockKernel<T><<<blocks, kThreads, 0, stream>>>(in, out, g);
  } else {
    ReduceThreadKernel<T><<<Blocks(g.out_count), kThreads, 0, stream>>>(in, out, g);
  }
  return cudaGetLastError();
}

#define TANDEM_INSTANTIATE(T)                                                              \
  template cudaError_t LaunchBinarySame<T>(BinaryOp, const T*, const T*, T*, int64_t,      \
                                           cudaStream_t);                                  \
  template cudaError_t LaunchBinaryRow<T>(BinaryOp, const T*, const T*, bool, T*, int64_t, \
                                          int64_t, cudaStream_t);                          \
  template cudaError_t LaunchBinaryStrided<T>(BinaryOp, const T*, const T*, T*,            \
                                              const AddGeometry&, cudaStream_t);           \
  template cudaError_t LaunchBroadcastDivide<T>(const T*, T*, const AddGeometry&, int64_t, \
                                                cudaStream_t);                             \
  template cudaError_t LaunchReduceSum<T>(const T*, T*, const ReduceGeometry&, cudaStream_t);
TANDEM_INSTANTIATE(float)
TANDEM_INSTANTIATE(double)
TANDEM_INSTANTIATE(int32_t)
TANDEM_INSTANTIATE(int64_t)
#undef TANDEM_INSTANTIATE

// The 16-bit types' forward kernels (their gradients run in float32 on
// widened copies: elementwise_binary_kernels.cc).
#define TANDEM_INSTANTIATE_16(T)                                                           \
  template cudaError_t LaunchBinarySame<T>(BinaryOp, const T*, const T*, T*, int64_t,      \
                                           cudaStream_t);                                  \
  template cudaError_t LaunchBinaryRow<T>(BinaryOp, const T*, const T*, bool, T*, int64_t, \
                                          int64_t, cudaStream_t);                          \
  template cudaError_t LaunchBinaryStrided<T>(BinaryOp, const T*, const T*, T*,            \
                                              const AddGeometry&, cudaStream_t);
TANDEM_INSTANTIATE_16(bfloat16)
TANDEM_INSTANTIATE_16(float16)
#undef TANDEM_INSTANTIATE_16

}  // namespace cuda
}  // namespace tandem
