// Loops of the softmax and softmax_with_cross_entropy kernels. Softmax
// works on the lines of a tensor around an axis (axis_lines.h); the fused
// cross entropy on rows of `classes` contiguous logits with int64 labels.
//
//   Softmax<float, Policy>(x, AxisLines::Around(shape, axis), out);
//   if (FirstBadLabel(labels, rows, classes, ignore_index) >= 0) ... InvalidArgument
//   SoftmaxCrossEntropy<float, Policy>(logits, labels, rows, classes, ignore_index, sm, loss);
//
// Numerically stable: the line's max is subtracted before exp, and the
// loss is log(sum(exp(x - max))) + max - x[label], never log(softmax).
// Sums and exps run in AccumulatorT<T> (double for float), each line in a
// fixed order, so results do not depend on the policy. Pointers are to
// host-addressable memory; labels are validated by the caller. Functions
// return when the work is done.
#ifndef TANDEM_BACKENDS_COMMON_SOFTMAX_H_
#define TANDEM_BACKENDS_COMMON_SOFTMAX_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>

#include "backends/common/axis_lines.h"
#include "backends/common/elementwise.h"

namespace tandem {
namespace softmax_internal {

// Calls fn(start) for the Start of every line of `l`, possibly on several
// threads.
template <typename Policy, typename Fn>
void ForEachLine(const AxisLines& l, Fn&& fn) {
  Policy::ParallelFor(l.num_lines(),
                      std::max<int64_t>(1, kMinElementsPerTask / std::max<int64_t>(1, l.n)),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t line = begin; line < end; ++line) fn(l.Start(line));
                      });
}

// Writes exp(x - max) of the line at `start` (stride `inner`) into out and
// returns {max, sum of the exps}.
template <typename T>
std::pair<AccumulatorT<T>, AccumulatorT<T>> ExpLine(const T* x, int64_t start, int64_t n,
                                                    int64_t inner, T* out) {
  using Acc = AccumulatorT<T>;
  Acc max = x[start];
  for (int64_t k = 1; k < n; ++k) max = std::max<Acc>(max, x[start + k * inner]);
  Acc sum = 0;
  for (int64_t k = 0; k < n; ++k) {
    const Acc e = std::exp(static_cast<Acc>(x[start + k * inner]) - max);
    out[start + k * inner] = static_cast<T>(e);
    sum += e;
  }
  return {max, sum};
}

}  // namespace softmax_internal

// out = exp(x - max) / sum(exp(x - max)) along each line.
template <typename T, typename Policy>
void Softmax(const T* x, const AxisLines& l, T* out) {
  using Acc = AccumulatorT<T>;
  if (l.n == 0) return;
  softmax_internal::ForEachLine<Policy>(l, [&](int64_t start) {
    const Acc sum = softmax_internal::ExpLine(x, start, l.n, l.inner, out).second;
    for (int64_t k = 0; k < l.n; ++k) {
      T& o = out[start + k * l.inner];
      o = static_cast<T>(static_cast<Acc>(o) / sum);
    }
  });
}

// dx = out * (dout - sum(dout * out)) along each line.
template <typename T, typename Policy>
void SoftmaxGrad(const T* out, const T* dout, const AxisLines& l, T* dx) {
  using Acc = AccumulatorT<T>;
  softmax_internal::ForEachLine<Policy>(l, [&](int64_t start) {
    Acc dot = 0;
    for (int64_t k = 0; k < l.n; ++k) {
      const int64_t at = start + k * l.inner;
      dot += static_cast<Acc>(dout[at]) * out[at];
    }
    for (int64_t k = 0; k < l.n; ++k) {
      const int64_t at = start + k * l.inner;
      dx[at] = static_cast<T>(out[at] * (dout[at] - dot));
    }
  });
}

// The position of the first of labels[0..n) outside [0, classes) that is
// not `ignore_index`, or -1.
inline int64_t FirstBadLabel(const int64_t* labels, int64_t n, int64_t classes,
                             std::optional<int64_t> ignore_index) {
  for (int64_t i = 0; i < n; ++i) {
    if ((labels[i] < 0 || labels[i] >= classes) && labels[i] != ignore_index) return i;
  }
  return -1;
}

// For each of `rows` rows of `classes` logits: softmax (as Softmax) and
// loss = log(sum(exp(x - max))) + max - x[label], or 0 where the label is
// ignore_index (with no classes every row is ignored: labels are valid).
template <typename T, typename Policy>
void SoftmaxCrossEntropy(const T* logits, const int64_t* labels, int64_t rows, int64_t classes,
                         int64_t ignore_index, T* softmax, T* loss) {
  using Acc = AccumulatorT<T>;
  if (classes == 0) return Fill<T, Policy>(T(0), loss, rows);
  const AxisLines l{rows, classes, 1};
  softmax_internal::ForEachLine<Policy>(l, [&](int64_t start) {
    const auto [max, sum] = softmax_internal::ExpLine(logits, start, classes, 1, softmax);
    for (int64_t k = 0; k < classes; ++k) {
      T& s = softmax[start + k];
      s = static_cast<T>(static_cast<Acc>(s) / sum);
    }
    const int64_t row = start / classes;
    const int64_t label = labels[row];
    loss[row] = label == ignore_index
                    ? T(0)
                    : static_cast<T>(std::log(sum) + max - static_cast<Acc>(logits[start + label]));
  });
}

// dlogits = (softmax - onehot(label)) * dloss[row] per row; zero rows
// where the label is ignore_index.
template <typename T, typename Policy>
void SoftmaxCrossEntropyGrad(const T* softmax, const int64_t* labels, const T* dloss, int64_t rows,
                             int64_t classes, int64_t ignore_index, T* dlogits) {
  if (classes == 0) return;  // dlogits is empty
  softmax_internal::ForEachLine<Policy>(AxisLines{rows, classes, 1}, [&](int64_t start) {
    const int64_t row = start / classes;
    const int64_t label = labels[row];
    if (label == ignore_index) {
      std::fill(dlogits + start, dlogits + start + classes, T(0));
      return;
    }
    const T d = dloss[row];
    for (int64_t k = 0; k < classes; ++k) {
      dlogits[start + k] = (softmax[start + k] - (k == label ? T(1) : T(0))) * d;
    }
  });
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_SOFTMAX_H_
