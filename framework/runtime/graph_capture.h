// Graph capture (ExecutorOptions::capture_graphs): a plan's steady-state
// step recorded once as a device graph, then replayed (see executor.h).
// Private to //framework/runtime:executor.
//
//   ASSIGN_OR_RETURN(const bool launched, CaptureAndLaunch(&plan, &stats, observer));
//   if (!launched) ...  // run the steps eagerly: plan.graph_blocker says why
//
// Threads: called by the thread running the plan (one run at a time).
#ifndef TANDEM_FRAMEWORK_RUNTIME_GRAPH_CAPTURE_H_
#define TANDEM_FRAMEWORK_RUNTIME_GRAPH_CAPTURE_H_

#include "absl/status/statusor.h"
#include "framework/runtime/plan_state.h"

namespace tandem {

// Captures frame 0's steps (all on one device, with their constants folded)
// as plan->graph and launches it: true. When the plan cannot be captured,
// sets plan->graph_blocker, logs it, restores what the capture bound and
// resets *stats: false (the caller runs the steps eagerly; nothing ran).
// An error of the launch itself is returned as is.
absl::StatusOr<bool> CaptureAndLaunch(PlanState* plan, RunStats* stats,
                                      ExecutionObserver* observer);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_RUNTIME_GRAPH_CAPTURE_H_
