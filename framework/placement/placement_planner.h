// PlacementPlanner: a pass that chooses places for a program before the
// placer's rules run; the executor calls it from Prepare. The automatic
// placement is one (framework/autoplace/auto_placement.h):
//
//   ExecutorOptions options;
//   options.placement_planner = MakeAutoPlacer({.budget_bytes = int64_t{4} << 30});
//   Executor exe(GPUPlace(0), options);   // every Prepare asks the planner first
//
// Without a planner (ExecutorOptions::placement_planner null) the placer's
// rules alone place the program. The executor depends on this interface
// only, never on a planner's code: planners live above the runtime and may
// run plans themselves (the automatic placement times ops through an
// Executor).
//
// Thread-safety: Plan is called on the thread that calls Executor::Prepare;
// a planner shared by several executors must allow concurrent calls if they
// prepare at once (MakeAutoPlacer's planner does).
#ifndef TANDEM_FRAMEWORK_PLACEMENT_PLACEMENT_PLANNER_H_
#define TANDEM_FRAMEWORK_PLACEMENT_PLACEMENT_PLANNER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "framework/placement/placer.h"
#include "framework/program/program.h"
#include "framework/types/shape.h"

namespace tandem {

// What the executor asks a planner to place; the references live for the
// call only.
struct PlacementRequest {
  const Program& program;
  const std::vector<std::string>& feeds;
  const std::vector<std::string>& fetches;
  // ExecutorOptions::feed_shapes: the shapes the fed variables will have.
  const std::map<std::string, Shape>& feed_shapes;
  // The plan's runs never overlap and run step by step (in-order mode,
  // check_numerics, or a program run once): budget one run's peak and
  // estimate times in program order.
  bool in_order = false;
};

class PlacementPlanner {
 public:
  virtual ~PlacementPlanner() = default;

  // Writes the planner's choices into `placer`, which arrives with the
  // executor's settings (default place, strictness, the initial places of
  // feeds and of persistables in the scope): auto_places, homes (and the
  // matching initial_places), auto_summary and auto_step_micros. An error
  // fails the Prepare that asked.
  virtual absl::Status Plan(const PlacementRequest& request, PlacerOptions* placer) = 0;
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_PLACEMENT_PLACEMENT_PLANNER_H_
