// A tensor viewed as [outer, n, inner] around one axis: outer * inner
// lines of n elements each (stride `inner` apart), which kernels that work
// along an axis (l2_normalize, softmax) process independently.
//
//   const AxisLines lines = AxisLines::Around(Shape({2, 3, 4}), 1);  // 8 lines of 3
//   for (int64_t k = 0; k < lines.n; ++k) x[lines.Start(line) + k * lines.inner];
//
// Value type; thread-compatible.
#ifndef TANDEM_BACKENDS_COMMON_AXIS_LINES_H_
#define TANDEM_BACKENDS_COMMON_AXIS_LINES_H_

#include <cstdint>

#include "framework/types/shape.h"

namespace tandem {

struct AxisLines {
  int64_t outer = 1, n = 1, inner = 1;

  // `axis` in [0, rank) (NormalizeAxis).
  static AxisLines Around(const Shape& shape, int axis) {
    AxisLines l;
    for (int d = 0; d < shape.rank(); ++d) {
      (d < axis ? l.outer : d == axis ? l.n : l.inner) *= shape.dim(d);
    }
    return l;
  }
  int64_t num_lines() const { return outer * inner; }
  // Offset of element 0 of line `line`; element k is at Start + k * inner.
  int64_t Start(int64_t line) const { return (line / inner) * n * inner + line % inner; }
};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_AXIS_LINES_H_
