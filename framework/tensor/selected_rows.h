// SelectedRows: a sparse tensor of whole rows, used for embedding gradients.
//
//   // Gradient of a [height, 150] table touched at rows {7, 3, 7}:
//   SelectedRows g(/*height=*/1000, /*rows=*/{7, 3, 7}, value /*[3, 150]*/);
//
// Row i of `value` belongs to table row rows()[i]; rows may repeat (their
// contributions add). Value semantics like Tensor; not thread-safe to mutate.
#ifndef TANDEM_FRAMEWORK_TENSOR_SELECTED_ROWS_H_
#define TANDEM_FRAMEWORK_TENSOR_SELECTED_ROWS_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "framework/tensor/tensor.h"

namespace tandem {

// The position of the first of ids[0..n) outside [0, height), or -1 (row
// indices of a SelectedRows, ids of an embedding lookup).
// Checks blocks of ids without branches (the loop vectorizes), then finds
// the position within the first bad block.
inline int64_t FirstOutOfRange(const int64_t* ids, int64_t n, int64_t height) {
  constexpr int64_t kBlock = 512;
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    const int64_t end = std::min(n, begin + kBlock);
    uint64_t bad = 0;  // negative ids become huge unsigned ones
    for (int64_t i = begin; i < end; ++i) {
      bad |= static_cast<uint64_t>(static_cast<uint64_t>(ids[i]) >= static_cast<uint64_t>(height));
    }
    if (bad == 0) continue;
    for (int64_t i = begin; i < end; ++i) {
      if (ids[i] < 0 || ids[i] >= height) return i;
    }
  }
  return -1;
}

class SelectedRows {
 public:
  SelectedRows() = default;
  SelectedRows(int64_t height, std::vector<int64_t> rows, Tensor value)
      : height_(height), rows_(std::move(rows)), value_(std::move(value)) {}

  int64_t height() const { return height_; }
  const std::vector<int64_t>& rows() const { return rows_; }
  const Tensor& value() const { return value_; }
  Tensor* mutable_value() { return &value_; }

  // The dense shape this represents: [height, value dims 1..].
  Shape DenseShape() const;
  // InvalidArgument if value's first dim differs from rows().size() or a row
  // index is outside [0, height); names the position and the index.
  absl::Status Validate() const;

 private:
  int64_t height_ = 0;
  std::vector<int64_t> rows_;
  Tensor value_;
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_TENSOR_SELECTED_ROWS_H_
