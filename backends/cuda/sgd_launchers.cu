// sgd kernels. See sgd_launchers.h.
#include <algorithm>
#include <cstdint>
#include <cub/block/block_radix_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>

#include "backends/cuda/device_float16.h"
#include "backends/cuda/device_reduce.h"
#include "backends/cuda/sgd_launchers.h"

namespace tandem {
namespace cuda {
namespace {

using device::Blocks;
using device::kThreads;

// One rounding, whatever nvcc's contraction settings.
__device__ __forceinline__ float MulAdd(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ double MulAdd(double a, double b, double c) { return __fma_rn(a, b, c); }

template <typename T, typename G>
__global__ void SgdDenseKernel(T* param, const G* grad, int64_t n, T neg_lr, const T* scale_at) {
  const T scale = device::ScaleAt(scale_at);
  const bool scaled = scale_at != nullptr;
  TANDEM_GRID_LOOP(i, n) {
    param[i] = MulAdd(neg_lr, device::GradAt(grad, i, scale, scaled), param[i]);
  }
}

// Positions 0 .. n-1: the values sorted with the rows.
__global__ void IotaKernel(int32_t* out, int32_t n) {
  TANDEM_GRID_LOOP(i, n) { out[i] = static_cast<int32_t>(i); }
}

// One thread per (position k, column j): threads of a k below the number of
// groups apply group k (its positions in increasing order, by the stable
// sort); the rest have nothing to do.
template <typename T>
__global__ void SgdGroupsKernel(T* param, const T* value, int64_t width, T neg_lr,
                                const uint64_t* group_rows, const int32_t* counts,
                                const int32_t* offsets, const int32_t* positions,
                                const int32_t* num_groups) {
  const int64_t groups = *num_groups;
  const int64_t total = groups * width;
  TANDEM_GRID_LOOP(i, total) {
    const int64_t g = i / width, j = i - g * width;
    T* p = param + static_cast<int64_t>(group_rows[g]) * width + j;
    T acc = *p;
    const int32_t end = offsets[g] + counts[g];
    for (int32_t e = offsets[g]; e < end; ++e) {
      acc = MulAdd(neg_lr, value[static_cast<int64_t>(positions[e]) * width + j], acc);
    }
    *p = acc;
  }
}

// Gradients of at most kBlockSortItems rows whose ids fit 32 bits are
// grouped by one block (BlockSortRowsKernel) and applied by one more launch
// (SgdSortedRowsKernel): two launches instead of the device-wide sort's
// eight or so, which for a training batch cost more than the update.
constexpr int kBlockSortThreads = 512;
constexpr int kBlockSortItemsPerThread = 8;
constexpr int kBlockSortItems = kBlockSortThreads * kBlockSortItemsPerThread;

// Sorts the n (<= kBlockSortItems) row ids by their low `bits` bits, stably
// (equal rows keep their order in the gradient), into sorted_rows with
// their positions in sorted_positions. One block; padding keys (all bits
// set, positions past n) sort after every row.
__global__ void __launch_bounds__(kBlockSortThreads)
    BlockSortRowsKernel(const int64_t* rows, int32_t n, int bits, uint32_t* sorted_rows,
                        int32_t* sorted_positions) {
  using Sort = cub::BlockRadixSort<uint32_t, kBlockSortThreads, kBlockSortItemsPerThread, int32_t>;
  __shared__ typename Sort::TempStorage temp;
  uint32_t keys[kBlockSortItemsPerThread];
  int32_t positions[kBlockSortItemsPerThread];
  for (int i = 0; i < kBlockSortItemsPerThread; ++i) {
    const int32_t at = static_cast<int32_t>(threadIdx.x) * kBlockSortItemsPerThread + i;
    keys[i] = at < n ? static_cast<uint32_t>(rows[at]) : ~uint32_t{0};
    positions[i] = at;
  }
  Sort(temp).Sort(keys, positions, 0, bits);
  for (int i = 0; i < kBlockSortItemsPerThread; ++i) {
    const int32_t at = static_cast<int32_t>(threadIdx.x) * kBlockSortItemsPerThread + i;
    if (at < n) {
      sorted_rows[at] = keys[i];
      sorted_positions[at] = positions[i];
    }
  }
}

// One thread per (sorted position k, column j): the thread of a group's
// first position applies the group's updates in order; the others return.
template <typename T>
__global__ void SgdSortedRowsKernel(T* param, const T* value, int64_t width, T neg_lr,
                                    const uint32_t* sorted_rows, const int32_t* positions,
                                    int32_t n) {
  const int64_t total = int64_t{n} * width;
  TANDEM_GRID_LOOP(i, total) {
    const int64_t k = i / width, j = i - k * width;
    const uint32_t row = sorted_rows[k];
    if (k > 0 && sorted_rows[k - 1] == row) continue;
    T* p = param + static_cast<int64_t>(row) * width + j;
    T acc = *p;
    for (int64_t e = k; e < n && sorted_rows[e] == row; ++e) {
      acc = MulAdd(neg_lr, value[static_cast<int64_t>(positions[e]) * width + j], acc);
    }
    *p = acc;
  }
}

// Gradients of at most kScanItems rows, each at most kScanWidth wide, are
// applied by one launch without sorting (SgdScanRowsKernel): one warp per
// position finds, 32 positions at a time, whether an earlier position holds
// its row (then it has nothing to do), and otherwise applies every position
// of its row in increasing order, its columns spread over the lanes: the
// order of the sorted paths, so the same bits. About n * n / 64 comparisons
// on average, a few microseconds for a training batch.
constexpr int kScanItems = 4096;
constexpr int kScanColumnsPerLane = 8;
constexpr int64_t kScanWidth = 32 * kScanColumnsPerLane;
constexpr int kScanWarpsPerBlock = 8;

template <typename T>
__global__ void __launch_bounds__(32 * kScanWarpsPerBlock)
    SgdScanRowsKernel(T* param, const T* value, int64_t width, T neg_lr, const int64_t* rows,
                      int32_t n) {
  const int lane = threadIdx.x % 32;
  const int32_t i = blockIdx.x * kScanWarpsPerBlock + threadIdx.x / 32;
  if (i >= n) return;  // the whole warp
  const int64_t row = rows[i];
  for (int32_t base = 0; base < i; base += 32) {
    const int32_t j = base + lane;
    if (__any_sync(~0u, j < i && rows[j] == row)) return;  // the earlier position applies it
  }
  T* p = param + row * width;
  T acc[kScanColumnsPerLane];
#pragma unroll
  for (int c = 0; c < kScanColumnsPerLane; ++c) {
    const int64_t col = c * 32 + lane;
    acc[c] = col < width ? p[col] : T(0);
  }
  for (int32_t base = i; base < n; base += 32) {
    const int32_t j = base + lane;
    unsigned match = __ballot_sync(~0u, j < n && rows[j] == row);
    while (match != 0) {  // the row's positions among these 32, in increasing order
      const int64_t at = base + __ffs(match) - 1;
      match &= match - 1;
      const T* v = value + at * width;
#pragma unroll
      for (int c = 0; c < kScanColumnsPerLane; ++c) {
        const int64_t col = c * 32 + lane;
        if (col < width) acc[c] = MulAdd(neg_lr, v[col], acc[c]);
      }
    }
  }
#pragma unroll
  for (int c = 0; c < kScanColumnsPerLane; ++c) {
    const int64_t col = c * 32 + lane;
    if (col < width) p[col] = acc[c];
  }
}

// Bits a row id below `height` can have set (at least one: CUB sorts
// nothing in an empty bit range).
int KeyBits(int64_t height) {
  int bits = 1;
  while (bits < 64 && (uint64_t{1} << bits) < static_cast<uint64_t>(height)) ++bits;
  return bits;
}

// The workspace's arrays, at offsets aligned for CUB (256 bytes).
struct Workspace {
  uint64_t* sorted_rows;
  int32_t* positions;
  int32_t* sorted_positions;
  uint64_t* group_rows;
  int32_t* counts;
  int32_t* offsets;
  int32_t* num_groups;
  void* temp;
  size_t temp_bytes;
  int64_t total_bytes;
};

constexpr int64_t Align(int64_t bytes) { return (bytes + 255) / 256 * 256; }

// Lays out the workspace at `base` (nullptr: only sizes it).
cudaError_t Layout(char* base, int64_t n, int64_t height, Workspace* w) {
  const int n32 = static_cast<int>(n);
  const int bits = KeyBits(height);
  size_t sort_bytes = 0, encode_bytes = 0, scan_bytes = 0;
  cudaError_t e = cub::DeviceRadixSort::SortPairs(
      nullptr, sort_bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
      static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), n32, 0, bits);
  if (e != cudaSuccess) return e;
  e = cub::DeviceRunLengthEncode::Encode(
      nullptr, encode_bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
      static_cast<int32_t*>(nullptr), static_cast<int32_t*>(nullptr), n32);
  if (e != cudaSuccess) return e;
  e = cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, static_cast<const int32_t*>(nullptr),
                                    static_cast<int32_t*>(nullptr), n32);
  if (e != cudaSuccess) return e;
  int64_t at = 0;
  auto take = [&](int64_t bytes) {
    char* p = base == nullptr ? nullptr : base + at;
    at += Align(bytes);
    return p;
  };
  w->sorted_rows = reinterpret_cast<uint64_t*>(take(n * 8));
  w->positions = reinterpret_cast<int32_t*>(take(n * 4));
  w->sorted_positions = reinterpret_cast<int32_t*>(take(n * 4));
  w->group_rows = reinterpret_cast<uint64_t*>(take(n * 8));
  w->counts = reinterpret_cast<int32_t*>(take(n * 4));
  w->offsets = reinterpret_cast<int32_t*>(take(n * 4));
  w->num_groups = reinterpret_cast<int32_t*>(take(4));
  w->temp_bytes = std::max(sort_bytes, std::max(encode_bytes, scan_bytes));
  w->temp = take(static_cast<int64_t>(w->temp_bytes));
  w->total_bytes = at;
  return cudaSuccess;
}

}  // namespace

template <typename T, typename G>
cudaError_t LaunchSgdDense(T* param, const G* grad, int64_t n, float lr, const T* scale,
                           cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  SgdDenseKernel<T, G>
      <<<Blocks(n), kThreads, 0, stream>>>(param, grad, n, -static_cast<T>(lr), scale);
  return cudaGetLastError();
}

cudaError_t SgdSparseWorkspaceBytes(int64_t n, int64_t height, int64_t* bytes) {
  Workspace w;
  const cudaError_t e = Layout(nullptr, n, height, &w);
  if (e == cudaSuccess) *bytes = w.total_bytes;
  return e;
}

template <typename T>
cudaError_t LaunchSgdSparse(T* param, const T* value, int64_t width, float lr, const int64_t* rows,
                            int32_t n, int64_t height, void* workspace, int64_t workspace_bytes,
                            cudaStream_t stream) {
  if (n == 0 || width == 0) return cudaSuccess;
  Workspace w;
  cudaError_t e = Layout(static_cast<char*>(workspace), n, height, &w);
  if (e != cudaSuccess) return e;
  if (w.total_bytes > workspace_bytes) return cudaErrorInvalidValue;
  const int64_t total = int64_t{n} * width;
  if (n <= kScanItems && width <= kScanWidth) {
    const int blocks = (n + kScanWarpsPerBlock - 1) / kScanWarpsPerBlock;
    SgdScanRowsKernel<T><<<blocks, 32 * kScanWarpsPerBlock, 0, stream>>>(
        param, value, width, -static_cast<T>(lr), rows, n);
    return cudaGetLastError();
  }
  if (n <= kBlockSortItems && KeyBits(height) <= 32) {
    // sorted_rows' n words hold the 32-bit keys.
    uint32_t* sorted_rows = reinterpret_cast<uint32_t*>(w.sorted_rows);
    BlockSortRowsKernel<<<1, kBlockSortThreads, 0, stream>>>(rows, n, KeyBits(height), sorted_rows,
                                                             w.sorted_positions);
    e = cudaGetLastError();
    if (e != cudaSuccess) return e;
    SgdSortedRowsKernel<T><<<Blocks(total), kThreads, 0, stream>>>(
        param, value, width, -static_cast<T>(lr), sorted_rows, w.sorted_positions, n);
    return cudaGetLastError();
  }
  IotaKernel<<<Blocks(n), kThreads, 0, stream>>>(w.positions, n);
  e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  // Row ids are non-negative (checked), so their bits sort as unsigned.
  size_t temp_bytes = w.temp_bytes;
  e = cub::DeviceRadixSort::SortPairs(w.temp, temp_bytes, reinterpret_cast<const uint64_t*>(rows),
                                      w.sorted_rows, w.positions, w.sorted_positions, n, 0,
                                      KeyBits(height), stream);
  if (e != cudaSuccess) return e;
  // Counts past the groups' are zero, so the scan over all n is defined (the
  // offsets past the groups' are never read).
  e = cudaMemsetAsync(w.counts, 0, n * sizeof(int32_t), stream);
  if (e != cudaSuccess) return e;
  temp_bytes = w.temp_bytes;
  e = cub::DeviceRunLengthEncode::Encode(w.temp, temp_bytes, w.sorted_rows, w.group_rows, w.counts,
                                         w.num_groups, n, stream);
  if (e != cudaSuccess) return e;
  temp_bytes = w.temp_bytes;
  e = cub::DeviceScan::ExclusiveSum(w.temp, temp_bytes, w.counts, w.offsets, n, stream);
  if (e != cudaSuccess) return e;
  SgdGroupsKernel<T><<<Blocks(total), kThreads, 0, stream>>>(
      param, value, width, -static_cast<T>(lr), w.group_rows, w.counts, w.offsets,
      w.sorted_positions, w.num_groups);
  return cudaGetLastError();
}

#define TANDEM_INSTANTIATE_DENSE(T, G) \
  template cudaError_t LaunchSgdDense<T, G>(T*, const G*, int64_t, float, const T*, cudaStream_t);
TANDEM_INSTANTIATE_DENSE(float, float)
TANDEM_INSTANTIATE_DENSE(float, bfloat16)
TANDEM_INSTANTIATE_DENSE(float, float16)
TANDEM_INSTANTIATE_DENSE(double, double)
#undef TANDEM_INSTANTIATE_DENSE

#define TANDEM_INSTANTIATE(T)                                                                    \
  template cudaError_t LaunchSgdSparse<T>(T*, const T*, int64_t, float, const int64_t*, int32_t, \
                                          int64_t, void*, int64_t, cudaStream_t);
TANDEM_INSTANTIATE(float)
TANDEM_INSTANTIATE(double)
#undef TANDEM_INSTANTIATE

}  // namespace cuda
}  // namespace tandem
