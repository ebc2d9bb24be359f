// General matrix products for the matmul kernels.
//
//   GemmArgs<double> g;                         // row-major operands
//   g.m = 2; g.n = 4; g.k = 3;
//   g.a = x; g.lda = 3; g.b = y; g.ldb = 4; g.c = out; g.ldc = 4;
//   BlockedGemm<double, SerialPolicy>(g);       // out = x * y
//   RETURN_IF_ERROR((BatchedGemm<double, SerialPolicy>(g, batch, 6, 0, 8)));
//
// BlockedGemm is the portable, cache-blocked product used where no vendor
// GEMM applies; BatchedGemm drives a policy's Gemm over a batch, folding the
// batch into one larger product where the layout allows it. Pointers are to
// host-addressable memory. Both return when the work is done; thread-safe
// for disjoint outputs.
#ifndef TANDEM_BACKENDS_COMMON_GEMM_H_
#define TANDEM_BACKENDS_COMMON_GEMM_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "backends/common/elementwise.h"
#include "glog/logging.h"

namespace tandem {

// C = alpha * op(A) * op(B) + beta * C with row-major operands: op(A) is
// m x k (A is k x m when trans_a), op(B) is k x n (B is n x k when trans_b),
// C is m x n. lda / ldb / ldc are the row lengths of the stored matrices.
// beta == 0 overwrites C without reading it.
template <typename T>
struct GemmArgs {
  bool trans_a = false;
  bool trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  T alpha = 1;
  const T* a = nullptr;
  int64_t lda = 0;
  const T* b = nullptr;
  int64_t ldb = 0;
  T beta = 0;
  T* c = nullptr;
  int64_t ldc = 0;
};

namespace gemm_internal {

// Register block: kMr rows by kNr columns (two 256-bit vectors) of C.
inline constexpr int64_t kMr = 4;
template <typename T>
inline constexpr int64_t kNr = 64 / sizeof(T);
// Cache blocks: a task computes kMc x kNc of C, kKc terms at a time.
inline constexpr int64_t kMc = 64;
inline constexpr int64_t kNc = 256;
inline constexpr int64_t kKc = 256;
// Multiply-adds below which a product runs as one task.
inline constexpr int64_t kMinMaddsPerTask = int64_t{1} << 21;

// Copies op(A)[i0:i0+mc, p0:p0+kc] into kMr-row panels, p-major within a
// panel, zero-padding the last panel to kMr rows.
template <typename T>
void PackA(const GemmArgs<T>& g, int64_t i0, int64_t mc, int64_t p0, int64_t kc, T* dst) {
  for (int64_t ip = 0; ip < mc; ip += kMr) {
    for (int64_t p = 0; p < kc; ++p) {
      for (int64_t r = 0; r < kMr; ++r) {
        const int64_t i = i0 + ip + r, q = p0 + p;
        *dst++ = ip + r >= mc ? T(0) : g.trans_a ? g.a[q * g.lda + i] : g.a[i * g.lda + q];
      }
    }
  }
}

// Copies op(B)[p0:p0+kc, j0:j0+nc] into kNr-column panels, p-major within
// a panel, zero-padding the last panel to kNr columns.
template <typename T>
void PackB(const GemmArgs<T>& g, int64_t p0, int64_t kc, int64_t j0, int64_t nc, T* dst) {
  for (int64_t jp = 0; jp < nc; jp += kNr<T>) {
    for (int64_t p = 0; p < kc; ++p) {
      for (int64_t c = 0; c < kNr<T>; ++c) {
        const int64_t j = j0 + jp + c, q = p0 + p;
        *dst++ = jp + c >= nc ? T(0) : g.trans_b ? g.b[j * g.ldb + q] : g.b[q * g.ldb + j];
      }
    }
  }
}

// out = (packed A panel) * (packed B panel) over kc terms. The local
// accumulator and the unrolled loops keep the block in vector registers.
template <typename T>
void MicroKernel(const T* __restrict a, const T* __restrict b, int64_t kc, T (&out)[kMr][kNr<T>]) {
  T acc[kMr][kNr<T>] = {};
  for (int64_t p = 0; p < kc; ++p, a += kMr, b += kNr<T>) {
#pragma GCC unroll 4
    for (int64_t r = 0; r < kMr; ++r) {
      const T ar = a[r];
#pragma GCC unroll 16
      for (int64_t c = 0; c < kNr<T>; ++c) acc[r][c] += ar * b[c];
    }
  }
  std::copy(&acc[0][0], &acc[0][0] + kMr * kNr<T>, &out[0][0]);
}

}  // namespace gemm_internal

// C = alpha * op(A) * op(B) + beta * C, blocked for caches and registers;
// tasks of kMc x kNc output blocks go through Policy::ParallelFor.
// Requires m, n, k > 0.
template <typename T, typename Policy>
void BlockedGemm(const GemmArgs<T>& g) {
  namespace gi = gemm_internal;
  constexpr int64_t kMr = gi::kMr, kNr = gi::kNr<T>, kMc = gi::kMc;
  constexpr int64_t kNc = gi::kNc, kKc = gi::kKc;
  const int64_t row_blocks = (g.m + kMc - 1) / kMc;
  const int64_t col_blocks = (g.n + kNc - 1) / kNc;
  const int64_t grain = std::max<int64_t>(1, gi::kMinMaddsPerTask / (kMc * kNc * g.k));
  Policy::ParallelFor(row_blocks * col_blocks, grain, [&](int64_t begin, int64_t end) {
    std::vector<T> a_pack(kMc * kKc), b_pack(kNc * kKc);
    T acc[kMr][kNr];
    for (int64_t block = begin; block < end; ++block) {
      const int64_t i0 = block / col_blocks * kMc, j0 = block % col_blocks * kNc;
      const int64_t mc = std::min(kMc, g.m - i0), nc = std::min(kNc, g.n - j0);
      for (int64_t p0 = 0; p0 < g.k; p0 += kKc) {
        const int64_t kc = std::min(kKc, g.k - p0);
        gi::PackA(g, i0, mc, p0, kc, a_pack.data());
        gi::PackB(g, p0, kc, j0, nc, b_pack.data());
        for (int64_t ip = 0; ip < mc; ip += kMr) {
          for (int64_t jp = 0; jp < nc; jp += kNr) {
            gi::MicroKernel(a_pack.data() + ip * kc, b_pack.data() + jp * kc, kc, acc);
            const int64_t rows = std::min(kMr, mc - ip);
            const int64_t cols = std::min(kNr, nc - jp);
            for (int64_t r = 0; r < rows; ++r) {
              T* c = g.c + (i0 + ip + r) * g.ldc + j0 + jp;
              for (int64_t j = 0; j < cols; ++j) {
                // The first k-block applies beta; later ones accumulate.
                const T prev = p0 > 0 ? c[j] : g.beta == T(0) ? T(0) : g.beta * c[j];
                c[j] = prev + g.alpha * acc[r][j];
              }
            }
          }
        }
      }
    }
  });
}

// For b < batch: C_b = alpha * op(A_b) * op(B_b) + beta * C_b, where
// X_b = X + b * stride_x and stride 0 shares one matrix across the batch.
// C is dense (ldc == n) and stride_c is m * n, or 0 to sum the products
// into one C: C = alpha * sum_b op(A_b) * op(B_b) + beta * C. Any of m, n,
// k or batch may be 0 (C is then scaled by beta; beta 0 gives zeros). Runs
// Policy::Gemm (m, n, k > 0), over the batch in parallel when the products
// are small.
template <typename T, typename Policy>
absl::Status BatchedGemm(GemmArgs<T> g, int64_t batch, int64_t stride_a, int64_t stride_b,
                         int64_t stride_c) {
  CHECK(g.ldc == g.n && (stride_c == 0 || stride_c == g.m * g.n)) << "BatchedGemm writes a dense C";
  const int64_t c_count = (stride_c == 0 ? 1 : batch) * g.m * g.n;
  if (c_count == 0) return absl::OkStatus();
  if (g.k == 0 || batch == 0) {
    if (g.beta == T(0)) {
      Fill<T, Policy>(T(0), g.c, c_count);
    } else {
      Scale<T, Policy>(g.c, g.c, c_count, g.beta, 0.0, true);
    }
    return absl::OkStatus();
  }
  // Stacked batches of a contiguous operand form one taller matrix.
  if (stride_c != 0 && stride_b == 0 && !g.trans_a && g.lda == g.k && stride_a == g.m * g.k) {
    g.m *= batch;  // [batch * m, k] * [k, n]
    return Policy::Gemm(g);
  }
  if (stride_c == 0 && g.trans_a && g.lda == g.m && stride_a == g.k * g.m && !g.trans_b &&
      g.ldb == g.n && stride_b == g.k * g.n) {
    g.k *= batch;  // [batch * k, m]^T * [batch * k, n]
    return Policy::Gemm(g);
  }
  const T* a = g.a;
  const T* b = g.b;
  T* c = g.c;
  auto product = [&](int64_t i, GemmArgs<T>& args) {
    args.a = a + i * stride_a;
    args.b = b + i * stride_b;
    args.c = c + i * stride_c;
    return Policy::Gemm(args);
  };
  if (stride_c == 0 || g.m * g.n * g.k >= gemm_internal::kMinMaddsPerTask) {
    // One product at a time, each parallel inside; a shared C accumulates.
    for (int64_t i = 0; i < batch; ++i) {
      GemmArgs<T> args = g;
      if (stride_c == 0 && i > 0) args.beta = T(1);
      absl::Status s = product(i, args);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }
  // Small products: the batch is the parallel dimension.
  std::vector<absl::Status> status(batch);
  const int64_t grain = std::max<int64_t>(1, gemm_internal::kMinMaddsPerTask / (g.m * g.n * g.k));
  Policy::ParallelFor(batch, grain, [&](int64_t begin, int64_t end) {
    GemmArgs<T> args = g;
    for (int64_t i = begin; i < end; ++i) status[i] = product(i, args);
  });
  for (const absl::Status& s : status) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_GEMM_H_
