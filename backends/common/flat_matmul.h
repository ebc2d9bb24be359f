// The products of the mul and fc kernels: dense row-major matrices, a
// tensor flattened to [rows, cols] (FlatMatmulShape) being one as stored.
//
//   RETURN_IF_ERROR((FlatMatmul<float, Policy>(x, w, bias, m, k, n, out)));
//   RETURN_IF_ERROR((FlatMatmulGrad<float, Policy>(x, w, dout, m, k, n, dx, dw)));
//
// Products go through Policy::Gemm (oneDNN sgemm for float32 on the cpu).
// Any of m, k, n may be 0. Pointers are to host-addressable memory;
// functions return when the work is done, with the GEMM's status.
#ifndef TANDEM_BACKENDS_COMMON_FLAT_MATMUL_H_
#define TANDEM_BACKENDS_COMMON_FLAT_MATMUL_H_

#include <cstdint>

#include "absl/status/status.h"
#include "backends/common/broadcast.h"
#include "backends/common/elementwise.h"
#include "backends/common/gemm.h"

namespace tandem {

// out[m, n] = x[m, k] * y[k, n], plus bias[n] on every row unless bias is
// null.
template <typename T, typename Policy>
absl::Status FlatMatmul(const T* x, const T* y, const T* bias, int64_t m, int64_t k, int64_t n,
                        T* out) {
  GemmArgs<T> g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = x;
  g.lda = k;
  g.b = y;
  g.ldb = n;
  g.c = out;
  g.ldc = n;
  if (bias != nullptr && m * n > 0) {
    BroadcastUnary<T, Policy>(BroadcastLayout(Shape({m, n}), {Shape({n})}), bias, out,
                              [](T v) { return v; });
    g.beta = T(1);
  }
  return BatchedGemm<T, Policy>(g, 1, 0, 0, m * n);
}

// The gradients of FlatMatmul from dout [m, n]: dx[m, k] = dout * y^T and
// dy[k, n] = x^T * dout; each is skipped when its pointer is null.
template <typename T, typename Policy>
absl::Status FlatMatmulGrad(const T* x, const T* y, const T* dout, int64_t m, int64_t k, int64_t n,
                            T* dx, T* dy) {
  if (dx != nullptr) {
    GemmArgs<T> g;  // [m, k] = [m, n] * [k, n]^T
    g.trans_b = true;
    g.m = m;
    g.n = k;
    g.k = n;
    g.a = dout;
    g.lda = n;
    g.b = y;
    g.ldb = n;
    g.c = dx;
    g.ldc = k;
    absl::Status s = BatchedGemm<T, Policy>(g, 1, 0, 0, m * k);
    if (!s.ok()) return s;
  }
  if (dy != nullptr) {
    GemmArgs<T> g;  // [k, n] = [m, k]^T * [m, n]
    g.trans_a = true;
    g.m = k;
    g.n = n;
    g.k = m;
    g.a = x;
    g.lda = k;
    g.b = dout;
    g.ldb = n;
    g.c = dy;
    g.ldc = n;
    return BatchedGemm<T, Policy>(g, 1, 0, 0, k * n);
  }
  return absl::OkStatus();
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_FLAT_MATMUL_H_
