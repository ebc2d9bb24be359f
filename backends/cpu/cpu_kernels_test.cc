// The cpu kernels: registered when //backends/cpu is linked, and conformant
// (backends/common/math_kernel_conformance.h) on the host.
#include "backends/common/math_kernel_conformance.h"
#include "framework/place/place.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

INSTANTIATE_TEST_SUITE_P(Cpu, MathKernelConformance, ::testing::Values(CPUPlace()), PlaceTestName);

}  // namespace
}  // namespace tandem
