// The cpu kernels: the shared kernels of backends/common (math, nn, loss,
// metric, optimizer, array and random ops) run with CpuPolicy (OpenMP
// threads, oneDNN sgemm for float32 matmul, mul and fc).
#include "backends/common/array_kernels.h"
#include "backends/common/loss_kernels.h"
#include "backends/common/math_kernels.h"
#include "backends/common/metric_kernels.h"
#include "backends/common/nn_kernels.h"
#include "backends/common/optimizer_kernels.h"
#include "backends/common/random_kernels.h"
#include "backends/cpu/cpu_policy.h"

namespace tandem {
namespace {

const MathKernelsRegistrar<CpuPolicy> math_kernels("cpu");
const NnKernelsRegistrar<CpuPolicy> nn_kernels("cpu");
const LossKernelsRegistrar<CpuPolicy> loss_kernels("cpu");
const OptimizerKernelsRegistrar<CpuPolicy> optimizer_kernels("cpu");
const ArrayKernelsRegistrar<CpuPolicy> array_kernels("cpu");
const RandomKernelsRegistrar<CpuPolicy> random_kernels("cpu");
const MetricKernelsRegistrar<CpuPolicy> metric_kernels("cpu");

}  // namespace
}  // namespace tandem
