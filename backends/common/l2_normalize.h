// Loops of the l2_normalize kernels: a tensor viewed as [outer, n, inner]
// around the normalized axis, each of the outer * inner lines of n
// elements normalized on its own.
//
//   const AxisLines lines = AxisLines::Around(x_shape, axis);
//   L2Normalize<float, Policy>(x, lines, epsilon, out);
//   L2NormalizeGrad<float, Policy>(x, out, dout, lines, epsilon, dx);
//
// Pointers are to host-addressable memory. Sums accumulate in
// AccumulatorT<T> (double for float), lines in a fixed order, so results
// do not depend on the policy. Functions return when the work is done.
#ifndef TANDEM_BACKENDS_COMMON_L2_NORMALIZE_H_
#define TANDEM_BACKENDS_COMMON_L2_NORMALIZE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backends/common/axis_lines.h"
#include "backends/common/elementwise.h"
#include "framework/types/shape.h"

namespace tandem {

namespace l2_normalize_internal {

// Calls fn(start, norm) for every line, with the line's Start and
// norm = sqrt(sum(x^2) + epsilon) in double, possibly on several threads.
template <typename T, typename Policy, typename Fn>
void ForEachLineNorm(const T* x, const AxisLines& l, double epsilon, Fn&& fn) {
  Policy::ParallelFor(l.num_lines(),
                      std::max<int64_t>(1, kMinElementsPerTask / std::max<int64_t>(1, l.n)),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t line = begin; line < end; ++line) {
                          const int64_t start = l.Start(line);
                          AccumulatorT<T> sum = 0;
                          for (int64_t k = 0; k < l.n; ++k) {
                            const AccumulatorT<T> v = x[start + k * l.inner];
                            sum += v * v;
                          }
                          fn(start, std::sqrt(static_cast<double>(sum) + epsilon));
                        }
                      });
}

}  // namespace l2_normalize_internal

// out = x / sqrt(sum(x^2 over the line) + epsilon).
template <typename T, typename Policy>
void L2Normalize(const T* x, const AxisLines& l, double epsilon, T* out) {
  l2_normalize_internal::ForEachLineNorm<T, Policy>(x, l, epsilon, [&](int64_t start, double norm) {
    for (int64_t k = 0; k < l.n; ++k) {
      const int64_t at = start + k * l.inner;
      out[at] = static_cast<T>(x[at] / norm);
    }
  });
}

// dx = (dout - out * sum(dout * out over the line)) / sqrt(sum(x^2) + epsilon).
template <typename T, typename Policy>
void L2NormalizeGrad(const T* x, const T* out, const T* dout, const AxisLines& l, double epsilon,
                     T* dx) {
  l2_normalize_internal::ForEachLineNorm<T, Policy>(x, l, epsilon, [&](int64_t start, double norm) {
    AccumulatorT<T> dot = 0;
    for (int64_t k = 0; k < l.n; ++k) {
      const int64_t at = start + k * l.inner;
      dot += static_cast<AccumulatorT<T>>(dout[at]) * out[at];
    }
    for (int64_t k = 0; k < l.n; ++k) {
      const int64_t at = start + k * l.inner;
      dx[at] = static_cast<T>((dout[at] - out[at] * static_cast<double>(dot)) / norm);
    }
  });
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_L2_NORMALIZE_H_
