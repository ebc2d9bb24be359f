// Element-wise loops of the math kernels, written once for every backend
// whose memory the host can address (cpu, sim). Each is templated on the
// element type(s) and on an execution policy (see serial_policy.h) that
// decides how ranges run: serially, or split across threads.
//
//   Fill<float, SerialPolicy>(1.5f, out, n);
//   BroadcastAdd<double, SerialPolicy>(BroadcastLayout(out_shape, {xs, ys}), x, y, out);
//   BroadcastBinary<float, SerialPolicy>(layout, x, y, out, Binary<BinaryOp::kMul>());
//   SumToShape<float, SerialPolicy>(dout, out_shape, dx, x_shape);
//
// Pointers are to host-addressable memory; the caller has validated shapes
// (ops/math/shape_fns.h). Functions return when the work is done and are
// thread-safe for disjoint outputs. Results do not depend on the policy:
// reductions add in a fixed order (chunks of kMinElementsPerTask elements
// whose partial sums are then added in chunk order).
//
// Arithmetic: float32 sums accumulate in double; integer sums and integer
// arithmetic wrap around (two's complement) instead of overflowing.
#ifndef TANDEM_BACKENDS_COMMON_ELEMENTWISE_H_
#define TANDEM_BACKENDS_COMMON_ELEMENTWISE_H_

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "backends/common/binary_op.h"
#include "backends/common/broadcast.h"
#include "framework/types/float16.h"
#include "framework/types/shape.h"

namespace tandem {

// Below this many elements a loop runs as one task: threads cost more
// than they save.
inline constexpr int64_t kMinElementsPerTask = int64_t{1} << 15;

// The type sums of T accumulate in (see header comment).
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
template <>
struct Accumulator<int64_t> {
  using type = uint64_t;  // wraps instead of overflowing
};
template <typename T>
using AccumulatorT = typename Accumulator<T>::type;

// `From` converted to `To` as the cast op defines it: to bool is x != 0,
// from bool is 0 / 1, numbers static_cast (float to int truncates toward
// zero; values out of the target's range are undefined, as in C++). The
// 16-bit floating types convert through float (exact), and to them rounds
// once to nearest even, overflowing to +-inf (float16.h).
template <typename To, typename From>
inline To ConvertValue(From x) {
  if constexpr (kIsLowPrecisionFloat<From>) {
    return ConvertValue<To>(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else {
    return static_cast<To>(x);
  }
}

template <typename T, typename Policy>
void Fill(T value, T* out, int64_t n) {
  Policy::ParallelFor(n, kMinElementsPerTask, [&](int64_t begin, int64_t end) {
    std::fill(out + begin, out + end, value);
  });
}

template <typename To, typename From, typename Policy>
void Cast(const From* x, To* out, int64_t n) {
  Policy::ParallelFor(n, kMinElementsPerTask, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = ConvertValue<To>(x[i]);
  });
}

// out = scale * x + bias if bias_after_scale, else scale * (x + bias).
// Floating T computes in T; integer T computes in double and converts back
// with static_cast.
template <typename T, typename Policy>
void Scale(const T* x, T* out, int64_t n, double scale, double bias, bool bias_after_scale) {
  using C = std::conditional_t<std::is_floating_point_v<T>, T, double>;
  const C s = static_cast<C>(scale);
  const C b = static_cast<C>(bias);
  Policy::ParallelFor(n, kMinElementsPerTask, [&](int64_t begin, int64_t end) {
    if (bias_after_scale) {
      for (int64_t i = begin; i < end; ++i) {
        out[i] = static_cast<T>(s * static_cast<C>(x[i]) + b);
      }
    } else {
      for (int64_t i = begin; i < end; ++i) {
        out[i] = static_cast<T>(s * (static_cast<C>(x[i]) + b));
      }
    }
  });
}

// out[i] = fn(x[i * sx], y[i * sy]) for i < n, strides 0 or 1 (see
// BroadcastLayout::inner_stride). Separate loops let each one vectorize.
template <typename T, typename Fn>
void BinarySegment(const T* x, int64_t sx, const T* y, int64_t sy, T* out, int64_t n, Fn fn) {
  if (sx != 0 && sy != 0) {
    for (int64_t i = 0; i < n; ++i) out[i] = fn(x[i], y[i]);
  } else if (sx != 0) {
    const T b = *y;
    for (int64_t i = 0; i < n; ++i) out[i] = fn(x[i], b);
  } else if (sy != 0) {
    const T a = *x;
    for (int64_t i = 0; i < n; ++i) out[i] = fn(a, y[i]);
  } else {
    std::fill(out, out + n, fn(*x, *y));
  }
}

// out = fn(x, y) element-wise over `layout` (operand 0: x, operand 1: y).
// `out` may alias an operand that is not broadcast.
template <typename T, typename Policy, typename Fn>
void BroadcastBinary(const BroadcastLayout& layout, const T* x, const T* y, T* out, Fn fn) {
  const int64_t sx = layout.inner_stride(0), sy = layout.inner_stride(1);
  Policy::ParallelFor(layout.num_elements(), kMinElementsPerTask, [&](int64_t begin, int64_t end) {
    ForEachSegment(layout, begin, end, [&](int64_t pos, const int64_t* in, int64_t len) {
      BinarySegment(x + in[0], sx, y + in[1], sy, out + pos, len, fn);
    });
  });
}

// out = x + y over `layout` (operand 0: x, operand 1: y).
template <typename T, typename Policy>
void BroadcastAdd(const BroadcastLayout& layout, const T* x, const T* y, T* out) {
  BroadcastBinary<T, Policy>(layout, x, y, out, Binary<BinaryOp::kAdd>());
}

// out = fn(x) element-wise over a one-operand `layout`: x broadcast to the
// layout's output shape.
template <typename T, typename Policy, typename Fn>
void BroadcastUnary(const BroadcastLayout& layout, const T* x, T* out, Fn fn) {
  const int64_t sx = layout.inner_stride(0);
  Policy::ParallelFor(layout.num_elements(), kMinElementsPerTask, [&](int64_t begin, int64_t end) {
    ForEachSegment(layout, begin, end, [&](int64_t pos, const int64_t* in, int64_t len) {
      const T* src = x + in[0];
      if (sx == 0) {
        std::fill(out + pos, out + pos + len, fn(*src));
      } else {
        for (int64_t i = 0; i < len; ++i) out[pos + i] = fn(src[i]);
      }
    });
  });
}

// out[i] = fn(x[i]) for i < n.
template <typename T, typename Policy, typename Fn>
void Map(const T* x, T* out, int64_t n, Fn fn) {
  Policy::ParallelFor(n, kMinElementsPerTask, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = fn(x[i]);
  });
}

// out[i] = fn(a[i], b[i]) for i < n.
template <typename T, typename Policy, typename Fn>
void Map2(const T* a, const T* b, T* out, int64_t n, Fn fn) {
  Policy::ParallelFor(n, kMinElementsPerTask, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = fn(a[i], b[i]);
  });
}

// The sum of the squares of `n` contiguous elements (16-bit ones widened to
// float) in double: chunks added in a fixed order, each chunk summed in 8
// interleaved lanes (element i into lane i % 8, the lanes added pairwise), so
// the adds do not wait on each other (3.4x one lane's speed on one core).
template <typename T, typename Policy>
double SumOfSquares(const T* x, int64_t n) {
  const int64_t chunks = (n + kMinElementsPerTask - 1) / kMinElementsPerTask;
  std::vector<double> partial(chunks, 0.0);
  Policy::ParallelFor(chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t lo = c * kMinElementsPerTask;
      const int64_t hi = std::min(n, lo + kMinElementsPerTask);
      double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      int64_t i = lo;
      for (; i + 8 <= hi; i += 8) {
        for (int k = 0; k < 8; ++k) {
          const double v = static_cast<double>(static_cast<ComputeTypeOf<T>>(x[i + k]));
          lanes[k] += v * v;
        }
      }
      for (int k = 0; i < hi; ++i, ++k) {
        const double v = static_cast<double>(static_cast<ComputeTypeOf<T>>(x[i]));
        lanes[k] += v * v;
      }
      partial[c] = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
                   ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    }
  });
  double total = 0;
  for (double p : partial) total += p;
  return total;
}

// The sum of `n` contiguous elements, in chunks added in a fixed order.
template <typename T, typename Policy>
AccumulatorT<T> Sum(const T* x, int64_t n) {
  using Acc = AccumulatorT<T>;
  const int64_t chunks = (n + kMinElementsPerTask - 1) / kMinElementsPerTask;
  std::vector<Acc> partial(chunks, Acc(0));
  Policy::ParallelFor(chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t lo = c * kMinElementsPerTask;
      const int64_t hi = std::min(n, lo + kMinElementsPerTask);
      Acc acc = 0;
      for (int64_t i = lo; i < hi; ++i) acc += static_cast<Acc>(x[i]);
      partial[c] = acc;
    }
  });
  Acc total = 0;
  for (Acc p : partial) total += p;
  return total;
}

// dx = dout summed over the dims along which `dx_shape` is broadcast to
// `out_shape` (the gradient of a broadcast operand). dx_shape right-aligns
// with out_shape; an empty dout gives zeros.
template <typename T, typename Policy>
void SumToShape(const T* dout, const Shape& out_shape, T* dx, const Shape& dx_shape) {
  using Acc = AccumulatorT<T>;
  const int64_t n_dx = dx_shape.num_elements();
  const int64_t n_out = out_shape.num_elements();
  if (n_dx == 0) return;
  if (n_out == 0) return Fill<T, Policy>(T(0), dx, n_dx);
  if (n_dx == n_out) {  // nothing is reduced
    Policy::ParallelFor(n_dx, kMinElementsPerTask, [&](int64_t begin, int64_t end) {
      std::copy(dout + begin, dout + end, dx + begin);
    });
    return;
  }
  if (n_dx == 1) {
    dx[0] = static_cast<T>(Sum<T, Policy>(dout, n_out));
    return;
  }
  // Split the coalesced dims into kept (dx has them, in dx's order, so a dx
  // position is a row-major index over them) and reduced ones, each with
  // its stride in dout.
  const BroadcastLayout layout(out_shape, {dx_shape});
  DimVector kept, kept_strides, reduced, reduced_strides;
  int64_t stride = n_out;
  for (int d = 0; d < layout.rank(); ++d) {
    const int64_t n = layout.dims()[d];
    stride /= n;
    const bool is_kept = layout.strides(0)[d] != 0;
    (is_kept ? kept : reduced).push_back(n);
    (is_kept ? kept_strides : reduced_strides).push_back(stride);
  }
  const int64_t per_dx = n_out / n_dx;  // elements summed into each dx
  const int64_t grain = std::max<int64_t>(1, kMinElementsPerTask / per_dx);
  if (layout.inner_stride(0) == 0) {
    // The innermost dim is reduced: each dx element sums contiguous runs.
    const int64_t run = reduced.back();
    const DimVector rows(reduced.begin(), reduced.end() - 1);
    const DimVector row_strides(reduced_strides.begin(), reduced_strides.end() - 1);
    const int64_t num_rows = per_dx / run;
    Policy::ParallelFor(n_dx, grain, [&](int64_t begin, int64_t end) {
      StridedCounter base(kept, {kept_strides}, begin);
      for (int64_t p = begin; p < end; ++p, base.Next()) {
        StridedCounter row(rows, {row_strides}, 0);
        Acc acc = 0;
        for (int64_t r = 0; r < num_rows; ++r, row.Next()) {
          const T* src = dout + base.offset(0) + row.offset(0);
          for (int64_t i = 0; i < run; ++i) acc += static_cast<Acc>(src[i]);
        }
        dx[p] = static_cast<T>(acc);
      }
    });
    return;
  }
  // The innermost dim is kept: runs of dx accumulate contiguous runs of
  // dout, one per combination of the reduced indices.
  Policy::ParallelFor(n_dx, grain, [&](int64_t begin, int64_t end) {
    std::vector<Acc> acc;
    ForEachSegment(kept, {kept_strides}, begin, end,
                   [&](int64_t pos, const int64_t* in, int64_t len) {
                     acc.assign(len, Acc(0));
                     StridedCounter red(reduced, {reduced_strides}, 0);
                     for (int64_t q = 0; q < per_dx; ++q, red.Next()) {
                       const T* src = dout + in[0] + red.offset(0);
                       for (int64_t i = 0; i < len; ++i) {
                         acc[i] += static_cast<Acc>(src[i]);
                       }
                     }
                     for (int64_t i = 0; i < len; ++i) {
                       dx[pos + i] = static_cast<T>(acc[i]);
                     }
                   });
  });
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_ELEMENTWISE_H_
