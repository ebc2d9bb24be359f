// The step runner: runs one step of a plan (a kernel or a copy) in any
// mode, or every step in program order, and the step-level errors
// (numerics, annotation, cancellation). Private to
// //framework/runtime:executor.
//
//   StepRunContext run{.frame = frame, .in_order = true, .observer = observer};
//   RETURN_IF_ERROR(PlanRunner::RunInOrder(plan, &stats, run));
//
// Threads: a step's fields are touched only by the thread running it; the
// concurrent scheduler (concurrent_run.h) decides which thread that is.
#ifndef TANDEM_FRAMEWORK_RUNTIME_STEP_RUNNER_H_
#define TANDEM_FRAMEWORK_RUNTIME_STEP_RUNNER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "framework/runtime/plan_state.h"

namespace tandem {

// How one step runs: the mode, who runs it, and where captured work goes.
struct StepRunContext {
  PlanState::Frame* frame = nullptr;  // the run's bindings
  bool in_order = true;
  int worker = -1;  // OpEvent::worker
  ExecutionObserver* observer = nullptr;
  PlanState::GraphSegment* segment = nullptr;  // set while capturing it
  bool check_numerics = false;                 // in-order runs only
  // The kernel's inputs instead of the frame's (a refined lookup's ids).
  const ArgVars* in_args = nullptr;
};

// Runs the steps of a plan.
class PlanRunner {
 public:
  // Runs one copy step: allocates the destination and enqueues the
  // transfer on the step's stream (in-order: a device->host copy waits for
  // it, unless it is being captured). Adds the copy to `stats` (the
  // caller's; call from one thread).
  static absl::Status RunCopyStep(PlanState* plan, PlanState::Step* step, const StepRunContext& run,
                                  RunStats* stats);
  // Runs one kernel step (device kernels: enqueues their work).
  static absl::Status RunKernelStep(PlanState* plan, PlanState::Step* step,
                                    const StepRunContext& run);
  // Runs one step, kernel or copy, counting it in `stats`.
  static absl::Status RunStep(PlanState* plan, PlanState::Step* step, const StepRunContext& run,
                              RunStats* stats);
  // Runs every step in program order on the calling thread (in-order mode,
  // see executor.h), each intermediate freed after its last use.
  static absl::Status RunInOrder(PlanState* plan, RunStats* stats, const StepRunContext& run);
};

// InvalidArgument naming the step, the output variable and the first index
// and value of a NaN or infinity in one of the step's floating-point
// outputs (device outputs are copied to the host, synchronously).
absl::Status CheckStepNumerics(const PlanState::Step& step, const std::vector<Variable*>& slots,
                               const std::vector<std::string>& names);

// The status of a step's failure, naming the op, its position and place.
absl::Status AnnotateStepError(const absl::Status& s, const PlanState::Step& step);

// Cancelled when Executor::Cancel was called after the run of `frame`
// started and `step` is not part of the run's commit (its held persistable
// writes: once one of them starts, the run completes); else OK.
absl::Status CancelledBefore(const PlanState::Step& step, const PlanState::Frame& frame);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_RUNTIME_STEP_RUNNER_H_
