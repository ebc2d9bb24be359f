#include "examples/common/example_util.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "framework/autoplace/auto_placement.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "framework/estimate/placement_dot.h"
#include "gflags/gflags.h"

DEFINE_bool(cuda_graph, false,
            "Capture the training step's device work once as device graphs (CUDA graphs on gpu), "
            "one per segment of device work between host steps, and replay them; host steps run "
            "eagerly between the launches.");
DEFINE_bool(in_order, false,
            "Run each plan's steps one at a time in program order on the calling thread "
            "(ExecutorOptions::in_order, the debugging mode). Default: concurrent, host steps "
            "between device steps while the devices work through their streams.");
DEFINE_bool(fuse_patterns, false,
            "Fuse known op patterns at Prepare (ExecutorOptions::fuse_patterns: "
            "l2_normalize -> square_error_cost -> mean and its backward, one op each way).");
DEFINE_bool(check_numerics, false,
            "Stop at the first op whose output holds a NaN or an infinity, naming the op, the "
            "output and the first bad index (ExecutorOptions::check_numerics; runs in order, "
            "slow).");

DEFINE_bool(auto_place, false,
            "Automatic placement (MakeAutoPlacer as ExecutorOptions::placement_planner): every op "
            "without "
            "device_guard goes to the CPU or the default device, for the smallest estimated step "
            "time with the device's estimated peak memory within --memory_budget_mb; the "
            "placement table says why for each op.");
DEFINE_int64(memory_budget_mb, 0,
             "With --auto_place: MiB the default device may hold at the plan's estimated peak "
             "(0: what it can hold now, less a margin).");
DEFINE_bool(print_placement, false,
            "Print the placement table: each op's place, the rule that chose it and why, the "
            "auto placement's summary, and the memory estimate per place.");
DEFINE_string(placement_dot, "",
              "Write the training plan's placement as a Graphviz graph to this file (ops "
              "coloured by place, copies as red edges labelled with bytes): "
              "dot -Tsvg FILE > split.svg");
DEFINE_string(cost_cache_dir, tandem::DefaultCostCacheDir(),
              "Where the cost model keeps its measured op times per device (\"\": in memory "
              "only).");

namespace tandem {

int64_t MemoryBudgetBytesFlag() {
  const int64_t max_mb = std::numeric_limits<int64_t>::max() >> 20;
  return FLAGS_memory_budget_mb > max_mb || FLAGS_memory_budget_mb < -max_mb
             ? (FLAGS_memory_budget_mb < 0 ? -1 : std::numeric_limits<int64_t>::max())
             : FLAGS_memory_budget_mb * (int64_t{1} << 20);
}

std::shared_ptr<PlacementPlanner> ExampleAutoPlacer(bool moves_persistables) {
  return MakeAutoPlacer({.budget_bytes = MemoryBudgetBytesFlag(),
                         .move_persistables = moves_persistables,
                         .cost_cache_dir = FLAGS_cost_cache_dir});
}

ExecutorOptions ExampleExecutorOptions(bool auto_moves_persistables) {
  ExecutorOptions options;
  options.capture_graphs = FLAGS_cuda_graph;
  options.in_order = FLAGS_in_order;
  options.check_numerics = FLAGS_check_numerics;
  options.fuse_patterns = FLAGS_fuse_patterns;
  if (FLAGS_auto_place) options.placement_planner = ExampleAutoPlacer(auto_moves_persistables);
  return options;
}

bool AutoPlaceRequested() { return FLAGS_auto_place; }

std::string GraphLaunchesPerStep(const RunStats& stats) {
  if (!FLAGS_cuda_graph) return "";
  return absl::StrCat("  launches/step: ", stats.graph_launches, " graphs + ",
                      stats.ungraphed_device_steps, " device steps outside graphs");
}

std::string GraphSummaryLine(const Plan& plan) {
  if (!FLAGS_cuda_graph) return "";
  return absl::StrCat("cuda graphs: ", plan.graph_fallback_reason().empty()
                                           ? plan.graph_summary()
                                           : absl::StrCat("none, the plan runs eagerly: ",
                                                          plan.graph_fallback_reason()));
}

absl::Status CheckPlacementFlags() {
  if (FLAGS_memory_budget_mb < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--memory_budget_mb must be >= 0 (0: what the device can hold), got ",
                     FLAGS_memory_budget_mb));
  }
  if (FLAGS_memory_budget_mb > 0 && !FLAGS_auto_place) {
    return absl::InvalidArgumentError("--memory_budget_mb needs --auto_place");
  }
  return absl::OkStatus();
}

absl::Status ReportPlacement(const Plan& plan) {
  if (FLAGS_print_placement) std::printf("%s", plan.PlacementTable().c_str());
  if (FLAGS_placement_dot.empty()) return absl::OkStatus();
  std::ofstream out(FLAGS_placement_dot);
  out << PlacementDot(plan.placed(), &plan.MemoryEstimate());
  out.close();
  if (!out) {
    return absl::PermissionDeniedError(
        absl::StrCat("--placement_dot: cannot write '", FLAGS_placement_dot, "'"));
  }
  std::printf("placement graph: %s (dot -Tsvg %s > split.svg)\n", FLAGS_placement_dot.c_str(),
              FLAGS_placement_dot.c_str());
  return absl::OkStatus();
}

std::string ExecutorMode(const ExecutorOptions& options) {
  std::string mode = options.check_numerics ? "in-order, checking numerics"
                     : options.in_order     ? "in-order"
                                            : "concurrent";
  if (options.placement_planner != nullptr && FLAGS_auto_place) {
    absl::StrAppend(&mode, ", auto placement",
                    FLAGS_memory_budget_mb > 0
                        ? absl::StrCat(" within ", MemoryBudgetBytesFlag() >> 20, " MiB")
                        : "");
  }
  return mode;
}

absl::StatusOr<Place> ChooseDefaultPlace(const std::string& flag) {
  if (flag.empty()) {
    return DeviceRegistry::Global().DeviceCount(DeviceType::GPU()) > 0 ? GPUPlace(0) : CPUPlace();
  }
  ASSIGN_OR_RETURN(Place place, ParsePlace(flag));
  RETURN_IF_ERROR(DeviceRegistry::Global().GetDevice(place).status());
  return place;
}

namespace {

// The allocators whose peaks make `p`'s measured peak when the plan runs on
// `place`: the device's own; for the host, the CPU's and the device's pinned
// host allocator when it has its own (CUDA).
std::vector<Allocator*> AllocatorsOf(const Place& p, const Place& place) {
  std::vector<Allocator*> out;
  absl::StatusOr<Device*> device = DeviceRegistry::Global().GetDevice(p);
  if (!device.ok()) return out;
  out.push_back((*device)->allocator());
  if (p.is_host() && !place.is_host()) {
    absl::StatusOr<Device*> accelerator = DeviceRegistry::Global().GetDevice(place);
    if (accelerator.ok() && (*accelerator)->host_allocator() != out[0]) {
      out.push_back((*accelerator)->host_allocator());
    }
  }
  return out;
}

}  // namespace

std::string EstimatedVersusMeasured(const Plan& plan, const Place& place, double measured_step_us,
                                    bool pipelined, const HostExtras& host_extras) {
  std::vector<std::string> parts;
  for (const Place& p : {place, CPUPlace()}) {
    if (p.is_host() && place.is_host() && !parts.empty()) break;
    const std::vector<Allocator*> allocators = AllocatorsOf(p, place);
    if (allocators.empty()) continue;
    int64_t measured = 0;
    for (Allocator* a : allocators) measured += a->GetStats().peak_bytes_in_use;
    const PlaceMemory* m = plan.MemoryEstimate().Find(p);
    const int64_t planned = m == nullptr ? 0 : pipelined ? m->pipelined_peak_bytes : m->peak_bytes;
    int64_t estimated = planned;
    std::string terms;
    for (const auto& [what, bytes] : host_extras) {
      if (!p.is_host() || bytes == 0) continue;
      estimated += bytes;
      absl::StrAppend(&terms, " + ", what, " ", bytes, " bytes");
    }
    std::string part = absl::StrCat(p.ToString(), " est. peak ", HumanBytes(estimated),
                                    ", measured ", HumanBytes(measured));
    if (!terms.empty()) absl::StrAppend(&part, " [estimate: plan ", planned, " bytes", terms, "]");
    parts.push_back(std::move(part));
  }
  std::string out = absl::StrCat("memory", pipelined ? " (two runs in flight)" : "", ": ",
                                 absl::StrJoin(parts, "; "));
  if (plan.placed().auto_step_micros > 0 && measured_step_us > 0) {
    absl::StrAppendFormat(&out, "; step est. %.0f us, measured %.0f us",
                          plan.placed().auto_step_micros, measured_step_us);
  }
  return out;
}

int64_t KeptHostStaging(const Plan& plan) {
  const PlaceMemory* host = plan.MemoryEstimate().Find(CPUPlace());
  return host == nullptr ? 0 : host->staging;
}

void ResetPeakMemory(const Place& place) {
  for (const Place& p : {place, CPUPlace()}) {
    for (Allocator* a : AllocatorsOf(p, place)) a->ResetPeak();
  }
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace tandem
