// Every device-independent kernel family (backends/common/*_kernels.h)
// registered for one backend whose memory the host can address, in one line
// of the backend's kernel .cc file (whose cc_library has alwayslink = True):
//
//   // backends/sim/sim_kernels.cc, in an anonymous namespace
//   const HostKernelsRegistrar<SerialPolicy> host_kernels("sim");
//   // backends/cpu: float32 conv2d and pool2d come from oneDNN instead
//   const HostKernelsRegistrar<CpuPolicy> host_kernels("cpu", {{DataType::kFloat64},
//                                                              {DataType::kFloat64}});
//
// Each kernel class carries its registration line (the contract: op, device
// type, dtypes, host-memory arguments) as a static Contract beside it; each
// family's Register<Family>Kernels function lists its classes
// (RegisterByContract, framework/kernel/kernel_registry.h); this calls them
// all during static initialisation.
#ifndef TANDEM_BACKENDS_COMMON_HOST_KERNELS_H_
#define TANDEM_BACKENDS_COMMON_HOST_KERNELS_H_

#include <string>

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

namespace tandem {

template <typename Policy>
struct HostKernelsRegistrar {
  // `nn_layer_types`: the dtypes of conv2d and pool2d to register (a backend
  // with its own float32 kernels of them leaves those out).
  explicit HostKernelsRegistrar(const std::string& device_type,
                                const NnLayerKernelTypes& nn_layer_types = NnLayerKernelTypes()) {
    RegisterMathKernels<Policy>(device_type);
    RegisterNnKernels<Policy>(device_type);
    RegisterLossKernels<Policy>(device_type);
    RegisterOptimizerKernels<Policy>(device_type);
    RegisterArrayKernels<Policy>(device_type);
    RegisterRandomKernels<Policy>(device_type);
    RegisterMetricKernels<Policy>(device_type);
    RegisterLayoutKernels<Policy>(device_type);
    RegisterNnLayerKernels<Policy>(device_type, nn_layer_types);
    RegisterCollectiveKernels(device_type);  // through the in-process group
  }
};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_HOST_KERNELS_H_
