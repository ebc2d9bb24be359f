#include "framework/tensor/tensor.h"

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"

namespace tandem {

absl::StatusOr<Tensor> Tensor::Allocate(Allocator* allocator, DataType dtype,
                                        const Shape& shape) {
  ASSIGN_OR_RETURN(int64_t n, shape.NumElements());
  int64_t bytes = 0;
  if (__builtin_mul_overflow(n, static_cast<int64_t>(SizeOf(dtype)), &bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor ", DataTypeName(dtype), shape.ToString(), " overflows int64 bytes"));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer,
                   Buffer::Allocate(allocator, static_cast<size_t>(bytes)));
  return Tensor(dtype, shape, std::move(buffer));
}

Tensor::Tensor(DataType dtype, Shape shape, std::shared_ptr<Buffer> buffer)
    : dtype_(dtype), shape_(std::move(shape)), buffer_(std::move(buffer)) {
  CHECK(buffer_ == nullptr || buffer_->size() >= NumBytes())
      << "buffer of " << buffer_->size() << " bytes is too small for "
      << DebugString();
}

Tensor Tensor::Reshaped(const Shape& shape) const {
  CHECK_EQ(shape.num_elements(), NumElements())
      << "Reshaped " << shape_ << " to " << shape;
  return Tensor(dtype_, shape, buffer_);
}

std::string Tensor::DebugString() const {
  if (!initialized()) return "uninitialized";
  return absl::StrCat(DataTypeLogName(dtype_), shape_.ToString());
}

}  // namespace tandem
