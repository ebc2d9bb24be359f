// SelectedRows: a sparse tensor of whole rows, used for embedding gradients.
//
//   // Gradient of a [height, 150] table touched at rows {7, 3, 7}:
//   SelectedRows g(/*height=*/1000, /*rows=*/{7, 3, 7}, value /*[3, 150]*/);
//
// Row i of `value` belongs to table row rows()[i]; rows may repeat (their
// contributions add). Value semantics like Tensor; not thread-safe to mutate.
#ifndef TANDEM_FRAMEWORK_TENSOR_SELECTED_ROWS_H_
#define TANDEM_FRAMEWORK_TENSOR_SELECTED_ROWS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "framework/tensor/tensor.h"

namespace tandem {

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
