// Tensor: a shape, a data type and a refcounted Buffer on some Place.
//
//   ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(device->allocator(),
//                                               DataType::kFloat32, {2, 3}));
//   Tensor h = Tensor::FromVector<float>({2}, {1.f, 2.f});  // host tensor
//   float* p = h.data<float>();
//   std::vector<float> v = h.ToVector<float>();             // host only
//
// Copying a Tensor shares its buffer (like a shared_ptr); use
// framework/device copies to move data between places. Not thread-safe to
// mutate one Tensor object from several threads; the buffer's data is
// synchronised by the stream that writes it.
#ifndef TANDEM_FRAMEWORK_TENSOR_TENSOR_H_
#define TANDEM_FRAMEWORK_TENSOR_TENSOR_H_

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "glog/logging.h"
#include "framework/memory/allocator.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/place/place.h"
#include "framework/types/data_type.h"
#include "framework/types/shape.h"

namespace tandem {

class Tensor {
 public:
  Tensor() = default;  // uninitialized: no buffer, dtype float32, scalar shape

  // Allocates an uninitialised tensor. InvalidArgument for a bad shape,
  // ResourceExhausted (from the allocator) when memory is short.
  static absl::StatusOr<Tensor> Allocate(Allocator* allocator, DataType dtype,
                                         const Shape& shape);
  // Wraps an existing buffer that holds at least the tensor's bytes.
  Tensor(DataType dtype, Shape shape, std::shared_ptr<Buffer> buffer);

  // Host tensor with the given values; CHECK-fails if sizes disagree (a bug).
  template <typename T>
  static Tensor FromVector(const Shape& shape, const std::vector<T>& values);
  // Host scalar (rank 0).
  template <typename T>
  static Tensor Scalar(T value) {
    return FromVector<T>(Shape(), {value});
  }

  bool initialized() const { return buffer_ != nullptr; }
  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  Place place() const { return buffer_ ? buffer_->place() : CPUPlace(); }
  int64_t NumElements() const { return shape_.num_elements(); }
  size_t NumBytes() const { return NumElements() * SizeOf(dtype_); }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }

  void* raw_data() const { return buffer_ ? buffer_->data() : nullptr; }
  template <typename T>
  T* data() const {
    CHECK(DataTypeOf<T>() == dtype_)
        << "tensor is " << dtype_ << ", accessed as " << DataTypeOf<T>();
    return static_cast<T*>(raw_data());
  }

  // Same buffer, new shape with the same element count (CHECKed).
  Tensor Reshaped(const Shape& shape) const;

  // Host tensors only (CHECKed).
  template <typename T>
  std::vector<T> ToVector() const;

  // "float[1, 3, 5, 5]" (reference log style), "uninitialized" if empty.
  std::string DebugString() const;

 private:
  DataType dtype_ = DataType::kFloat32;
  Shape shape_;
  std::shared_ptr<Buffer> buffer_;
};

template <typename T>
Tensor Tensor::FromVector(const Shape& shape, const std::vector<T>& values) {
  absl::StatusOr<Tensor> t =
      Allocate(CpuAllocator::Default(), DataTypeOf<T>(), shape);
  CHECK(t.ok()) << t.status();
  CHECK_EQ(static_cast<int64_t>(values.size()), t->NumElements())
      << "FromVector: " << values.size() << " values for shape " << shape;
  if (!values.empty()) {
    if constexpr (std::is_same_v<T, bool>) {
      for (size_t i = 0; i < values.size(); ++i) t->data<bool>()[i] = values[i];
    } else {
      std::memcpy(t->raw_data(), values.data(), values.size() * sizeof(T));
    }
  }
  return *std::move(t);
}

template <typename T>
std::vector<T> Tensor::ToVector() const {
  CHECK(place().is_host()) << "ToVector on a " << place() << " tensor";
  const T* p = data<T>();
  return std::vector<T>(p, p + NumElements());
}

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_TENSOR_TENSOR_H_
