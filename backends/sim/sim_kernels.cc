// The sim kernels: the shared math kernels of backends/common, registered
// for "sim" and run single-threaded (SerialPolicy), like a device executing
// one kernel at a time. They read and write sim memory only: the runner
// checks that inputs are on the sim place (KernelContext::CheckInputPlaces)
// and outputs come from the device's allocator. A backend with its own
// threading or GEMM would pass its own policy instead (see backends/cpu).
#include "backends/common/math_kernels.h"
#include "backends/common/serial_policy.h"

namespace tandem {
namespace {

const MathKernelsRegistrar<SerialPolicy> math_kernels("sim");

}  // namespace
}  // namespace tandem
