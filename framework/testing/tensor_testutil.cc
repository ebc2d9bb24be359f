#include "framework/testing/tensor_testutil.h"

#include <random>

#include "framework/device/device.h"
#include "glog/logging.h"

namespace tandem {

Tensor MakeTensor(DataType dtype, const Shape& shape, const std::vector<double>& values) {
  absl::StatusOr<Tensor> t = Tensor::Allocate(CpuAllocator::Default(), dtype, shape);
  CHECK(t.ok()) << t.status();
  CHECK_EQ(static_cast<int64_t>(values.size()), t->NumElements()) << shape;
  DispatchDataType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t->data<T>();
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        p[i] = values[i] != 0;
      } else {
        p[i] = static_cast<T>(values[i]);
      }
    }
  });
  return *std::move(t);
}

std::vector<double> ToDoubles(const Tensor& t) {
  Tensor host = t;
  if (!t.place().is_host()) {
    absl::StatusOr<Tensor> copied = CopyTensorTo(t, CPUPlace());
    CHECK(copied.ok()) << copied.status();
    host = *std::move(copied);
  }
  std::vector<double> out(host.NumElements());
  DispatchDataType(host.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = host.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(p[i]);
  });
  return out;
}

std::vector<double> RandomValues(DataType dtype, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> v(n);
  for (double& x : v) {
    switch (dtype) {
      case DataType::kFloat32:
      case DataType::kFloat64:
      case DataType::kBFloat16:
      case DataType::kFloat16:
        x = std::uniform_real_distribution<double>(-2.0, 2.0)(rng);
        break;
      case DataType::kInt32:
      case DataType::kInt64:
        x = static_cast<double>(std::uniform_int_distribution<int>(-50, 50)(rng));
        break;
      case DataType::kBool:
        x = static_cast<double>(rng() & 1);
        break;
    }
  }
  return v;
}

Tensor RandomTensor(DataType dtype, const Shape& shape, uint64_t seed) {
  return MakeTensor(dtype, shape, RandomValues(dtype, shape.num_elements(), seed));
}

}  // namespace tandem
