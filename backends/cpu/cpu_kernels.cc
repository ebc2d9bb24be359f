// The cpu kernels: the shared math kernels (backends/common/math_kernels.h)
// run with CpuPolicy (OpenMP threads, oneDNN sgemm for float32 matmul).
#include "backends/common/math_kernels.h"
#include "backends/cpu/cpu_policy.h"

namespace tandem {
namespace {

const MathKernelsRegistrar<CpuPolicy> math_kernels("cpu");

}  // namespace
}  // namespace tandem
