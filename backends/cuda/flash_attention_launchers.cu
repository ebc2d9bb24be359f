// Fused self_attention kernels. See flash_attention_launchers.h.
//
// One block of four warps works on one (batch, head) and one tile of 64
// queries (the forward, dQ) or 64 keys (dK, dV); each warp owns 16 rows of
// the tile. Tiles of Q, K, V and Out@GRAD are copied into shared memory 16
// bytes at a time; the warps multiply them with WMMA 16x16x16 fragments
// (16-bit inputs, float32 sums) into float32 tiles in shared memory, where
// the softmax (or its gradient) is applied element by element and rounded
// to T for the next product. The forward keeps each row's running maximum
// and sum (the online softmax) and rescales its unnormalised output when
// the maximum grows. The backward recomputes the probabilities from Lse;
// dK and dV come from a kernel over key tiles, dQ from one over query
// tiles, so every output element has one writer and a fixed order of sums;
// those sums stay in the warps' registers (WMMA accumulators) until the end.
#include "backends/cuda/flash_attention_launchers.h"

#include <mma.h>

#include <cmath>
#include <mutex>
#include <set>
#include <type_traits>
#include <utility>

#include "backends/cuda/device_float16.h"

namespace tandem {
namespace cuda {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kTile = 64;           // queries of a query tile, keys of a key tile
constexpr int kWarps = kTile / 16;  // one warp per 16 rows of a tile
constexpr int kBlockThreads = 32 * kWarps;
// Leading dimensions of the shared tiles, padded against bank conflicts
// (WMMA wants a multiple of 16 bytes; every tile starts 32-byte aligned).
constexpr int kProbLd = kTile + 8;   // [kTile, kTile] of T
constexpr int kScoreLd = kTile + 4;  // [kTile, kTile] of float
template <int D>
constexpr int kHeadLd = D + 8;  // [kTile, D] of T
template <int D>
constexpr int kAccLd = D + 4;  // [kTile, D] of float

template <typename T>
struct WmmaTypeOf;  // CUDA's type with the same bits
template <>
struct WmmaTypeOf<bfloat16> {
  using type = __nv_bfloat16;
};
template <>
struct WmmaTypeOf<float16> {
  using type = __half;
};

// One (batch, head)'s [seq, head_dim] matrix inside the token rows of a
// [batch, seq, parts * width] tensor: element (t, c) at base[t * stride + c].
template <typename T>
struct HeadRows {
  T* base;
  int64_t stride;
};

template <typename T>
__device__ HeadRows<T> HeadOf(T* rows, const AttentionGeometry& g, int64_t bh, int parts,
                              int part) {
  const int64_t b = bh / g.heads, h = bh % g.heads, width = g.heads * g.head_dim;
  return {rows + (b * g.seq * parts + part) * width + h * g.head_dim, parts * width};
}

// tile[r][c] = head's row first + r, column c, for kTile rows (zeros past
// seq), 16 bytes per load. All threads of the block take part.
template <int D, typename T>
__device__ void LoadTile(HeadRows<const T> head, int64_t first, int64_t seq, T* tile) {
  constexpr int kChunks = D / 8;  // 8 elements of 16 bits: 16 bytes
  for (int i = threadIdx.x; i < kTile * kChunks; i += kBlockThreads) {
    const int r = i / kChunks, c = (i % kChunks) * 8;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (first + r < seq) {
      v = *reinterpret_cast<const uint4*>(head.base + (first + r) * head.stride + c);
    }
    *reinterpret_cast<uint4*>(tile + r * kHeadLd<D> + c) = v;
  }
}

// The rows [first, first + kTile) of a [rows, kTile] float tile's
// statistic: stat[first + r] (0 past seq). Threads below kTile take part.
__device__ void LoadRowStat(const float* stat, int64_t first, int64_t seq, float* rows) {
  if (threadIdx.x < kTile) {
    const int64_t t = first + threadIdx.x;
    rows[threadIdx.x] = t < seq ? stat[t] : 0.f;
  }
}

using Accumulator = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// One warp: acc[n] (columns 16n..16n+15 of a float [16, N] product held in
// registers) += a [16, K] b [K, N]. a is row-major (a[i * lda + k]) or,
// kTransA, column-major (a[k * lda + i]); b row-major (b[k * ldb + j]) or,
// kTransB, column-major (b[j * ldb + k]). Each fragment of a is loaded once.
template <typename T, int K, int N, bool kTransA, bool kTransB>
__device__ void WarpMma(const T* a, int lda, const T* b, int ldb, Accumulator (&acc)[N / 16]) {
  using W = typename WmmaTypeOf<T>::type;
  using LayoutA = std::conditional_t<kTransA, wmma::col_major, wmma::row_major>;
  using LayoutB = std::conditional_t<kTransB, wmma::col_major, wmma::row_major>;
  const W* wa = reinterpret_cast<const W*>(a);
  const W* wb = reinterpret_cast<const W*>(b);
#pragma unroll
  for (int k = 0; k < K / 16; ++k) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, W, LayoutA> fa;
    wmma::load_matrix_sync(fa, kTransA ? wa + k * 16 * lda : wa + k * 16, lda);
#pragma unroll
    for (int n = 0; n < N / 16; ++n) {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, W, LayoutB> fb;
      wmma::load_matrix_sync(fb, kTransB ? wb + n * 16 * ldb + k * 16 : wb + k * 16 * ldb + n * 16,
                             ldb);
      wmma::mma_sync(acc[n], fa, fb, acc[n]);
    }
  }
}

template <int N>
__device__ void ZeroAll(Accumulator (&acc)[N]) {
#pragma unroll
  for (int n = 0; n < N; ++n) wmma::fill_fragment(acc[n], 0.f);
}

// One warp: c [16, N] (float in shared memory, leading dimension ldc) =
// (kAccumulate ? c : 0) + a [16, K] b [K, N], operands as in WarpMma.
template <typename T, int K, int N, bool kTransA, bool kTransB, bool kAccumulate>
__device__ void WarpProduct(const T* a, int lda, const T* b, int ldb, float* c, int ldc) {
  Accumulator acc[N / 16];
#pragma unroll
  for (int n = 0; n < N / 16; ++n) {
    if (kAccumulate) {
      wmma::load_matrix_sync(acc[n], c + n * 16, ldc, wmma::mem_row_major);
    } else {
      wmma::fill_fragment(acc[n], 0.f);
    }
  }
  WarpMma<T, K, N, kTransA, kTransB>(a, lda, b, ldb, acc);
#pragma unroll
  for (int n = 0; n < N / 16; ++n) {
    wmma::store_matrix_sync(c + n * 16, acc[n], ldc, wmma::mem_row_major);
  }
}

// Whether query qi sees key kj.
__device__ __forceinline__ bool Visible(int64_t qi, int64_t kj, int64_t seq, bool causal) {
  return qi < seq && kj < seq && (!causal || kj <= qi);
}

__host__ __device__ inline int64_t Tiles(int64_t seq) { return (seq + kTile - 1) / kTile; }

// Key tiles that query tile `query_tile` sees.
__device__ __forceinline__ int64_t KeyTilesSeen(int64_t seq, bool causal, int64_t query_tile) {
  const int64_t all = (seq + kTile - 1) / kTile;
  return causal && query_tile + 1 < all ? query_tile + 1 : all;
}

template <typename T, int D>
struct ForwardShared {
  static constexpr size_t kBytes = 3 * kTile * kHeadLd<D> * sizeof(T) +
                                   kTile * kProbLd * sizeof(T) + kTile * kScoreLd * sizeof(float) +
                                   kTile * kAccLd<D> * sizeof(float) + 3 * kTile * sizeof(float);
  T* q;
  T* k;
  T* v;
  T* probs;
  float* scores;
  float* acc;  // Out before the division by the row sums
  float *row_max, *row_sum, *row_rescale;
  __device__ explicit ForwardShared(unsigned char* p) {
    q = reinterpret_cast<T*>(p);
    k = q + kTile * kHeadLd<D>;
    v = k + kTile * kHeadLd<D>;
    probs = v + kTile * kHeadLd<D>;
    scores = reinterpret_cast<float*>(probs + kTile * kProbLd);
    acc = scores + kTile * kScoreLd;
    row_max = acc + kTile * kAccLd<D>;
    row_sum = row_max + kTile;
    row_rescale = row_sum + kTile;
  }
};

// The online softmax of one warp's 16 rows of the scores tile (queries
// first + row, keys k0 + column): probabilities against the rows' new
// maximum into probs (in T), the rows' maximum, sum and the factor their
// accumulated output is rescaled by.
template <typename T, int D>
__device__ void OnlineSoftmax(const ForwardShared<T, D>& s, int warp, int64_t q0, int64_t k0,
                              const AttentionGeometry& g, bool causal, float scale) {
  // Two lanes a row, 32 columns each: one shuffle per reduction. Each lane
  // starts at column `lane` of its half and wraps, so that at every step
  // the 32 lanes read 32 different banks.
  const int lane = threadIdx.x % 32;
  const int row = warp * 16 + lane / 2, half = (lane % 2) * (kTile / 2);
  const float* x = s.scores + row * kScoreLd + half;
  T* p = s.probs + row * kProbLd + half;
  const int64_t query = q0 + row, first_key = k0 + half;
  float top = -INFINITY;
  for (int j = 0; j < kTile / 2; ++j) {
    const int c = (j + lane) % (kTile / 2);
    if (Visible(query, first_key + c, g.seq, causal)) top = fmaxf(top, x[c] * scale);
  }
  top = fmaxf(top, __shfl_xor_sync(~0u, top, 1));
  const float old_max = s.row_max[row], new_max = fmaxf(old_max, top);
  const float base = new_max == -INFINITY ? 0.f : new_max;
  float sum = 0;
  for (int j = 0; j < kTile / 2; ++j) {
    const int c = (j + lane) % (kTile / 2);
    const float e = Visible(query, first_key + c, g.seq, causal) ? expf(x[c] * scale - base) : 0.f;
    p[c] = device::Narrow<T>(e);
    sum += e;
  }
  sum += __shfl_xor_sync(~0u, sum, 1);
  __syncwarp();  // both lanes of the row have read its old maximum
  if (half == 0) {
    const float rescale = expf(old_max - base);
    s.row_rescale[row] = rescale;
    s.row_sum[row] = s.row_sum[row] * rescale + sum;
    s.row_max[row] = new_max;
  }
}

template <typename T, int D>
__global__ void __launch_bounds__(kBlockThreads)
    FlashForwardKernel(const T* qkv, AttentionGeometry g, bool causal, float scale, T* out,
                       float* lse) {
  extern __shared__ __align__(128) unsigned char shared[];
  const ForwardShared<T, D> s(shared);
  const int64_t bh = blockIdx.x, q0 = int64_t{blockIdx.y} * kTile;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* acc = s.acc + warp * 16 * kAccLd<D>;
  LoadTile<D>(HeadOf(qkv, g, bh, 3, 0), q0, g.seq, s.q);
  for (int i = threadIdx.x; i < kTile * kAccLd<D>; i += kBlockThreads) s.acc[i] = 0;
  if (threadIdx.x < kTile) {
    s.row_max[threadIdx.x] = -INFINITY;
    s.row_sum[threadIdx.x] = 0;
  }
  const int64_t key_tiles = KeyTilesSeen(g.seq, causal, blockIdx.y);
  for (int64_t kt = 0; kt < key_tiles; ++kt) {
    const int64_t k0 = kt * kTile;
    __syncthreads();  // every warp is done with the previous K and V
    LoadTile<D>(HeadOf(qkv, g, bh, 3, 1), k0, g.seq, s.k);
    LoadTile<D>(HeadOf(qkv, g, bh, 3, 2), k0, g.seq, s.v);
    __syncthreads();
    WarpProduct<T, D, kTile, false, true, false>(s.q + warp * 16 * kHeadLd<D>, kHeadLd<D>, s.k,
                                                 kHeadLd<D>, s.scores + warp * 16 * kScoreLd,
                                                 kScoreLd);
    __syncwarp();
    OnlineSoftmax(s, warp, q0, k0, g, causal, scale);
    __syncwarp();
    for (int i = lane; i < 16 * D; i += 32) {
      acc[(i / D) * kAccLd<D> + i % D] *= s.row_rescale[warp * 16 + i / D];
    }
    __syncwarp();
    WarpProduct<T, kTile, D, false, false, true>(s.probs + warp * 16 * kProbLd, kProbLd, s.v,
                                                 kHeadLd<D>, acc, kAccLd<D>);
  }
  __syncwarp();
  const HeadRows<T> o = HeadOf(out, g, bh, 1, 0);
  for (int i = lane; i < 16 * D; i += 32) {
    const int r = warp * 16 + i / D, c = i % D;
    if (q0 + r < g.seq) {
      o.base[(q0 + r) * o.stride + c] =
          device::Narrow<T>(acc[(i / D) * kAccLd<D> + c] / s.row_sum[r]);
    }
  }
  if (lane < 16) {
    const int r = warp * 16 + lane;
    if (q0 + r < g.seq) lse[bh * g.seq + q0 + r] = s.row_max[r] + logf(s.row_sum[r]);
  }
}

// The tiles of both gradient kernels. Their sums (dK and dV, or dQ) stay
// in registers.
template <typename T, int D>
struct GradShared {
  static constexpr size_t kBytes = 4 * kTile * kHeadLd<D> * sizeof(T) +
                                   2 * kTile * kProbLd * sizeof(T) +
                                   kTile * kScoreLd * sizeof(float) + 2 * kTile * sizeof(float);
  T *q, *k, *v, *dout;
  T* probs;       // P [queries, keys], in T
  T* dscores;     // dS [queries, keys], in T
  float* scores;  // S, then dP [queries, keys]; each warp's rows stage its sums at the end
  float *row_lse, *row_delta;
  __device__ explicit GradShared(unsigned char* p) {
    q = reinterpret_cast<T*>(p);
    k = q + kTile * kHeadLd<D>;
    v = k + kTile * kHeadLd<D>;
    dout = v + kTile * kHeadLd<D>;
    probs = dout + kTile * kHeadLd<D>;
    dscores = probs + kTile * kProbLd;
    scores = reinterpret_cast<float*>(dscores + kTile * kProbLd);
    row_lse = scores + kTile * kScoreLd;
    row_delta = row_lse + kTile;
  }
};

// One warp's 16 query rows of the tile pair (queries q0 + row, keys k0 +
// column): P = exp(scale Q K^T - lse) in T, then dP = dO V^T and dS = P
// (dP - delta) scale in T, P as rounded (the products read it so).
template <typename T, int D>
__device__ void ScoreGrads(const GradShared<T, D>& s, int warp, int64_t q0, int64_t k0,
                           const AttentionGeometry& g, bool causal, float scale) {
  const int lane = threadIdx.x % 32;
  float* rows = s.scores + warp * 16 * kScoreLd;
  WarpProduct<T, D, kTile, false, true, false>(s.q + warp * 16 * kHeadLd<D>, kHeadLd<D>, s.k,
                                               kHeadLd<D>, rows, kScoreLd);
  __syncwarp();
  for (int i = lane; i < 16 * kTile; i += 32) {
    const int row = warp * 16 + i / kTile, col = i % kTile;
    const float p = Visible(q0 + row, k0 + col, g.seq, causal)
                        ? expf(s.scores[row * kScoreLd + col] * scale - s.row_lse[row])
                        : 0.f;
    s.probs[row * kProbLd + col] = device::Narrow<T>(p);
  }
  __syncwarp();  // S read: dP takes its place
  WarpProduct<T, D, kTile, false, true, false>(s.dout + warp * 16 * kHeadLd<D>, kHeadLd<D>, s.v,
                                               kHeadLd<D>, rows, kScoreLd);
  __syncwarp();
  for (int i = lane; i < 16 * kTile; i += 32) {
    const int row = warp * 16 + i / kTile, col = i % kTile;
    const float p = device::Widen(s.probs[row * kProbLd + col]);
    s.dscores[row * kProbLd + col] =
        device::Narrow<T>(p * (s.scores[row * kScoreLd + col] - s.row_delta[row]) * scale);
  }
}

// One warp: its 16 rows of a [kTile, D] sum (acc, in registers) as T into
// rows first + first_row.. of `head`, rows past seq left out; staged 64
// columns at a time through `stage` (the warp's own [16, kScoreLd] floats).
template <typename T, int D>
__device__ void StoreWarpRows(Accumulator (&acc)[D / 16], float* stage, HeadRows<T> head,
                              int64_t first, int first_row, int64_t seq) {
  const int lane = threadIdx.x % 32;
  constexpr int kColumns = D < kTile ? D : kTile;
#pragma unroll
  for (int c0 = 0; c0 < D; c0 += kColumns) {
#pragma unroll
    for (int n = 0; n < kColumns / 16; ++n) {
      wmma::store_matrix_sync(stage + n * 16, acc[c0 / 16 + n], kScoreLd, wmma::mem_row_major);
    }
    __syncwarp();
    for (int i = lane; i < 16 * kColumns; i += 32) {
      const int r = i / kColumns, c = i % kColumns;
      const int64_t t = first + first_row + r;
      if (t < seq) head.base[t * head.stride + c0 + c] = device::Narrow<T>(stage[r * kScoreLd + c]);
    }
    __syncwarp();
  }
}

// dK and dV of one key tile (block (bh, key tile)), over the query tiles
// that see it; warp w sums keys 16w..16w+15.
template <typename T, int D>
__global__ void __launch_bounds__(kBlockThreads)
    FlashKeyGradKernel(const T* qkv, const T* dout, const float* lse, const float* delta,
                       AttentionGeometry g, bool causal, float scale, T* dqkv) {
  extern __shared__ __align__(128) unsigned char shared[];
  const GradShared<T, D> s(shared);
  const int64_t bh = blockIdx.x, k0 = int64_t{blockIdx.y} * kTile;
  const int warp = threadIdx.x / 32;
  LoadTile<D>(HeadOf(qkv, g, bh, 3, 1), k0, g.seq, s.k);
  LoadTile<D>(HeadOf(qkv, g, bh, 3, 2), k0, g.seq, s.v);
  Accumulator dk[D / 16], dv[D / 16];
  ZeroAll(dk);
  ZeroAll(dv);
  const int64_t query_tiles = Tiles(g.seq);
  for (int64_t qt = causal ? blockIdx.y : 0; qt < query_tiles; ++qt) {
    const int64_t q0 = qt * kTile;
    __syncthreads();  // every warp is done with the previous query tile
    LoadTile<D>(HeadOf(qkv, g, bh, 3, 0), q0, g.seq, s.q);
    LoadTile<D>(HeadOf(dout, g, bh, 1, 0), q0, g.seq, s.dout);
    LoadRowStat(lse + bh * g.seq, q0, g.seq, s.row_lse);
    LoadRowStat(delta + bh * g.seq, q0, g.seq, s.row_delta);
    __syncthreads();
    ScoreGrads(s, warp, q0, k0, g, causal, scale);
    __syncthreads();  // the products below read every query row
    // dV += P^T dO, dK += dS^T Q for the warp's keys.
    WarpMma<T, kTile, D, true, false>(s.probs + warp * 16, kProbLd, s.dout, kHeadLd<D>, dv);
    WarpMma<T, kTile, D, true, false>(s.dscores + warp * 16, kProbLd, s.q, kHeadLd<D>, dk);
  }
  float* stage = s.scores + warp * 16 * kScoreLd;  // only this warp writes its rows
  StoreWarpRows<T, D>(dk, stage, HeadOf(dqkv, g, bh, 3, 1), k0, warp * 16, g.seq);
  StoreWarpRows<T, D>(dv, stage, HeadOf(dqkv, g, bh, 3, 2), k0, warp * 16, g.seq);
}

// dQ of one query tile (block (bh, query tile)), over the key tiles it
// sees; warp w sums queries 16w..16w+15.
template <typename T, int D>
__global__ void __launch_bounds__(kBlockThreads)
    FlashQueryGradKernel(const T* qkv, const T* dout, const float* lse, const float* delta,
                         AttentionGeometry g, bool causal, float scale, T* dqkv) {
  extern __shared__ __align__(128) unsigned char shared[];
  const GradShared<T, D> s(shared);
  const int64_t bh = blockIdx.x, q0 = int64_t{blockIdx.y} * kTile;
  const int warp = threadIdx.x / 32;
  LoadTile<D>(HeadOf(qkv, g, bh, 3, 0), q0, g.seq, s.q);
  LoadTile<D>(HeadOf(dout, g, bh, 1, 0), q0, g.seq, s.dout);
  LoadRowStat(lse + bh * g.seq, q0, g.seq, s.row_lse);
  LoadRowStat(delta + bh * g.seq, q0, g.seq, s.row_delta);
  Accumulator dq[D / 16];
  ZeroAll(dq);
  const int64_t key_tiles = KeyTilesSeen(g.seq, causal, blockIdx.y);
  for (int64_t kt = 0; kt < key_tiles; ++kt) {
    const int64_t k0 = kt * kTile;
    __syncthreads();  // every warp is done with the previous K and V
    LoadTile<D>(HeadOf(qkv, g, bh, 3, 1), k0, g.seq, s.k);
    LoadTile<D>(HeadOf(qkv, g, bh, 3, 2), k0, g.seq, s.v);
    __syncthreads();
    ScoreGrads(s, warp, q0, k0, g, causal, scale);
    __syncwarp();
    // dQ += dS K for the warp's queries.
    WarpMma<T, kTile, D, false, false>(s.dscores + warp * 16 * kProbLd, kProbLd, s.k, kHeadLd<D>,
                                       dq);
  }
  StoreWarpRows<T, D>(dq, s.scores + warp * 16 * kScoreLd, HeadOf(dqkv, g, bh, 3, 0), q0, warp * 16,
                      g.seq);
}

// f(std::integral_constant<int, head_dim>) for the supported head sizes.
template <typename F>
cudaError_t WithHeadDim(int64_t head_dim, F&& f) {
  switch (head_dim) {
    case 16:
      return f(std::integral_constant<int, 16>());
    case 32:
      return f(std::integral_constant<int, 32>());
    case 64:
      return f(std::integral_constant<int, 64>());
    case 128:
      return f(std::integral_constant<int, 128>());
    default:
      return cudaErrorInvalidValue;
  }
}

// Lets `kernel` take `bytes` of dynamic shared memory on the current device,
// once per (kernel, device): the runtime call can wait for copies in flight,
// which must keep overlapping with the kernels. Thread-safe.
cudaError_t AllowSharedMemory(const void* kernel, size_t bytes) {
  static std::mutex* mu = new std::mutex;
  static auto* allowed = new std::set<std::pair<const void*, int>>;
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return e;
  std::lock_guard<std::mutex> lock(*mu);
  if (allowed->count({kernel, device}) > 0) return cudaSuccess;
  e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
  if (e == cudaSuccess) allowed->insert({kernel, device});
  return e;
}

// Launches kernel over (batch * heads, tiles) blocks with `bytes` of shared memory.
template <typename Kernel, typename... Args>
cudaError_t LaunchTiles(Kernel kernel, size_t bytes, const AttentionGeometry& g,
                        cudaStream_t stream, Args... args) {
  const cudaError_t e = AllowSharedMemory(reinterpret_cast<const void*>(kernel), bytes);
  if (e != cudaSuccess) return e;
  const dim3 grid(static_cast<unsigned>(g.batch * g.heads), static_cast<unsigned>(Tiles(g.seq)));
  kernel<<<grid, kBlockThreads, bytes, stream>>>(args...);
  return cudaGetLastError();
}

}  // namespace

bool FlashAttentionSupports(const AttentionGeometry& g) {
  const bool head_dim =
      g.head_dim == 16 || g.head_dim == 32 || g.head_dim == 64 || g.head_dim == 128;
  return head_dim && Tiles(g.seq) <= 65535 && g.batch * g.heads <= 0x7fffffff;
}
template <typename T>
cudaError_t LaunchFlashAttention(const T* qkv, const AttentionGeometry& g, bool causal, float scale,
                                 T* out, float* lse, cudaStream_t stream) {
  if (g.batch * g.heads * g.seq == 0) return cudaSuccess;
  if (!FlashAttentionSupports(g)) return cudaErrorInvalidConfiguration;
  return WithHeadDim(g.head_dim, [&](auto d) {
    constexpr int D = decltype(d)::value;
    return LaunchTiles(FlashForwardKernel<T, D>, ForwardShared<T, D>::kBytes, g, stream, qkv, g,
                       causal, scale, out, lse);
  });
}

template <typename T>
cudaError_t LaunchFlashAttentionGrad(const T* qkv, const T* dout, const float* lse,
                                     const float* delta, const AttentionGeometry& g, bool causal,
                                     float scale, T* dqkv, cudaStream_t stream) {
  if (g.batch * g.heads * g.seq == 0) return cudaSuccess;
  if (!FlashAttentionSupports(g)) return cudaErrorInvalidConfiguration;
  return WithHeadDim(g.head_dim, [&](auto d) {
    constexpr int D = decltype(d)::value;
    const size_t bytes = GradShared<T, D>::kBytes;
    const cudaError_t e = LaunchTiles(FlashKeyGradKernel<T, D>, bytes, g, stream, qkv, dout, lse,
                                      delta, g, causal, scale, dqkv);
    if (e != cudaSuccess) return e;
    return LaunchTiles(FlashQueryGradKernel<T, D>, bytes, g, stream, qkv, dout, lse, delta, g,
                       causal, scale, dqkv);
  });
}

#define TANDEM_INSTANTIATE(T)                                                                      \
  template cudaError_t LaunchFlashAttention<T>(const T*, const AttentionGeometry&, bool, float,    \
                                               T*, float*, cudaStream_t);                          \
  template cudaError_t LaunchFlashAttentionGrad<T>(const T*, const T*, const float*, const float*, \
                                                   const AttentionGeometry&, bool, float, T*,      \
                                                   cudaStream_t);
TANDEM_INSTANTIATE(bfloat16)
TANDEM_INSTANTIATE(float16)
#undef TANDEM_INSTANTIATE

}  // namespace cuda
}  // namespace tandem
