#include "tests/conformance/case_util.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "framework/testing/tensor_testutil.h"

namespace tandem::case_util {

void SetTolerance(ConformanceCase* c, DataType t, int64_t reduction) {
  if (t == DataType::kFloat32) {
    c->rtol = 2e-6 * std::max<int64_t>(reduction, 1) + 1e-6;
    c->atol = 1e-5 * std::max<int64_t>(reduction, 1);
  } else if (t == DataType::kFloat64) {
    c->rtol = 1e-13 * std::max<int64_t>(reduction, 1);
    c->atol = 1e-13 * std::max<int64_t>(reduction, 1);
  } else if (t == DataType::kBFloat16) {
    c->rtol = 0x1p-7;
    c->atol = 1e-5 * std::max<int64_t>(reduction, 1);
  } else if (t == DataType::kFloat16) {
    c->rtol = 0x1p-10;
    c->atol = 1e-5 * std::max<int64_t>(reduction, 1);
  }
}

std::pair<Tensor, reference::Array> Input(DataType t, const Shape& s, uint64_t seed) {
  Tensor tensor = RandomTensor(t, s, seed);
  return {tensor, reference::Array{s, ToDoubles(tensor)}};
}

std::string Label(const std::string& op, DataType t, const std::string& what) {
  return absl::StrCat(op, " ", DataTypeName(t), " ", what);
}

ConformanceCase WithLowPrecisionGrad(const ConformanceCase& c, DataType grad_type,
                                     reference::Array* grad) {
  ConformanceCase s = c;
  s.label += absl::StrCat(" Grad ", DataTypeName(grad_type));
  for (auto& [arg, tensor] : s.inputs) {
    if (arg != "Grad") continue;
    tensor = MakeTensor(grad_type, tensor.shape(), ToDoubles(tensor));
    *grad = reference::Array{tensor.shape(), ToDoubles(tensor)};
  }
  return s;
}

const std::vector<BroadcastConfig>& BroadcastConfigs() {
  static const auto* configs = new std::vector<BroadcastConfig>{
      {Shape({1023}), Shape({1023}), -1},       // same shape, odd size
      {Shape({2, 3, 4}), Shape({4}), -1},       // row broadcast
      {Shape({4, 1, 5}), Shape({3, 1}), -1},    // both sides broadcast
      {Shape({2}), Shape({3, 2}), -1},          // X broadcast
      {Shape(), Shape(), -1},                   // 0-d
      {Shape(), Shape({2, 3}), -1},             // scalar X
      {Shape({2, 3}), Shape(), -1},             // scalar Y
      {Shape({0, 3}), Shape({3}), -1},          // empty
      {Shape({2, 3, 4}), Shape({3}), 1},        // axis alignment
      {Shape({2, 3, 4}), Shape({2, 3}), 0},     // axis 0
      {Shape({257, 65}), Shape({257, 1}), -1},  // column broadcast, odd
      {Shape({300, 257}), Shape({257}), -1},    // split across threads
  };
  return *configs;
}

}  // namespace tandem::case_util
