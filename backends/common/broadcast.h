// Loop geometry of element-wise ops whose operands are broadcast (numpy
// style) to the output: which element of each operand feeds each output
// element, with dims coalesced so the common cases become short loops.
//
//   // out = x + y, y already aligned (AlignForBroadcast) and validated
//   // (BroadcastShapes): both shapes right-align with `out`.
//   BroadcastLayout layout(out_shape, {x_shape, y_shape});
//   ForEachSegment(layout, 0, layout.num_elements(),
//                  [&](int64_t pos, const int64_t* in, int64_t len) {
//                    // out[pos + i] = x[in[0] + i * layout.inner_stride(0)]
//                    //              + y[in[1] + i * layout.inner_stride(1)]
//                  });
//
// Coalescing drops dims of size 1 and merges adjacent dims along which
// every operand is either contiguous or broadcast, so same-shape operands
// give one dim, a scalar operand one dim with stride 0, a row broadcast
// ([M, N] + [N]) two dims. Value types; thread-compatible.
#ifndef TANDEM_BACKENDS_COMMON_BROADCAST_H_
#define TANDEM_BACKENDS_COMMON_BROADCAST_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "framework/types/shape.h"

namespace tandem {

using DimVector = absl::InlinedVector<int64_t, 6>;

class BroadcastLayout {
 public:
  static constexpr int kMaxOperands = 2;

  // Every operand's dims, right-aligned with `out`, equal out's or are 1;
  // CHECK-fails otherwise (callers validate with BroadcastShapes first).
  // `out` may hold zero elements.
  BroadcastLayout(const Shape& out, absl::Span<const Shape> operands);

  // Coalesced dims, outermost first; never empty (a scalar is {1}).
  const DimVector& dims() const { return dims_; }
  int rank() const { return static_cast<int>(dims_.size()); }
  int num_operands() const { return num_operands_; }
  // Element strides of `operand` along dims(); 0 where it is broadcast.
  const DimVector& strides(int operand) const { return strides_[operand]; }
  absl::Span<const DimVector> all_strides() const {
    return absl::MakeConstSpan(strides_.data(), num_operands_);
  }
  int64_t num_elements() const { return num_elements_; }
  // Length of the innermost dim, and each operand's stride along it, which
  // is 1 (contiguous) or 0 (broadcast).
  int64_t inner() const { return dims_.back(); }
  int64_t inner_stride(int operand) const { return strides_[operand].back(); }

 private:
  DimVector dims_;
  std::array<DimVector, kMaxOperands> strides_;
  int num_operands_ = 0;
  int64_t num_elements_ = 0;
};

// Walks a row-major multi-index over `dims` and keeps, for each stride set,
// the offset sum(index[d] * strides[d]).
class StridedCounter {
 public:
  static constexpr int kMaxSets = 2;

  // Starts at linear position `start`. Each stride set has dims.size()
  // entries. Empty `dims` is a single position with offset 0.
  StridedCounter(absl::Span<const int64_t> dims, absl::Span<const DimVector> strides,
                 int64_t start);

  int64_t offset(int set) const { return offsets_[set]; }
  // Advances one position (wrapping to the start after the last).
  void Next() {
    for (int d = static_cast<int>(dims_.size()) - 1; d >= 0; --d) {
      for (int s = 0; s < num_sets_; ++s) offsets_[s] += strides_[s][d];
      if (++index_[d] < dims_[d]) return;
      for (int s = 0; s < num_sets_; ++s) offsets_[s] -= strides_[s][d] * dims_[d];
      index_[d] = 0;
    }
  }

 private:
  DimVector dims_;
  std::array<DimVector, kMaxSets> strides_;
  int num_sets_;
  DimVector index_;
  std::array<int64_t, kMaxSets> offsets_{};
};

static_assert(StridedCounter::kMaxSets >= BroadcastLayout::kMaxOperands,
              "a counter walks every operand of a layout");

// Calls fn(pos, in, len) for the linear positions [begin, end) of a
// row-major iteration over `dims`, in order, in segments that stay within
// one innermost row: positions pos..pos+len-1 are at offset
// in[s] + i * strides[s].back() of stride set s, i < len.
template <typename Fn>
void ForEachSegment(absl::Span<const int64_t> dims, absl::Span<const DimVector> strides,
                    int64_t begin, int64_t end, Fn&& fn) {
  if (begin >= end) return;
  const int64_t inner = dims.back();
  const int outer_rank = static_cast<int>(dims.size()) - 1;
  const int num_sets = static_cast<int>(strides.size());
  std::array<DimVector, StridedCounter::kMaxSets> outer_strides;
  for (int s = 0; s < num_sets; ++s) {
    outer_strides[s].assign(strides[s].begin(), strides[s].begin() + outer_rank);
  }
  StridedCounter rows(dims.first(outer_rank), absl::MakeConstSpan(outer_strides.data(), num_sets),
                      begin / inner);
  int64_t col = begin % inner;
  std::array<int64_t, StridedCounter::kMaxSets> in{};
  for (int64_t pos = begin; pos < end; col = 0, rows.Next()) {
    const int64_t len = std::min(inner - col, end - pos);
    for (int s = 0; s < num_sets; ++s) {
      in[s] = rows.offset(s) + col * strides[s].back();
    }
    fn(pos, in.data(), len);
    pos += len;
  }
}

// The same over a broadcast layout: in[k] is operand k's offset, and its
// stride within a segment is layout.inner_stride(k).
template <typename Fn>
void ForEachSegment(const BroadcastLayout& layout, int64_t begin, int64_t end, Fn&& fn) {
  ForEachSegment(layout.dims(), layout.all_strides(), begin, end, std::forward<Fn>(fn));
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_BROADCAST_H_
