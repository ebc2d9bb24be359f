// The math-kernel conformance suite shared by every backend
// (backends/common/math_kernel_conformance.h) on gpu:0. Without a GPU the
// suite has no instance and nothing runs.
#include <vector>

#include "backends/common/math_kernel_conformance.h"
#include "framework/device/device_registry.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

std::vector<Place> GpuPlaces() {
  if (DeviceRegistry::Global().DeviceCount(DeviceType::GPU()) == 0) return {};
  return {GPUPlace(0)};
}

INSTANTIATE_TEST_SUITE_P(Gpu, MathKernelConformance, ::testing::ValuesIn(GpuPlaces()),
                         PlaceTestName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MathKernelConformance);

}  // namespace
}  // namespace tandem
