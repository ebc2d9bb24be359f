#include "framework/tensor/selected_rows.h"

#include "absl/strings/str_cat.h"

namespace tandem {

Shape SelectedRows::DenseShape() const {
  Shape s = value_.shape();
  if (s.rank() == 0) return Shape({height_});
  s.set_dim(0, height_);
  return s;
}

absl::Status SelectedRows::Validate() const {
  if (value_.shape().rank() == 0 || value_.shape().dim(0) != static_cast<int64_t>(rows_.size())) {
    return absl::InvalidArgumentError(absl::StrCat("SelectedRows: value shape ",
                                                   value_.shape().ToString(), " does not have ",
                                                   rows_.size(), " rows"));
  }
  const int64_t bad = FirstOutOfRange(rows_.data(), static_cast<int64_t>(rows_.size()), height_);
  if (bad >= 0) {
    return absl::InvalidArgumentError(absl::StrCat("SelectedRows: row index ", rows_[bad],
                                                   " at position ", bad, " is outside [0, ",
                                                   height_, ")"));
  }
  return absl::OkStatus();
}

}  // namespace tandem
