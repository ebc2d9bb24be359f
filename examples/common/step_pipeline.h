// StepPipeline: keeps the next training step in flight while the trainer
// reads the results of the current one (Executor::RunAsync).
//
//   StepPipeline steps(&exe, plan.get(), &scope);
//   RETURN_IF_ERROR(steps.Start(FeedsFor(1)));
//   for (int64_t step = 1; step <= n; ++step) {
//     const bool sync = step == n || step % eval_every == 0;  // reads the scope next
//     if (!sync) RETURN_IF_ERROR(steps.Start(FeedsFor(step + 1)));
//     ASSIGN_OR_RETURN(std::vector<Tensor> out, steps.Next(&stats));  // step's fetches
//     ...                                  // with `sync`, nothing is in flight now
//     if (sync && step < n) RETURN_IF_ERROR(steps.Start(FeedsFor(step + 1)));
//   }
//
// Results are those of running the steps one after another (the executor
// keeps them bitwise identical); with ExecutorOptions::in_order each Start
// runs its step to the end. Not thread-safe; the executor, plan and scope
// must outlive it.
#ifndef TANDEM_EXAMPLES_COMMON_STEP_PIPELINE_H_
#define TANDEM_EXAMPLES_COMMON_STEP_PIPELINE_H_

#include <deque>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/runtime/executor.h"

namespace tandem {

class StepPipeline {
 public:
  StepPipeline(Executor* exe, Plan* plan, Scope* scope) : exe_(exe), plan_(plan), scope_(scope) {}

  // Starts the next step with `feeds` (copied in before it returns).
  absl::Status Start(const FeedMap& feeds);
  // Waits for the oldest started step: its fetches and stats.
  // FailedPrecondition when no step was started.
  absl::StatusOr<std::vector<Tensor>> Next(RunStats* stats = nullptr);
  // Steps started and not yet returned by Next.
  int in_flight() const { return static_cast<int>(handles_.size()); }

 private:
  Executor* exe_;
  Plan* plan_;
  Scope* scope_;
  std::deque<RunHandle> handles_;
};

}  // namespace tandem

#endif  // TANDEM_EXAMPLES_COMMON_STEP_PIPELINE_H_
