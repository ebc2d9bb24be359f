#include "examples/common/example_util.h"

#include <algorithm>

#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "gflags/gflags.h"

DEFINE_bool(cuda_graph, false,
            "Capture the training step once as a device graph (CUDA graph on gpu) and replay it.");
DEFINE_bool(in_order, false,
            "Run each plan's steps one at a time in program order on the calling thread "
            "(ExecutorOptions::in_order, the debugging mode). Default: concurrent, host steps "
            "between device steps while the devices work through their streams.");
DEFINE_bool(check_numerics, false,
            "Stop at the first op whose output holds a NaN or an infinity, naming the op, the "
            "output and the first bad index (ExecutorOptions::check_numerics; runs in order, "
            "slow).");

namespace tandem {

ExecutorOptions ExampleExecutorOptions() {
  ExecutorOptions options;
  options.capture_graphs = FLAGS_cuda_graph;
  options.in_order = FLAGS_in_order;
  options.check_numerics = FLAGS_check_numerics;
  return options;
}

std::string ExecutorMode(const ExecutorOptions& options) {
  if (options.check_numerics) return "in-order, checking numerics";
  return options.in_order ? "in-order" : "concurrent";
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
