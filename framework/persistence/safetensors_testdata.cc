#include "framework/persistence/safetensors_testdata.h"

#include <cstdint>

namespace tandem {

std::vector<std::pair<std::string, Tensor>> InteropTensors() {
  std::vector<float> emb(12);
  for (int i = 0; i < 12; ++i) emb[i] = i * 0.5f - 1.0f;
  return {
      {"emb_w", Tensor::FromVector<float>({4, 3}, emb)},
      {"fc_b", Tensor::FromVector<double>({2}, {0.1, -3e200})},
      {"step", Tensor::Scalar<int64_t>((int64_t{1} << 40) + 3)},
      {"ids", Tensor::FromVector<int32_t>({3}, {-1, 0, 2147483647})},
      {"mask", Tensor::FromVector<bool>({2, 2}, {true, false, false, true})},
      {"empty", Tensor::FromVector<float>({0, 4}, {})},
  };
}

std::map<std::string, std::string> InteropMetadata() {
  return {{"format", "pt"}, {"producer", "tandem"}};
}

}  // namespace tandem
