#include "examples/common/example_util.h"

#include <algorithm>

#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "gflags/gflags.h"

DEFINE_bool(cuda_graph, false,
            "Capture the training step once as a device graph (CUDA graph on gpu) and replay it.");

namespace tandem {

ExecutorOptions ExampleExecutorOptions() {
  ExecutorOptions options;
  options.capture_graphs = FLAGS_cuda_graph;
  return options;
}

absl::StatusOr<Place> ChooseDefaultPlace(const std::string& flag) {
  if (flag.empty()) {
    return DeviceRegistry::Global().DeviceCount(DeviceType::GPU()) > 0 ? GPUPlace(0) : CPUPlace();
  }
  ASSIGN_OR_RETURN(Place place, ParsePlace(flag));
  RETURN_IF_ERROR(DeviceRegistry::Global().GetDevice(place).status());
  return place;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace tandem
