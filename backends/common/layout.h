// Element moves of transpose, concat and split and of their gradients:
// (transpose, concat, split) and their gradients:
//
//   Transpose<float, Policy>(x, x_shape, /*axis=*/{1, 0}, out);
//   ASSIGN_OR_RETURN(AxisPieces p, ConcatGeometry("concat", shapes, axis));
//   JoinPieces<float, Policy>(p, {a, b}, out);       // out = concat(a, b)
//   CutPieces<float, Policy>(p, out, {da, nullptr}); // da = the first piece
//
// Pointers are to host-addressable memory; shapes and attrs were validated
// by ops/array/shape_fns.h and hold no unknown dims. Functions return when
// the work is done; every output element is written by one task.
#ifndef TANDEM_BACKENDS_COMMON_LAYOUT_H_
#define TANDEM_BACKENDS_COMMON_LAYOUT_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "backends/common/broadcast.h"
#include "backends/common/elementwise.h"
#include "framework/types/shape.h"
#include "ops/array/shape_fns.h"

namespace tandem {
namespace layout_internal {

// Out's dims and the matching element strides in x, with size-1 dims
// dropped and out dims that stay adjacent in x merged; never empty.
inline void TransposeLoops(const Shape& x_shape, absl::Span<const int64_t> axis, DimVector* dims,
                           DimVector* strides) {
  std::vector<int64_t> x_strides(x_shape.rank(), 1);
  for (int d = x_shape.rank() - 2; d >= 0; --d) {
    x_strides[d] = x_strides[d + 1] * x_shape.dim(d + 1);
  }
  for (int64_t a : axis) {
    const int64_t size = x_shape.dim(a);
    if (size == 1) continue;
    if (!dims->empty() && strides->back() == x_strides[a] * size) {
      dims->back() *= size;  // the previous out dim steps over this one whole
      strides->back() = x_strides[a];
    } else {
      dims->push_back(size);
      strides->push_back(x_strides[a]);
    }
  }
  if (dims->empty()) {
    dims->push_back(1);
    strides->push_back(1);
  }
}

}  // namespace layout_internal

// out = x transposed by `axis` (a permutation of x's dims): out.dim(k) =
// x.dim(axis[k]), out row-major.
template <typename T, typename Policy>
void Transpose(const T* x, const Shape& x_shape, absl::Span<const int64_t> axis, T* out) {
  const int64_t n = x_shape.num_elements();
  if (n == 0) return;
  DimVector dims, strides;
  layout_internal::TransposeLoops(x_shape, axis, &dims, &strides);
  const DimVector sets[] = {strides};
  const int64_t inner_stride = strides.back();
  Policy::ParallelFor(n, kMinElementsPerTask, [&](int64_t begin, int64_t end) {
    ForEachSegment(dims, sets, begin, end, [&](int64_t pos, const int64_t* in, int64_t len) {
      const T* src = x + in[0];
      T* dst = out + pos;
      if (inner_stride == 1) {
        std::copy(src, src + len, dst);
      } else {
        for (int64_t i = 0; i < len; ++i) dst[i] = src[i * inner_stride];
      }
    });
  });
}

// whole = the pieces of `p` joined along p.axis; a null piece gives zeros.
template <typename T, typename Policy>
void JoinPieces(const AxisPieces& p, absl::Span<const T* const> pieces, T* whole) {
  int64_t row = 0;
  for (int64_t s : p.sizes) row += s * p.inner;
  if (row == 0 || p.outer == 0) return;
  Policy::ParallelFor(p.outer, std::max<int64_t>(1, kMinElementsPerTask / row),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t r = begin; r < end; ++r) {
                          T* dst = whole + r * row;
                          for (size_t i = 0; i < pieces.size(); ++i) {
                            const int64_t len = p.sizes[i] * p.inner;
                            if (pieces[i] == nullptr) {
                              std::fill(dst, dst + len, T(0));
                            } else {
                              std::copy(pieces[i] + r * len, pieces[i] + (r + 1) * len, dst);
                            }
                            dst += len;
                          }
                        }
                      });
}

// Each non-null piece of `p` = its part of whole.
template <typename T, typename Policy>
void CutPieces(const AxisPieces& p, const T* whole, absl::Span<T* const> pieces) {
  int64_t row = 0;
  for (int64_t s : p.sizes) row += s * p.inner;
  if (row == 0 || p.outer == 0) return;
  Policy::ParallelFor(p.outer, std::max<int64_t>(1, kMinElementsPerTask / row),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t r = begin; r < end; ++r) {
                          const T* src = whole + r * row;
                          for (size_t i = 0; i < pieces.size(); ++i) {
                            const int64_t len = p.sizes[i] * p.inner;
                            if (pieces[i] != nullptr) {
                              std::copy(src, src + len, pieces[i] + r * len);
                            }
                            src += len;
                          }
                        }
                      });
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_LAYOUT_H_
