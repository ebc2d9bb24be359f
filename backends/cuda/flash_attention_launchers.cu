// Fused self_attention kernels. See flash_attention_launchers.h.
//
// One block of four warps works on one (batch, head) and one tile of 64
// rows: queries (the forward, dQ) or keys (dK, dV); each warp owns 16 rows
// of the tile and walks the other side in tiles of kInner. Tiles are copied
// into shared memory 16 bytes at a time with cp.async, the next tile while
// the current one is multiplied. The products are mma.sync m16n8k16
// (16-bit inputs, float32 sums) whose operands come from shared memory by
// ldmatrix; their float32 results stay in registers, where the softmax (or
// its gradient) is applied and rounded to T as the next product's operand,
// since a product's result layout is the next product's operand layout
// (FlashAttention-2's scheme). The forward keeps each row's running maximum
// and sum (the online softmax, in base 2) and rescales its unnormalised
// output when the maximum grows. The backward recomputes the probabilities
// from Lse; dK and dV come from a kernel over key tiles, dQ from one over
// query tiles, so every output element has one writer and a fixed order of
// sums (deterministic, no atomics).
//
// Fragment layout of m16n8k16 (PTX ISA, "Matrix fragments for mma.m16n8k16"):
// lane = 4 group + quad. A [16, 16]: a0 = (group, 2 quad..+1), a1 = (group
// + 8, same), a2 = (group, 8 + 2 quad..+1), a3 = (group + 8, 8 + 2
// quad..+1). B [16, 8]: b0 = (2 quad..+1, group), b1 = (8 + 2 quad..+1,
// group). C [16, 8]: c0, c1 = (group, 2 quad..+1), c2, c3 = (group + 8,
// same). So the C tiles 2k and 2k + 1 of a [16, N] product are, packed in
// pairs, the A fragment of its columns 16k..16k+15.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <cmath>
#include <mutex>
#include <set>
#include <type_traits>
#include <utility>

#include "backends/cuda/flash_attention_launchers.h"

namespace tandem {
namespace cuda {
namespace {

constexpr int kRows = 64;           // a block's query (or key) rows
constexpr int kWarps = kRows / 16;  // one warp per 16 rows
constexpr int kBlockThreads = 32 * kWarps;
constexpr float kLog2e = 1.4426950408889634f;

// The other side's tile: 64 columns, 32 where a head of 128 columns would
// not leave the gradient kernels enough registers for two [16, D] sums.
template <int D>
constexpr int kInner = D > 64 ? 32 : 64;

// Blocks of a gradient kernel an SM should hold at once (a register budget
// for the compiler: 168 a thread for three): heads of up to 64 columns fit
// three with a few spilled bytes; a head of 128 would spill its sums.
template <int D>
constexpr int kGradBlocksPerSm = D > 64 ? 1 : 3;

// Leading dimension of a shared [rows, D] tile of T: 16 bytes of padding so
// that the eight rows an ldmatrix reads fall in different banks.
template <int D>
constexpr int kLd = D + 8;

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

__device__ __forceinline__ uint32_t SharedAddress(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Asynchronous copy of `bytes` (4 or 16) from global to shared memory; the
// destination's remaining bytes are zeros (all of them when `valid` is false).
template <int kBytes>
__device__ __forceinline__ void CopyAsync(void* shared, const void* global, bool valid) {
  static_assert(kBytes == 4 || kBytes == 16, "cp.async copies 4, 8 or 16 bytes");
  const int source_bytes = valid ? kBytes : 0;
  if constexpr (kBytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(SharedAddress(shared)),
                 "l"(global), "r"(source_bytes));
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(SharedAddress(shared)),
                 "l"(global), "r"(source_bytes));
  }
}
__device__ __forceinline__ void CommitCopies() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits for this thread's copies, all but the last `kPending` groups.
template <int kPending>
__device__ __forceinline__ void WaitCopies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// tile[r][c] = head's row first + r, column c, for `rows` rows (zeros past
// seq), 16 bytes per copy, asynchronous. All threads of the block take part.
template <int D, int kTileRows, typename T>
__device__ void LoadTileAsync(HeadRows<const T> head, int64_t first, int64_t seq, T* tile) {
  constexpr int kChunks = D / 8;  // 8 elements of 16 bits: 16 bytes
  for (int i = threadIdx.x; i < kTileRows * kChunks; i += kBlockThreads) {
    const int r = i / kChunks, c = (i % kChunks) * 8;
    const bool valid = first + r < seq;
    const T* source = head.base + (valid ? (first + r) * head.stride + c : 0);
    CopyAsync<16>(tile + r * kLd<D> + c, source, valid);
  }
}

// rows[r] = stat[first + r] for kTileRows rows (0 past seq), asynchronous.
template <int kTileRows>
__device__ void LoadRowStatAsync(const float* stat, int64_t first, int64_t seq, float* rows) {
  for (int r = threadIdx.x; r < kTileRows; r += kBlockThreads) {
    const bool valid = first + r < seq;
    CopyAsync<4>(rows + r, stat + (valid ? first + r : 0), valid);
  }
}

// Four 8x8 matrices of 16-bit elements from shared memory; lane i gives the
// address of row i % 8 of matrix i / 8. kTranspose delivers them transposed.
template <bool kTranspose>
__device__ __forceinline__ void LoadMatrices(uint32_t (&r)[4], const void* row) {
  if constexpr (kTranspose) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(SharedAddress(row)));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(SharedAddress(row)));
  }
}

// c += a b for one m16n8k16 tile, float32 sums.
template <typename T>
__device__ __forceinline__ void Mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                    uint32_t b1) {
  if constexpr (std::is_same<T, bfloat16>::value) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats rounded to nearest even as T, `low` in the low 16 bits.
template <typename T>
__device__ __forceinline__ uint32_t Pack(float low, float high) {
  if constexpr (std::is_same<T, bfloat16>::value) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(low, high);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(low, high);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

// A [16, N] float32 product held by one warp: tile n covers columns
// 8n..8n+7, laid out as an mma C fragment.
template <int N>
using WarpSums = float[N / 8][4];

template <int N>
__device__ __forceinline__ void Zero(WarpSums<N>& sums) {
#pragma unroll
  for (int n = 0; n < N / 8; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) sums[n][e] = 0.f;
  }
}

// sums [16, N] += a (one [16, 16] A fragment, columns 16k..16k+15 of the
// left factor) times rows 16k..16k+15 of b [K, N], b as in WarpProductShared.
template <typename T, int N, bool kRowMajorB>
__device__ __forceinline__ void WarpProductB(const uint32_t (&fa)[4], int k, const T* b, int ldb,
                                             WarpSums<N>& sums) {
  const int lane = threadIdx.x % 32, matrix = lane / 8, row = lane % 8;
#pragma unroll
  for (int n = 0; n < N / 16; ++n) {
    uint32_t fb[4];  // B fragments of the column tiles 2n and 2n + 1
    if (kRowMajorB) {
      LoadMatrices<true>(fb,
                         b + (k * 16 + (matrix & 1) * 8 + row) * ldb + n * 16 + (matrix >> 1) * 8);
    } else {
      LoadMatrices<false>(fb,
                          b + (n * 16 + (matrix >> 1) * 8 + row) * ldb + k * 16 + (matrix & 1) * 8);
    }
    Mma<T>(sums[2 * n], fa, fb[0], fb[1]);
    Mma<T>(sums[2 * n + 1], fa, fb[2], fb[3]);
  }
}

// sums [16, N] += a [16, K] b [K, N] for one warp, where a is 16 rows of a
// row-major shared tile (a[i * lda + k]) and b is either the transpose of
// a row-major shared tile (kTransposeB: b[k][j] = bt[j * ldb + k], as K in
// Q K^T) or a row-major shared tile (b[k][j] = b[k * ldb + j], as V in P V).
template <typename T, int K, int N, bool kRowMajorB>
__device__ __forceinline__ void WarpProductShared(const T* a, int lda, const T* b, int ldb,
                                                  WarpSums<N>& sums) {
  const int lane = threadIdx.x % 32, matrix = lane / 8, row = lane % 8;
#pragma unroll
  for (int k = 0; k < K / 16; ++k) {
    uint32_t fa[4];
    LoadMatrices<false>(fa, a + (row + (matrix & 1) * 8) * lda + k * 16 + (matrix >> 1) * 8);
    WarpProductB<T, N, kRowMajorB>(fa, k, b, ldb, sums);
  }
}

// fa[k] = the A fragment of columns 16k..16k+15 of 16 rows of a row-major
// shared tile (a[i * lda + c]), for a [16, K] left factor used many times.
template <int K, typename T>
__device__ __forceinline__ void LoadFragments(const T* a, int lda, uint32_t (&fa)[K / 16][4]) {
  const int lane = threadIdx.x % 32, matrix = lane / 8, row = lane % 8;
#pragma unroll
  for (int k = 0; k < K / 16; ++k) {
    LoadMatrices<false>(fa[k], a + (row + (matrix & 1) * 8) * lda + k * 16 + (matrix >> 1) * 8);
  }
}

// sums [16, N] += a [16, K] b [K, N] with a in fragments (LoadFragments).
template <typename T, int K, int N, bool kRowMajorB>
__device__ __forceinline__ void WarpProductFragments(const uint32_t (&fa)[K / 16][4], const T* b,
                                                     int ldb, WarpSums<N>& sums) {
#pragma unroll
  for (int k = 0; k < K / 16; ++k) WarpProductB<T, N, kRowMajorB>(fa[k], k, b, ldb, sums);
}

// sums [16, N] += p [16, K] b [K, N], p a warp's float32 product in
// registers, rounded to T as the left factor.
template <typename T, int K, int N, bool kRowMajorB>
__device__ __forceinline__ void WarpProductRegisters(const WarpSums<K>& p, const T* b, int ldb,
                                                     WarpSums<N>& sums) {
#pragma unroll
  for (int k = 0; k < K / 16; ++k) {
    const uint32_t fa[4] = {Pack<T>(p[2 * k][0], p[2 * k][1]), Pack<T>(p[2 * k][2], p[2 * k][3]),
                            Pack<T>(p[2 * k + 1][0], p[2 * k + 1][1]),
                            Pack<T>(p[2 * k + 1][2], p[2 * k + 1][3])};
    WarpProductB<T, N, kRowMajorB>(fa, k, b, ldb, sums);
  }
}

// Element e of column tile n of a warp's sums: its row (0..15) and column.
__device__ __forceinline__ int RowOf(int e) { return (threadIdx.x % 32) / 4 + (e & 2) * 4; }
__device__ __forceinline__ int ColumnOf(int n, int e) {
  return n * 8 + (threadIdx.x % 4) * 2 + (e & 1);
}

// Query qi sees keys 0..LastKeySeen (none: -1, qi past seq); key kj is
// seen by queries FirstQuerySeeing..seq - 1 (none: INT_MAX, kj past seq).
// Compared in the inner loops with 32-bit indices (seq < 2^22, see
// FlashAttentionSupports).
__device__ __forceinline__ int LastKeySeen(int64_t qi, int64_t seq, bool causal) {
  return qi >= seq ? -1 : static_cast<int>(causal ? qi : seq - 1);
}
__device__ __forceinline__ int FirstQuerySeeing(int64_t kj, int64_t seq, bool causal) {
  return kj >= seq ? INT_MAX : static_cast<int>(causal ? kj : 0);
}

// The query tile of a block: the last first. Under a causal mask the last
// tiles see the most keys, and blocks start in blockIdx order, so the
// longest start first and the short ones fill the end.
__device__ __forceinline__ int64_t QueryTileOfBlock() {
  return int64_t{gridDim.y} - 1 - blockIdx.y;
}

__host__ __device__ inline int64_t Tiles(int64_t seq, int tile) { return (seq + tile - 1) / tile; }

// Rows [first, first + kRows) of a warp's [16, D] sums as T into `head`
// (rows past seq left out), each scaled by factor[e / 2] (its row: group,
// group + 8). Pairs of columns are stored as one 32-bit value.
template <typename T, int D>
__device__ void StoreWarpRows(const WarpSums<D>& sums, const float (&factor)[2], HeadRows<T> head,
                              int64_t first_row, int64_t seq) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int64_t t = first_row + RowOf(2 * half);
    if (t >= seq) continue;
    T* row = head.base + t * head.stride;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      *reinterpret_cast<uint32_t*>(row + ColumnOf(n, 0)) =
          Pack<T>(sums[n][2 * half] * factor[half], sums[n][2 * half + 1] * factor[half]);
    }
  }
}

template <typename T, int D>
struct ForwardShared {
  static constexpr size_t kBytes = 5 * kRows * kLd<D> * sizeof(T);
  T* q;
  T* k[2];  // double-buffered key and value tiles
  T* v[2];
  __device__ explicit ForwardShared(unsigned char* p) {
    q = reinterpret_cast<T*>(p);
    k[0] = q + kRows * kLd<D>;
    v[0] = k[0] + kRows * kLd<D>;
    k[1] = v[0] + kRows * kLd<D>;
    v[1] = k[1] + kRows * kLd<D>;
  }
};

// Key tiles of kTileKeys that the query rows [q0, q0 + kRows) see.
template <int kTileKeys>
__device__ __forceinline__ int64_t KeyTilesSeen(int64_t seq, bool causal, int64_t q0) {
  const int64_t all = Tiles(seq, kTileKeys);
  if (!causal) return all;
  const int64_t last_query = q0 + kRows - 1 < seq ? q0 + kRows - 1 : seq - 1;
  return last_query / kTileKeys + 1;
}

template <typename T, int D>
__global__ void __launch_bounds__(kBlockThreads)
    FlashForwardKernel(const T* qkv, AttentionGeometry g, bool causal, float scale, T* out,
                       float* lse) {
  static_assert(kRows == 64, "the forward walks key tiles of kRows keys");
  extern __shared__ __align__(128) unsigned char shared[];
  const ForwardShared<T, D> s(shared);
  const int64_t bh = blockIdx.x, q0 = QueryTileOfBlock() * kRows;
  const int warp = threadIdx.x / 32;
  const HeadRows<const T> keys = HeadOf(qkv, g, bh, 3, 1), values = HeadOf(qkv, g, bh, 3, 2);
  LoadTileAsync<D, kRows>(HeadOf(qkv, g, bh, 3, 0), q0, g.seq, s.q);
  LoadTileAsync<D, kRows>(keys, 0, g.seq, s.k[0]);
  LoadTileAsync<D, kRows>(values, 0, g.seq, s.v[0]);
  CommitCopies();
  const float scale_log2 = scale * kLog2e;
  float row_max[2] = {-INFINITY, -INFINITY};  // rows group and group + 8, base-2 units
  float row_sum[2] = {0.f, 0.f};              // this lane's share of the row's sum
  WarpSums<D> acc;                            // Out before the division by the row sums
  Zero<D>(acc);
  int last_key[2];  // of the rows group and group + 8
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    last_key[half] = LastKeySeen(q0 + warp * 16 + RowOf(2 * half), g.seq, causal);
  }
  uint32_t q[D / 16][4];  // the warp's 16 query rows as A fragments, loaded once
  const int key_tiles = static_cast<int>(KeyTilesSeen<kRows>(g.seq, causal, q0));
  for (int kt = 0; kt < key_tiles; ++kt) {
    WaitCopies<0>();
    __syncthreads();  // tile kt has landed; every warp is done with tile kt - 1
    if (kt == 0) LoadFragments<D>(s.q + warp * 16 * kLd<D>, kLd<D>, q);
    if (kt + 1 < key_tiles) {
      LoadTileAsync<D, kRows>(keys, int64_t{kt + 1} * kRows, g.seq, s.k[(kt + 1) % 2]);
      LoadTileAsync<D, kRows>(values, int64_t{kt + 1} * kRows, g.seq, s.v[(kt + 1) % 2]);
      CommitCopies();
    }
    WarpSums<kRows> scores;
    Zero<kRows>(scores);
    WarpProductFragments<T, D, kRows, false>(q, s.k[kt % 2], kLd<D>, scores);
    float top[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < kRows / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const bool seen = kt * kRows + ColumnOf(n, e) <= last_key[e / 2];
        scores[n][e] = seen ? scores[n][e] * scale_log2 : -INFINITY;
        top[e / 2] = fmaxf(top[e / 2], scores[n][e]);
      }
    }
    float rescale[2];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      top[half] = fmaxf(top[half], __shfl_xor_sync(~0u, top[half], 1));
      top[half] = fmaxf(top[half], __shfl_xor_sync(~0u, top[half], 2));
      const float new_max = fmaxf(row_max[half], top[half]);
      const float base = new_max == -INFINITY ? 0.f : new_max;
      rescale[half] = exp2f(row_max[half] - base);
      row_max[half] = new_max;
      row_sum[half] *= rescale[half];
      top[half] = base;
    }
#pragma unroll
    for (int n = 0; n < kRows / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        scores[n][e] = exp2f(scores[n][e] - top[e / 2]);
        row_sum[e / 2] += scores[n][e];
      }
    }
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[n][e] *= rescale[e / 2];
    }
    WarpProductRegisters<T, kRows, D, true>(scores, s.v[kt % 2], kLd<D>, acc);
  }
  float inverse[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    row_sum[half] += __shfl_xor_sync(~0u, row_sum[half], 1);
    row_sum[half] += __shfl_xor_sync(~0u, row_sum[half], 2);
    inverse[half] = 1.f / row_sum[half];
  }
  StoreWarpRows<T, D>(acc, inverse, HeadOf(out, g, bh, 1, 0), q0 + warp * 16, g.seq);
  if (threadIdx.x % 4 == 0) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int64_t t = q0 + warp * 16 + RowOf(2 * half);
      if (t < g.seq) lse[bh * g.seq + t] = row_max[half] / kLog2e + logf(row_sum[half]);
    }
  }
}

// The shared tiles of both gradient kernels: the block's own 64 rows of two
// [seq, D] matrices (K and V, or Q and Out@GRAD), the other side's two
// matrices in double-buffered tiles of kInner rows, and (the key kernel)
// their rows' Lse and delta.
template <typename T, int D>
struct GradShared {
  static constexpr size_t kBytes = 2 * kRows * kLd<D> * sizeof(T) +
                                   4 * kInner<D> * kLd<D> * sizeof(T) +
                                   4 * kInner<D> * sizeof(float);
  T *own_a, *own_b;
  T* other_a[2];
  T* other_b[2];
  float* lse[2];
  float* delta[2];
  __device__ explicit GradShared(unsigned char* p) {
    own_a = reinterpret_cast<T*>(p);
    own_b = own_a + kRows * kLd<D>;
    T* next = own_b + kRows * kLd<D>;
    for (int i = 0; i < 2; ++i) {
      other_a[i] = next;
      other_b[i] = next + kInner<D> * kLd<D>;
      next += 2 * kInner<D> * kLd<D>;
    }
    float* stats = reinterpret_cast<float*>(next);
    for (int i = 0; i < 2; ++i) {
      lse[i] = stats + 2 * i * kInner<D>;
      delta[i] = lse[i] + kInner<D>;
    }
  }
};

// dK and dV of one key tile (block (bh, key tile)), over the query tiles
// that see it; warp w sums keys 16w..16w+15. With the transposed scores
// S^T = K Q^T in registers (rows keys, columns queries): P^T = exp(scale
// S^T - lse), dP^T = V dO^T, dS^T = P^T (dP^T - delta) scale, then
// dV += P^T dO and dK += dS^T Q.
template <typename T, int D>
__global__ void __launch_bounds__(kBlockThreads, kGradBlocksPerSm<D>)
    FlashKeyGradKernel(const T* qkv, const T* dout, const float* lse, const float* delta,
                       AttentionGeometry g, bool causal, float scale, T* dqkv) {
  constexpr int kQueries = kInner<D>;
  extern __shared__ __align__(128) unsigned char shared[];
  const GradShared<T, D> s(shared);
  const int64_t bh = blockIdx.x, k0 = int64_t{blockIdx.y} * kRows;
  const int warp = threadIdx.x / 32;
  const HeadRows<const T> queries = HeadOf(qkv, g, bh, 3, 0), out_grads = HeadOf(dout, g, bh, 1, 0);
  const float* row_lse = lse + bh * g.seq;
  const float* row_delta = delta + bh * g.seq;
  const int64_t first_tile = causal ? k0 / kQueries : 0, query_tiles = Tiles(g.seq, kQueries);
  LoadTileAsync<D, kRows>(HeadOf(qkv, g, bh, 3, 1), k0, g.seq, s.own_a);
  LoadTileAsync<D, kRows>(HeadOf(qkv, g, bh, 3, 2), k0, g.seq, s.own_b);
  const auto load_query_tile = [&](int64_t qt) {
    const int buffer = qt % 2;
    LoadTileAsync<D, kQueries>(queries, qt * kQueries, g.seq, s.other_a[buffer]);
    LoadTileAsync<D, kQueries>(out_grads, qt * kQueries, g.seq, s.other_b[buffer]);
    LoadRowStatAsync<kQueries>(row_lse, qt * kQueries, g.seq, s.lse[buffer]);
    LoadRowStatAsync<kQueries>(row_delta, qt * kQueries, g.seq, s.delta[buffer]);
    CommitCopies();
  };
  if (first_tile < query_tiles) load_query_tile(first_tile);
  const float scale_log2 = scale * kLog2e;
  WarpSums<D> dk, dv;
  Zero<D>(dk);
  Zero<D>(dv);
  const T* k = s.own_a + warp * 16 * kLd<D>;
  const T* v = s.own_b + warp * 16 * kLd<D>;
  const int seq = static_cast<int>(g.seq);
  int first_query[2];  // of the rows (keys) group and group + 8
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    first_query[half] = FirstQuerySeeing(k0 + warp * 16 + RowOf(2 * half), g.seq, causal);
  }
  for (int qt = static_cast<int>(first_tile); qt < query_tiles; ++qt) {
    const int buffer = qt % 2;
    WaitCopies<0>();
    __syncthreads();  // tile qt has landed; every warp is done with tile qt - 1
    if (qt + 1 < query_tiles) load_query_tile(qt + 1);
    const T* q = s.other_a[buffer];
    const T* o = s.other_b[buffer];
    WarpSums<kQueries> probs, dprobs;  // P^T, then dS^T; dP^T
    Zero<kQueries>(probs);
    Zero<kQueries>(dprobs);
    WarpProductShared<T, D, kQueries, false>(k, kLd<D>, q, kLd<D>, probs);
    WarpProductShared<T, D, kQueries, false>(v, kLd<D>, o, kLd<D>, dprobs);
#pragma unroll
    for (int n = 0; n < kQueries / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int query = ColumnOf(n, e);
        const int qi = qt * kQueries + query;
        const bool seen = qi >= first_query[e / 2] && qi < seq;
        probs[n][e] = seen ? exp2f(probs[n][e] * scale_log2 - s.lse[buffer][query] * kLog2e) : 0.f;
        dprobs[n][e] = probs[n][e] * (dprobs[n][e] - s.delta[buffer][query]) * scale;
      }
    }
    WarpProductRegisters<T, kQueries, D, true>(probs, o, kLd<D>, dv);
    WarpProductRegisters<T, kQueries, D, true>(dprobs, q, kLd<D>, dk);
  }
  const float one[2] = {1.f, 1.f};
  StoreWarpRows<T, D>(dk, one, HeadOf(dqkv, g, bh, 3, 1), k0 + warp * 16, g.seq);
  StoreWarpRows<T, D>(dv, one, HeadOf(dqkv, g, bh, 3, 2), k0 + warp * 16, g.seq);
}

// dQ of one query tile (block (bh, query tile)), over the key tiles it
// sees; warp w sums queries 16w..16w+15: S = Q K^T, P = exp(scale S - lse),
// dP = dO V^T, dS = P (dP - delta) scale, dQ += dS K.
template <typename T, int D>
__global__ void __launch_bounds__(kBlockThreads, kGradBlocksPerSm<D>)
    FlashQueryGradKernel(const T* qkv, const T* dout, const float* lse, const float* delta,
                         AttentionGeometry g, bool causal, float scale, T* dqkv) {
  constexpr int kKeys = kInner<D>;
  extern __shared__ __align__(128) unsigned char shared[];
  const GradShared<T, D> s(shared);
  const int64_t bh = blockIdx.x, q0 = QueryTileOfBlock() * kRows;
  const int warp = threadIdx.x / 32;
  const HeadRows<const T> keys = HeadOf(qkv, g, bh, 3, 1), values = HeadOf(qkv, g, bh, 3, 2);
  LoadTileAsync<D, kRows>(HeadOf(qkv, g, bh, 3, 0), q0, g.seq, s.own_a);
  LoadTileAsync<D, kRows>(HeadOf(dout, g, bh, 1, 0), q0, g.seq, s.own_b);
  const auto load_key_tile = [&](int64_t kt) {
    LoadTileAsync<D, kKeys>(keys, kt * kKeys, g.seq, s.other_a[kt % 2]);
    LoadTileAsync<D, kKeys>(values, kt * kKeys, g.seq, s.other_b[kt % 2]);
    CommitCopies();
  };
  load_key_tile(0);
  // This lane's rows (group, group + 8): their Lse in base 2 and delta.
  float row_lse[2], row_delta[2];
  int last_key[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int64_t t = q0 + warp * 16 + RowOf(2 * half);
    row_lse[half] = t < g.seq ? lse[bh * g.seq + t] * kLog2e : 0.f;
    row_delta[half] = t < g.seq ? delta[bh * g.seq + t] : 0.f;
    last_key[half] = LastKeySeen(t, g.seq, causal);
  }
  const float scale_log2 = scale * kLog2e;
  WarpSums<D> dq;
  Zero<D>(dq);
  uint32_t q[D / 16][4], o[D / 16][4];  // the warp's rows of Q and Out@GRAD, loaded once
  const int key_tiles = static_cast<int>(KeyTilesSeen<kKeys>(g.seq, causal, q0));
  for (int kt = 0; kt < key_tiles; ++kt) {
    WaitCopies<0>();
    __syncthreads();  // tile kt has landed; every warp is done with tile kt - 1
    if (kt == 0) {
      LoadFragments<D>(s.own_a + warp * 16 * kLd<D>, kLd<D>, q);
      LoadFragments<D>(s.own_b + warp * 16 * kLd<D>, kLd<D>, o);
    }
    if (kt + 1 < key_tiles) load_key_tile(kt + 1);
    const T* k = s.other_a[kt % 2];
    const T* v = s.other_b[kt % 2];
    WarpSums<kKeys> probs, dprobs;  // P, then dS; dP
    Zero<kKeys>(probs);
    Zero<kKeys>(dprobs);
    WarpProductFragments<T, D, kKeys, false>(q, k, kLd<D>, probs);
    WarpProductFragments<T, D, kKeys, false>(o, v, kLd<D>, dprobs);
#pragma unroll
    for (int n = 0; n < kKeys / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const bool seen = kt * kKeys + ColumnOf(n, e) <= last_key[e / 2];
        probs[n][e] = seen ? exp2f(probs[n][e] * scale_log2 - row_lse[e / 2]) : 0.f;
        probs[n][e] *= (dprobs[n][e] - row_delta[e / 2]) * scale;
      }
    }
    WarpProductRegisters<T, kKeys, D, true>(probs, k, kLd<D>, dq);
  }
  const float one[2] = {1.f, 1.f};
  StoreWarpRows<T, D>(dq, one, HeadOf(dqkv, g, bh, 3, 0), q0 + warp * 16, g.seq);
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

// Launches kernel over (batch * heads, row tiles) blocks with `bytes` of shared memory.
template <typename Kernel, typename... Args>
cudaError_t LaunchTiles(Kernel kernel, size_t bytes, const AttentionGeometry& g,
                        cudaStream_t stream, Args... args) {
  const cudaError_t e = AllowSharedMemory(reinterpret_cast<const void*>(kernel), bytes);
  if (e != cudaSuccess) return e;
  const dim3 grid(static_cast<unsigned>(g.batch * g.heads),
                  static_cast<unsigned>(Tiles(g.seq, kRows)));
  kernel<<<grid, kBlockThreads, bytes, stream>>>(args...);
  return cudaGetLastError();
}

}  // namespace

bool FlashAttentionSupports(const AttentionGeometry& g) {
  const bool head_dim =
      g.head_dim == 16 || g.head_dim == 32 || g.head_dim == 64 || g.head_dim == 128;
  return head_dim && Tiles(g.seq, kRows) <= 65535 && g.batch * g.heads <= 0x7fffffff;
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
