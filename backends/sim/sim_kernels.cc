// The sim kernels: the shared kernels of backends/common (math, nn, loss,
// metric, optimizer, array, random, layout and layer ops), registered for
// "sim" and run single-threaded (SerialPolicy), like a device executing one
// kernel at a time. They read and write sim memory only: the runner
// checks that inputs are on the sim place (KernelContext::CheckInputPlaces)
// and outputs come from the device's allocator. A backend with its own
// threading or GEMM would pass its own policy instead (see backends/cpu).
#include "backends/common/array_kernels.h"
#include "backends/common/layout_kernels.h"
#include "backends/common/loss_kernels.h"
#include "backends/common/math_kernels.h"
#include "backends/common/metric_kernels.h"
#include "backends/common/nn_kernels.h"
#include "backends/common/nn_layer_kernels.h"
#include "backends/common/optimizer_kernels.h"
#include "backends/common/random_kernels.h"
#include "backends/common/serial_policy.h"

namespace tandem {
namespace {

const MathKernelsRegistrar<SerialPolicy> math_kernels("sim");
const NnKernelsRegistrar<SerialPolicy> nn_kernels("sim");
const LossKernelsRegistrar<SerialPolicy> loss_kernels("sim");
const OptimizerKernelsRegistrar<SerialPolicy> optimizer_kernels("sim");
const ArrayKernelsRegistrar<SerialPolicy> array_kernels("sim");
const RandomKernelsRegistrar<SerialPolicy> random_kernels("sim");
const MetricKernelsRegistrar<SerialPolicy> metric_kernels("sim");
const LayoutKernelsRegistrar<SerialPolicy> layout_kernels("sim");
const NnLayerKernelsRegistrar<SerialPolicy> nn_layer_kernels("sim");

}  // namespace
}  // namespace tandem
