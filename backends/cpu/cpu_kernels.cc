// The cpu kernels: the shared kernels of backends/common (math, nn, loss,
// metric, optimizer, array, random, layout and layer ops) run with
// CpuPolicy (OpenMP threads, oneDNN sgemm for float32 matmul, mul and fc),
// oneDNN convolution and pooling for float32 (dnnl_nn_kernels.cc), and the
// host collectives (collective_kernels.h).
#include "backends/common/host_kernels.h"
#include "backends/cpu/cpu_policy.h"

namespace tandem {
namespace {

// float32 conv2d(_grad) and pool2d(_grad) run on oneDNN (dnnl_nn_kernels.cc).
const HostKernelsRegistrar<CpuPolicy> host_kernels(
    "cpu", {/*conv2d=*/{DataType::kFloat64, DataType::kBFloat16, DataType::kFloat16},
            /*pool2d=*/{DataType::kFloat64}});

}  // namespace
}  // namespace tandem
