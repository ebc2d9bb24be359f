// AutoPlace: the auto pass. Chooses the CPU or the default device for every
// op no rule pins (no device_guard, not derived from another op), so that
// the estimated step time is smallest while the estimated peak memory of
// the default device stays within a budget; records why, in numbers.
//
//   ExecutorOptions options;
//   options.placement_planner = MakeAutoPlacer({.budget_bytes = int64_t{4} << 30});
//   Executor exe(GPUPlace(0), options);   // 0 bytes: what the device can hold
//   ...
//   std::cout << plan->PlacementTable();  // cause "auto" with reasons, and a summary line
//
// The pass, on the program before copies are inserted:
//  - Units are the user ops without op_device. Generated ops follow their
//    unit through the placer's rules (a grad op its forward op, an update
//    op its parameter's first reader), so a table's lookup, gradient and
//    update move together. Initialisers (ops that read nothing and write
//    only persistables, as in a startup program) run on the host: a plan
//    moves each persistable to where it keeps it (its home: where its first
//    reader reads it) before its first run (PlacedProgram::homes; the
//    executor moves them).
//  - Time: every unit starts on the device (the CPU where the device has no
//    kernel); a unit moves to the CPU while that lowers the estimated time:
//    its ops' costs (cost_model.h) plus the copies the move adds or removes
//    (each value copied once per destination, device->host copies
//    synchronous) and write-backs of persistables updated away from home.
//  - Memory: while the estimated device peak (memory_estimate.h) exceeds the
//    budget, the units owning values live at the peak move to the CPU,
//    cheapest time per byte saved first. Each round estimates the current
//    places without placing the program (PlacementMemory: the same bytes
//    as EstimateMemory of the placed program). In the concurrent mode the
//    budget holds the pipelined peak (two runs in flight, RunAsync).
// When even every unit on the CPU does not fit, ResourceExhausted names the
// smallest budget that would fit and the largest persistables on the device.
#ifndef TANDEM_FRAMEWORK_AUTOPLACE_AUTO_PLACEMENT_H_
#define TANDEM_FRAMEWORK_AUTOPLACE_AUTO_PLACEMENT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/estimate/cost_model.h"
#include "framework/estimate/memory_estimate.h"
#include "framework/placement/placement_planner.h"
#include "framework/placement/placer.h"

namespace tandem {

struct AutoPlacementOptions {
  // The most bytes the default device may hold at the plan's estimated
  // peak. 0: what it can give now (its memory limit, else its free memory,
  // minus what others hold there and a margin of 5%, at most 1 GiB); no
  // budget when the device reports neither. Negative or above 1 PiB (or
  // above the device's memory) is InvalidArgument.
  int64_t budget_bytes = 0;
  std::vector<std::string> feeds, fetches;
  std::map<std::string, Shape> feed_shapes;
  bool in_order = false;  // the executor's mode (memory and time estimates)
  // Each persistable lives where its first reader reads it, and the plan
  // moves it there before it runs. Off: persistables stay where the scope
  // holds them and ops are placed around them (for a second plan over the
  // same scope, e.g. evaluation, so that plans do not move them back and
  // forth).
  bool move_persistables = true;
};

struct AutoPlacement {
  std::map<int, AutoChoice> choices;  // for PlacerOptions::auto_places
  // Persistables the plan keeps elsewhere than where they are now.
  std::map<std::string, Place> homes;
  int64_t budget_bytes = 0;  // the budget applied; 0: none
  double step_micros = 0;    // estimated step time of the result
  int copies_per_step = 0;
  // "auto placement on sim:0: budget 4.0 MiB; est. peak sim:0 1.2 MiB, cpu 5.1 MiB;
  //  est. step 812 us; 2 copies per step; 3 of 9 ops on cpu (1 for memory)"
  std::string summary;
};

// `base` holds the executor's placement options (default place, initial
// places of feeds and persistables); its auto_places are ignored.
absl::StatusOr<AutoPlacement> AutoPlace(const Program& program, const PlacerOptions& base,
                                        const AutoPlacementOptions& options, CostModel* costs);

// The automatic placement as the executor's planner (ExecutorOptions::
// placement_planner): AutoPlace with the process's cost model for these
// options (one per cache directory and `measure_costs`, saved to its cache
// after each plan), its choices, homes and summary written into the
// placer's options. Plans from several threads at once are serialised.
struct AutoPlacerOptions {
  // The most bytes the default device may hold (AutoPlacementOptions::budget_bytes;
  // 0: what the device can hold, less a margin).
  int64_t budget_bytes = 0;
  // AutoPlacementOptions::move_persistables (off: for a second plan over a
  // scope a first one already arranged).
  bool move_persistables = true;
  // The cost model's cache (cost_model.h; "" keeps it in memory) and whether
  // it times kernels (off: analytical estimates only).
  std::string cost_cache_dir = DefaultCostCacheDir();
  bool measure_costs = true;
};
std::shared_ptr<PlacementPlanner> MakeAutoPlacer(AutoPlacerOptions options = {});

// The estimated time of one step of `placed`: in order, every op and copy
// after the other; concurrent, host ops on the host and device ops and
// copies on the device's streams, each after its inputs are ready, a host
// reader of a device->host copy waiting for it; plus the run's fixed cost
// (cost_model.h's run_us: feeds, synchronisations, fetches).
double EstimateStepMicros(const PlacedProgram& placed, const std::vector<OpArgMetas>& metas,
                          CostModel* costs, bool in_order);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_AUTOPLACE_AUTO_PLACEMENT_H_
