// Optimizer offload: chooses, for each trained parameter, whether its
// float32 master value and its optimizer state live on the default device
// or in host memory, so that the device's estimated peak fits a memory
// budget. Ops stay where the placer's rules put them; only the homes of
// parameters move, and the rules follow (docs/design.md, "Optimizer
// offload"): a parameter kept on the host is cast where it lives
// (cast-at-source, so 16-bit copies go up), its gradient comes down and its
// update runs on the host (param).
//
//   ExecutorOptions options;
//   options.placement_planner = MakeOffloadPlanner({.budget_bytes = int64_t{8} << 30});
//   Executor exe(GPUPlace(0), options);
//   exe.Run(startup, &scope);         // parameters initialised in host memory
//   (parameters_on("cpu")) ASSIGN_OR_RETURN(auto plan, exe.Prepare(main, scope, feeds, fetches));
//   std::cout << plan->PlacementTable();   // each update's reason, and a summary line
//
// Candidates: the parameters (with that state) that live on the host or on
// the default device and whose first reader and update run on the default
// device when they live there; a parameter on another device stays.
// The choice: the parameters of the program's updates are ordered last
// read first (by the index of the first op that reads them, descending):
// their gradients are the first the backward produces and their weights
// the last the next forward needs, so their host updates have the most
// device work to hide behind. The planner offloads the shortest prefix of
// that order whose plan fits the budget (binary search over the prefix
// length, each length placed and estimated exactly as Executor::Prepare
// will: PlaceProgram and EstimateMemory, the pipelined peak in the
// concurrent mode). Offloading adds host updates and transfers and never
// removes device work, so the fewest parameters offloaded is the fastest
// plan that fits; with room to spare nothing moves. A fixed `fraction`
// instead offloads the shortest prefix holding that fraction of the
// parameters' bytes (a hand-chosen partial offload).
//
// Thread-safety: the planner keeps no state between calls; concurrent Plan
// calls are safe.
#ifndef TANDEM_FRAMEWORK_AUTOPLACE_OPTIMIZER_OFFLOAD_H_
#define TANDEM_FRAMEWORK_AUTOPLACE_OPTIMIZER_OFFLOAD_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/placement/placement_planner.h"
#include "framework/placement/placer.h"
#include "framework/program/program.h"

namespace tandem {

struct OffloadOptions {
  // The most bytes the default device may hold at the plan's estimated
  // peak. 0: what it can give now (as AutoPlacerOptions::budget_bytes).
  // Ignored when `fraction` is set.
  int64_t budget_bytes = 0;
  // Offload the shortest last-read-first prefix of the parameters holding
  // at least this fraction of their bytes, whatever the budget: 0 keeps
  // every parameter on the device, 1 offloads them all. Outside [0, 1] is
  // InvalidArgument.
  std::optional<double> fraction;
};

struct OffloadPlacement {
  // Every candidate parameter and its device-memory state, at the home
  // chosen for it (also where it is already).
  std::map<std::string, Place> homes;
  // Why, in numbers, by parameter.
  std::map<std::string, std::string> reasons;
  int parameters = 0;  // candidates: updated parameters read on the device
  int offloaded = 0;
  int64_t offloaded_bytes = 0;    // the offloaded parameters' and their state's bytes
  int64_t budget_bytes = 0;       // the budget applied (0: none, with `fraction`)
  int64_t device_peak_bytes = 0;  // est. peak of the default device with the choice
  // "optimizer offload on gpu:0: budget 700.0 MiB; 96 of 148 parameters on the host
  //  (361.0 MiB with their state), last read first; est. peak gpu:0 650.2 MiB (none
  //  offloaded 1.9 GiB, all 400.1 MiB)"
  std::string summary;
};

// The choice for `request`'s program. `base` holds the executor's placement options (default place,
// initial places of feeds and persistables). ResourceExhausted when even every parameter on the
// host does not fit the budget, naming the smallest budget that would; InvalidArgument for a bad
// budget or fraction.
absl::StatusOr<OffloadPlacement> PlanOffload(const PlacementRequest& request,
                                             const PlacerOptions& base,
                                             const OffloadOptions& options);

// PlanOffload as the executor's planner (ExecutorOptions::placement_planner):
// its homes, reasons and summary written into the placer's options. A
// program without updates (evaluation) is placed around the persistables
// where they are.
std::shared_ptr<PlacementPlanner> MakeOffloadPlanner(OffloadOptions options);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_AUTOPLACE_OPTIMIZER_OFFLOAD_H_
