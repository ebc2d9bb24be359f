// Helpers shared by the example programs.
//
//   ASSIGN_OR_RETURN(Place place, ChooseDefaultPlace(FLAGS_place));  // "" -> gpu:0 or cpu
//   Executor exe(place, ExampleExecutorOptions());   // honours --cuda_graph, --in_order and
//                                                    // --check_numerics
//   std::printf("executor: %s\n", ExecutorMode(ExampleExecutorOptions()).c_str());
//   Stopwatch sw;  ...  double s = sw.Seconds();
#ifndef TANDEM_EXAMPLES_COMMON_EXAMPLE_UTIL_H_
#define TANDEM_EXAMPLES_COMMON_EXAMPLE_UTIL_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/place/place.h"
#include "framework/runtime/executor.h"

namespace tandem {

// `flag` parsed as a place that exists; "" means gpu:0 when a GPU is
// present, else cpu. InvalidArgument / NotFound for bad or missing places.
absl::StatusOr<Place> ChooseDefaultPlace(const std::string& flag);

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// The examples' executor options: capture_graphs from --cuda_graph (each
// training step is captured once and replayed where the plan allows; the
// executor logs why when it does not), in_order from --in_order (steps one
// at a time in program order; default: concurrent host and device steps),
// check_numerics from --check_numerics, and the automatic placement from
// --auto_place, --memory_budget_mb and --cost_cache_dir (MakeAutoPlacer;
// `auto_moves_persistables` off for a second plan, as evaluation, over a
// scope the training plan arranged).
ExecutorOptions ExampleExecutorOptions(bool auto_moves_persistables = true);
// With --cuda_graph: "  launches/step: 2 graphs + 0 device steps outside
// graphs" for one run's stats (RunStats::graph_launches and
// ungraphed_device_steps); "" without.
std::string GraphLaunchesPerStep(const RunStats& stats);
// With --cuda_graph: "cuda graphs: " and the plan's Plan::graph_summary()
// (or why it runs eagerly); "" without.
std::string GraphSummaryLine(const Plan& plan);

// The automatic placement of --memory_budget_mb and --cost_cache_dir,
// whether or not --auto_place is given.
std::shared_ptr<PlacementPlanner> ExampleAutoPlacer(bool moves_persistables = true);

// --memory_budget_mb in bytes (0: what the device can hold; saturated, so
// that the planner refuses what is out of range, naming the value).
int64_t MemoryBudgetBytesFlag();

// InvalidArgument for a negative --memory_budget_mb, or one without
// --auto_place.
absl::Status CheckPlacementFlags();
// --auto_place: models are then built without device_guard.
bool AutoPlaceRequested();

// --print_placement: prints `plan`'s placement table (with the auto
// placement's reasons and summary, and the memory estimate);
// --placement_dot=FILE: writes its Graphviz graph there.
absl::Status ReportPlacement(const Plan& plan);

// "memory: sim:0 est. peak 1.2 MiB, measured 1.1 MiB; cpu est. ...; step est. 812 us,
// measured 790 us" for the plan run on `place`: the estimate's peaks beside the allocators'
// measured peaks (since the last ResetPeakMemory; the host's: the CPU's allocator and the
// device's pinned one) and, under auto placement, the estimated step time beside
// `measured_step_us` (0: not measured). `pipelined`: the runs overlapped (StepPipeline), so
// the estimate is that of two runs in flight ("est. peak (two runs) ...").
// `host_extras`: host memory the trainer holds beside the plan, by what
// holds it (its data loaders' batches, DataLoader::MaxBytesHeld; the staging
// buffers its evaluation plan keeps), added to the host's estimate ("cpu est.
// peak ..., measured ... [estimate: plan 4029148 bytes + data loaders 1006080
// bytes]").
using HostExtras = std::vector<std::pair<std::string, int64_t>>;
std::string EstimatedVersusMeasured(const Plan& plan, const Place& place, double measured_step_us,
                                    bool pipelined = false, const HostExtras& host_extras = {});

// The host staging buffers `plan` keeps across its runs (estimated): memory
// another plan's measured host peak sees (an evaluation plan's beside training).
int64_t KeptHostStaging(const Plan& plan);

// "in-order" or "concurrent": the executor mode `options` select, as the
// examples print it ("executor: concurrent").
std::string ExecutorMode(const ExecutorOptions& options);

// Starts new high-water marks of `place`'s and the host's allocators (after
// a plan's first step: then the measured peak is a steady step's).
void ResetPeakMemory(const Place& place);

// Median of `values` (which it sorts); 0 for none.
double Median(std::vector<double> values);

}  // namespace tandem

#endif  // TANDEM_EXAMPLES_COMMON_EXAMPLE_UTIL_H_
