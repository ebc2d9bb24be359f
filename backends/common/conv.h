// Portable conv2d through im2col and the policy's GEMM, for the conv2d
// kernels of backends without a vendor convolution (and their float64):
//
//   ASSIGN_OR_RETURN(Conv2DGeometry g, Conv2DShape("conv2d", x_shape, w_shape, params));
//   RETURN_IF_ERROR((Conv2DForward<float, Policy>(g, x, w, out)));
//   RETURN_IF_ERROR((Conv2DBackwardData<float, Policy>(g, w, dout, dx)));
//   RETURN_IF_ERROR((Conv2DBackwardFilter<float, Policy>(g, x, dout, dw)));
//
// For sample n and group gi, the columns of the receptive fields (im2col)
// form a [C/groups * KH * KW, OH * OW] matrix `col`, and
//   Output[n, gi]  = Filter[gi] * col              ([M/groups, K] x [K, P])
//   dcol           = Filter[gi]^T * dOutput[n, gi] (added back by col2im)
//   dFilter[gi]   += dOutput[n, gi] * col^T        (summed over n in order)
// Pointers are to host-addressable memory, NCHW / [M, C/groups, KH, KW]
// row-major; `g` has no unknown dims. GEMM errors are returned; the
// functions return when the work is done and are thread-safe for disjoint
// outputs.
#ifndef TANDEM_BACKENDS_COMMON_CONV_H_
#define TANDEM_BACKENDS_COMMON_CONV_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "backends/common/elementwise.h"
#include "backends/common/gemm.h"
#include "ops/nn/prologues.h"
#include "ops/nn/shape_fns.h"

namespace tandem {
namespace conv_internal {

using prologue::ConvDims;

// Calls fn(row, oy, ox_begin, ox_end, iy, ix0, dix) for every run of output
// columns of `col` row `row` whose input positions lie inside the plane:
// input column ix = ix0 + (ox - ox_begin) * dix on input row iy.
template <typename Fn>
void ForEachInsideRun(const Conv2DGeometry& g, Fn&& fn) {
  const Conv2DParams& p = g.p;
  for (int64_t c = 0; c < g.c / p.groups; ++c) {
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t row = (c * g.kh + i) * g.kw + j;
        // Output columns whose input column ox * sw - pw + j * dw is in [0, w).
        const int64_t off = j * p.dilation_w - p.pad_w;
        const int64_t ox0 = off >= 0 ? 0 : (-off + p.stride_w - 1) / p.stride_w;
        const int64_t ox1 = std::min(g.ow, g.w - off <= 0 ? 0 : (g.w - off - 1) / p.stride_w + 1);
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const int64_t iy = oy * p.stride_h - p.pad_h + i * p.dilation_h;
          if (iy < 0 || iy >= g.h || ox0 >= ox1) {
            fn(row, oy, int64_t{0}, int64_t{0}, c * g.h * g.w, int64_t{0}, p.stride_w);
            continue;
          }
          fn(row, oy, ox0, ox1, c * g.h * g.w + iy * g.w, ox0 * p.stride_w + off, p.stride_w);
        }
      }
    }
  }
}

// col [K, P] = the receptive fields of one group's channels `x`
// ([C/groups, H, W]); positions outside the plane read 0.
template <typename T>
void Im2Col(const Conv2DGeometry& g, const T* x, T* col) {
  ForEachInsideRun(g, [&](int64_t row, int64_t oy, int64_t ox0, int64_t ox1, int64_t base,
                          int64_t ix0, int64_t dix) {
    T* dst = col + row * g.oh * g.ow + oy * g.ow;
    std::fill(dst, dst + ox0, T(0));
    const T* src = x + base + ix0;
    for (int64_t ox = ox0; ox < ox1; ++ox) dst[ox] = src[(ox - ox0) * dix];
    std::fill(dst + std::max(ox0, ox1), dst + g.ow, T(0));
  });
}

// x ([C/groups, H, W]) += col [K, P] scattered back to the positions Im2Col
// read.
template <typename T>
void Col2ImAdd(const Conv2DGeometry& g, const T* col, T* x) {
  ForEachInsideRun(g, [&](int64_t row, int64_t oy, int64_t ox0, int64_t ox1, int64_t base,
                          int64_t ix0, int64_t dix) {
    const T* src = col + row * g.oh * g.ow + oy * g.ow;
    T* dst = x + base + ix0;
    for (int64_t ox = ox0; ox < ox1; ++ox) dst[(ox - ox0) * dix] += src[ox];
  });
}

template <typename T>
GemmArgs<T> Product(bool trans_a, const T* a, int64_t lda, bool trans_b, const T* b, int64_t ldb,
                    T* c, int64_t m, int64_t n, int64_t k, T beta) {
  GemmArgs<T> args;
  args.trans_a = trans_a;
  args.trans_b = trans_b;
  args.m = m;
  args.n = n;
  args.k = k;
  args.a = a;
  args.lda = lda;
  args.b = b;
  args.ldb = ldb;
  args.beta = beta;
  args.c = c;
  args.ldc = n;
  return args;
}

// Runs fn(sample, group, col_buffer) for every (sample, group) pair, in
// parallel when the products are small enough not to be parallel inside;
// returns the first error in order.
template <typename T, typename Policy, typename Fn>
absl::Status ForEachSampleGroup(const Conv2DGeometry& g, const ConvDims& d, Fn&& fn) {
  const int64_t tasks = g.n * d.groups;
  std::vector<absl::Status> status(tasks);
  const int64_t madds = std::max<int64_t>(1, d.mg * d.k * d.p);
  Policy::ParallelFor(tasks, std::max<int64_t>(1, gemm_internal::kMinMaddsPerTask / madds),
                      [&](int64_t begin, int64_t end) {
                        std::vector<T> col(d.direct ? 0 : d.k * d.p);
                        for (int64_t t = begin; t < end; ++t) {
                          status[t] = fn(t / d.groups, t % d.groups, col.data());
                        }
                      });
  for (const absl::Status& s : status) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace conv_internal

// out [N, M, OH, OW] = conv2d(x [N, C, H, W], w [M, C/groups, KH, KW]).
template <typename T, typename Policy>
absl::Status Conv2DForward(const Conv2DGeometry& g, const T* x, const T* w, T* out) {
  namespace ci = conv_internal;
  const ci::ConvDims d(g);
  return ci::ForEachSampleGroup<T, Policy>(g, d, [&](int64_t n, int64_t gi, T* col) {
    const T* xg = x + (n * g.c + gi * d.cg) * d.plane;
    if (!d.direct) ci::Im2Col(g, xg, col);
    return Policy::Gemm(ci::Product<T>(false, w + gi * d.mg * d.k, d.k, false, d.direct ? xg : col,
                                       d.p, out + (n * g.m + gi * d.mg) * d.p, d.mg, d.p, d.k,
                                       T(0)));
  });
}

// dx [N, C, H, W] = the gradient of conv2d's input from dout [N, M, OH, OW].
template <typename T, typename Policy>
absl::Status Conv2DBackwardData(const Conv2DGeometry& g, const T* w, const T* dout, T* dx) {
  namespace ci = conv_internal;
  const ci::ConvDims d(g);
  if (!d.direct) Fill<T, Policy>(T(0), dx, g.n * g.c * d.plane);
  return ci::ForEachSampleGroup<T, Policy>(g, d, [&](int64_t n, int64_t gi, T* col) {
    T* dxg = dx + (n * g.c + gi * d.cg) * d.plane;
    const absl::Status s = Policy::Gemm(ci::Product<T>(true, w + gi * d.mg * d.k, d.k, false,
                                                       dout + (n * g.m + gi * d.mg) * d.p, d.p,
                                                       d.direct ? dxg : col, d.k, d.p, d.mg, T(0)));
    if (s.ok() && !d.direct) ci::Col2ImAdd(g, col, dxg);
    return s;
  });
}

// dw [M, C/groups, KH, KW] = the gradient of conv2d's filter from dout,
// summed over the samples in order (zeros for an empty batch).
template <typename T, typename Policy>
absl::Status Conv2DBackwardFilter(const Conv2DGeometry& g, const T* x, const T* dout, T* dw) {
  namespace ci = conv_internal;
  const ci::ConvDims d(g);
  if (g.n == 0) {
    Fill<T, Policy>(T(0), dw, g.m * d.k);
    return absl::OkStatus();
  }
  std::vector<T> col(d.direct ? 0 : d.k * d.p);
  for (int64_t gi = 0; gi < d.groups; ++gi) {
    for (int64_t n = 0; n < g.n; ++n) {
      const T* xg = x + (n * g.c + gi * d.cg) * d.plane;
      if (!d.direct) ci::Im2Col(g, xg, col.data());
      const absl::Status s = Policy::Gemm(ci::Product<T>(
          false, dout + (n * g.m + gi * d.mg) * d.p, d.p, true, d.direct ? xg : col.data(), d.p,
          dw + gi * d.mg * d.k, d.mg, d.k, d.p, n == 0 ? T(0) : T(1)));
      if (!s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_CONV_H_
