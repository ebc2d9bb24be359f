// The cpu kernels: the shared kernels of backends/common (math, nn, loss,
// metric, optimizer, array, random, layout and layer ops) run with
// CpuPolicy (OpenMP threads, oneDNN sgemm for float32 matmul, mul and fc),
// oneDNN convolution and pooling for float32 (dnnl_nn_kernels.cc), and the
// host collectives (collective_kernels.h).
#include "backends/common/array_kernels.h"
#include "backends/common/collective_kernels.h"
#include "backends/common/layout_kernels.h"
#include "backends/common/loss_kernels.h"
#include "backends/common/math_kernels.h"
#include "backends/common/metric_kernels.h"
#include "backends/common/nn_kernels.h"
#include "backends/common/nn_layer_kernels.h"
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
const LayoutKernelsRegistrar<CpuPolicy> layout_kernels("cpu");
// float32 conv2d(_grad) and pool2d(_grad) run on oneDNN (dnnl_nn_kernels.cc).
const NnLayerKernelsRegistrar<CpuPolicy> nn_layer_kernels("cpu", {/*conv2d=*/{DataType::kFloat64},
                                                                  /*pool2d=*/{DataType::kFloat64}});
// c_allreduce_sum, c_broadcast, c_allgather through the in-process group.
const CollectiveKernelsRegistrar collective_kernels("cpu");

}  // namespace
}  // namespace tandem
