// Row loops over [rows, width] tables, shared by the embedding and sparse
// update kernels (lookup_table, lookup_table_grad, sgd):
//
//   int64_t bad = FirstOutOfRange(ids, n, rows);           // -1: all valid
//   CopyRows<float, Policy>(n, width, [&](int64_t i) { return table + ids[i] * width; }, out);
//   ScatterAddRows<float, Policy>(ids, n, grads, width, -lr, table, rows);
//
// Pointers are to host-addressable memory; callers validate row indices
// first. Functions return when the work is done. Results do not depend on
// the policy: every output element is computed by one task, in a fixed
// order.
#ifndef TANDEM_BACKENDS_COMMON_ROWS_H_
#define TANDEM_BACKENDS_COMMON_ROWS_H_

#include <algorithm>
#include <cstdint>

#include "backends/common/elementwise.h"

namespace tandem {

// The position of the first of ids[0..n) outside [0, height), or -1.
inline int64_t FirstOutOfRange(const int64_t* ids, int64_t n, int64_t height) {
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= height) return i;
  }
  return -1;
}

// Row i of `out` ([n, width]) = the `width` elements at source(i), or zeros
// where source(i) is nullptr.
template <typename T, typename Policy, typename Source>
void CopyRows(int64_t n, int64_t width, Source&& source, T* out) {
  if (width == 0) return;
  Policy::ParallelFor(n, std::max<int64_t>(1, kMinElementsPerTask / width),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t i = begin; i < end; ++i) {
                          const T* src = source(i);
                          T* dst = out + i * width;
                          if (src == nullptr) {
                            std::fill(dst, dst + width, T(0));
                          } else {
                            std::copy(src, src + width, dst);
                          }
                        }
                      });
}

// table[rows[i], :] += scale * values[i, :] for i < n, where `table` is
// [height, width] and every row index is in [0, height). Duplicate rows
// accumulate in the order of i. Race-free on any number of threads: each
// task owns a range of table rows and applies, in order, the updates that
// fall in it (so every task reads all n indices, a small cost next to the
// width-long updates).
template <typename T, typename Policy>
void ScatterAddRows(const int64_t* rows, int64_t n, const T* values, int64_t width, T scale,
                    T* table, int64_t height) {
  const int64_t work = n * width;
  if (work == 0) return;
  // About one task per kMinElementsPerTask elements of updates, assuming
  // rows spread over the table.
  const int64_t tasks = std::max<int64_t>(1, work / kMinElementsPerTask);
  Policy::ParallelFor(height, std::max<int64_t>(1, height / tasks), [&](int64_t lo, int64_t hi) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = rows[i];
      if (r < lo || r >= hi) continue;
      const T* v = values + i * width;
      T* dst = table + r * width;
      for (int64_t j = 0; j < width; ++j) dst[j] += scale * v[j];
    }
  });
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_ROWS_H_
