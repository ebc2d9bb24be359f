// Loops of the l2_normalize kernels: a tensor viewed as [outer, n, inner]
// around the normalized axis, each of the outer * inner lines of n
// elements normalized on its own.
//
//   const AxisLines lines = AxisLines::Around(x_shape, axis);
//   L2Normalize<float, Policy>(x, lines, epsilon, out);
//   L2NormalizeGrad<float, Policy>(x, out, dout, lines, epsilon, dx);
//   double loss = L2NormalizeSquareErrorMean<float, Policy>(x, label, lines, epsilon);
//
// Pointers are to host-addressable memory. Sums accumulate in
// AccumulatorT<T> (double for float), lines in a fixed order, so results
// do not depend on the policy. Functions return when the work is done.
#ifndef TANDEM_BACKENDS_COMMON_L2_NORMALIZE_H_
#define TANDEM_BACKENDS_COMMON_L2_NORMALIZE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

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

// The line of AxisLines `l` whose element 0 is at `start` (Start's inverse).
inline int64_t LineAt(const AxisLines& l, int64_t start) {
  const int64_t outer = start / (l.n * l.inner);
  return outer * l.inner + (start - outer * l.n * l.inner);
}

// The mean over every element of (y - label)^2, y = x / sqrt(sum(x^2 over
// the line) + epsilon): l2_normalize, square_error_cost and mean in one
// pass over each line, rounded as they round (y and each squared difference
// in T), the sum in double; the lines' sums are added in line order, so
// the result does not depend on the threads.
template <typename T, typename Policy>
double L2NormalizeSquareErrorMean(const T* x, const T* label, const AxisLines& l, double epsilon) {
  std::vector<double> line_sums(l.num_lines());
  l2_normalize_internal::ForEachLineNorm<T, Policy>(x, l, epsilon, [&](int64_t start, double norm) {
    double sum = 0;
    for (int64_t k = 0; k < l.n; ++k) {
      const int64_t at = start + k * l.inner;
      const T diff = static_cast<T>(x[at] / norm) - label[at];
      sum += static_cast<double>(static_cast<T>(diff * diff));
    }
    line_sums[LineAt(l, start)] = sum;
  });
  double total = 0;
  for (const double s : line_sums) total += s;
  return total / static_cast<double>(l.num_lines() * l.n);
}

// Its gradient for Out@GRAD `dout`: with dcost = dout / N in T (mean_grad)
// and dy = 2 (y - label) dcost in T (square_error_cost_grad), dx = (dy - y
// * sum(dy * y over the line)) / norm (l2_normalize_grad) and dlabel = -dy;
// either may be null.
template <typename T, typename Policy>
void L2NormalizeSquareErrorMeanGrad(const T* x, const T* label, const AxisLines& l, double epsilon,
                                    T dout, T* dx, T* dlabel) {
  const T dcost = static_cast<T>(static_cast<double>(dout) / (l.num_lines() * l.n));
  // The first pass keeps each y in an output (dx, else dlabel) for the
  // second, so each element is divided by the norm once there.
  T* ys = dx != nullptr ? dx : dlabel;
  if (ys == nullptr) return;
  l2_normalize_internal::ForEachLineNorm<T, Policy>(x, l, epsilon, [&](int64_t start, double norm) {
    auto dy_at = [&](int64_t at, T y) { return static_cast<T>(T(2) * (y - label[at]) * dcost); };
    AccumulatorT<T> dot = 0;
    for (int64_t k = 0; k < l.n; ++k) {
      const int64_t at = start + k * l.inner;
      const T y = static_cast<T>(x[at] / norm);
      ys[at] = y;
      dot += static_cast<AccumulatorT<T>>(dy_at(at, y)) * y;
    }
    for (int64_t k = 0; k < l.n; ++k) {
      const int64_t at = start + k * l.inner;
      const T y = ys[at];
      const T dy = dy_at(at, y);
      if (dx != nullptr) dx[at] = static_cast<T>((dy - y * static_cast<double>(dot)) / norm);
      if (dlabel != nullptr) dlabel[at] = -dy;
    }
  });
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_L2_NORMALIZE_H_
