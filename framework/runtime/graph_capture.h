// Graph capture (ExecutorOptions::capture_graphs): a plan's steady-state
// step run as device graphs, one per segment of device work, with the host
// steps between them run eagerly (see executor.h and PlanState::GraphState).
// Private to //framework/runtime:executor.
//
//   ASSIGN_OR_RETURN(const bool ran, RunWithGraphs(&plan, &stats, observer));
//   if (!ran) ...  // run the steps eagerly: plan.graph_blocker says why
//
// Threads: called by the thread running the plan (one run at a time); every
// step runs, and every graph is launched, on that thread, in program order.
#ifndef TANDEM_FRAMEWORK_RUNTIME_GRAPH_CAPTURE_H_
#define TANDEM_FRAMEWORK_RUNTIME_GRAPH_CAPTURE_H_

#include "absl/status/statusor.h"
#include "framework/runtime/plan_state.h"

namespace tandem {

// Runs frame 0's steps (constants folded) in program order: each segment is
// launched from its graph, captured first when it has none yet or when a
// value it baked in changed; the other steps run eagerly between the
// launches. A device kernel that fails while being captured runs eagerly
// from then on (its segment splits around it), as does the step whose
// baked-in value made its segment be captured on three runs in a row.
// Returns false, having run
// nothing, when the plan has no device work that could be captured
// (plan->graph_blocker says why, and the caller runs the steps eagerly);
// a step's error is returned as is.
absl::StatusOr<bool> RunWithGraphs(PlanState* plan, RunStats* stats, ExecutionObserver* observer);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_RUNTIME_GRAPH_CAPTURE_H_
