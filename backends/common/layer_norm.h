// Loops of the layer_norm kernels: X viewed as [rows, cols], each row
// normalized on its own (ops/nn/shape_fns.h LayerNormDims).
//
//   LayerNorm<float, Policy>(x, scale, bias, rows, cols, epsilon, y, mean, var);
//   LayerNormGrad<float, Policy>(x, scale, mean, var, dy, rows, cols, epsilon,
//                                dx, dscale, dbias);   // any of the three may be null
//
// scale and bias may be null (1 and 0). Per-row statistics and the column
// sums of the gradient accumulate in AccumulatorT<T> (double for float), in
// a fixed order, so results do not depend on the policy. Pointers are to
// host-addressable memory. Functions return when the work is done and are
// thread-safe for disjoint outputs.
#ifndef TANDEM_BACKENDS_COMMON_LAYER_NORM_H_
#define TANDEM_BACKENDS_COMMON_LAYER_NORM_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "backends/common/elementwise.h"

namespace tandem {

// Per row: mean = sum(x) / cols, var = sum((x - mean)^2) / cols and
// y = (x - mean) / sqrt(var + epsilon) * scale + bias. cols > 0.
template <typename T, typename Policy>
void LayerNorm(const T* x, const T* scale, const T* bias, int64_t rows, int64_t cols,
               double epsilon, T* y, T* mean, T* var) {
  using Acc = AccumulatorT<T>;
  Policy::ParallelFor(rows, std::max<int64_t>(1, kMinElementsPerTask / cols),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t r = begin; r < end; ++r) {
                          const T* xr = x + r * cols;
                          Acc sum = 0;
                          for (int64_t j = 0; j < cols; ++j) sum += xr[j];
                          const Acc mu = sum / cols;
                          Acc sq = 0;
                          for (int64_t j = 0; j < cols; ++j) {
                            const Acc c = xr[j] - mu;
                            sq += c * c;
                          }
                          const Acc v = sq / cols;
                          const Acc inv = 1 / std::sqrt(v + static_cast<Acc>(epsilon));
                          T* yr = y + r * cols;
                          for (int64_t j = 0; j < cols; ++j) {
                            Acc out = (xr[j] - mu) * inv;
                            if (scale != nullptr) out *= scale[j];
                            if (bias != nullptr) out += bias[j];
                            yr[j] = static_cast<T>(out);
                          }
                          mean[r] = static_cast<T>(mu);
                          var[r] = static_cast<T>(v);
                        }
                      });
}

// The gradients of LayerNorm from dy, with the forward's mean and var and
// r = 1 / sqrt(var + epsilon), xhat = (x - mean) * r, g = dy * scale:
//   dx     = r * (g - mean(g) - xhat * mean(g * xhat))   per row
//   dscale = sum over rows of dy * xhat,  dbias = sum over rows of dy.
// Null outputs are not computed.
template <typename T, typename Policy>
void LayerNormGrad(const T* x, const T* scale, const T* mean, const T* var, const T* dy,
                   int64_t rows, int64_t cols, double epsilon, T* dx, T* dscale, T* dbias) {
  using Acc = AccumulatorT<T>;
  auto inv_std = [&](int64_t r) {
    return 1 / std::sqrt(static_cast<Acc>(var[r]) + static_cast<Acc>(epsilon));
  };
  if (dx != nullptr) {
    Policy::ParallelFor(
        rows, std::max<int64_t>(1, kMinElementsPerTask / cols), [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r) {
            const T* xr = x + r * cols;
            const T* dyr = dy + r * cols;
            const Acc mu = mean[r], inv = inv_std(r);
            Acc sum_g = 0, sum_gx = 0;
            for (int64_t j = 0; j < cols; ++j) {
              const Acc g = scale == nullptr ? Acc(dyr[j]) : Acc(dyr[j]) * scale[j];
              sum_g += g;
              sum_gx += g * (xr[j] - mu) * inv;
            }
            const Acc mean_g = sum_g / cols, mean_gx = sum_gx / cols;
            for (int64_t j = 0; j < cols; ++j) {
              const Acc g = scale == nullptr ? Acc(dyr[j]) : Acc(dyr[j]) * scale[j];
              const Acc xhat = (xr[j] - mu) * inv;
              dx[r * cols + j] = static_cast<T>(inv * (g - mean_g - xhat * mean_gx));
            }
          }
        });
  }
  if (dscale == nullptr && dbias == nullptr) return;
  // Column sums: each task owns a range of columns and walks the rows.
  Policy::ParallelFor(cols, std::max<int64_t>(1, kMinElementsPerTask / std::max<int64_t>(rows, 1)),
                      [&](int64_t begin, int64_t end) {
                        std::vector<Acc> s(end - begin, Acc(0)), b(end - begin, Acc(0));
                        for (int64_t r = 0; r < rows; ++r) {
                          const Acc mu = mean[r], inv = inv_std(r);
                          const T* xr = x + r * cols;
                          const T* dyr = dy + r * cols;
                          for (int64_t j = begin; j < end; ++j) {
                            s[j - begin] += Acc(dyr[j]) * ((xr[j] - mu) * inv);
                            b[j - begin] += dyr[j];
                          }
                        }
                        for (int64_t j = begin; j < end; ++j) {
                          if (dscale != nullptr) dscale[j] = static_cast<T>(s[j - begin]);
                          if (dbias != nullptr) dbias[j] = static_cast<T>(b[j - begin]);
                        }
                      });
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_LAYER_NORM_H_
