#include "examples/common/step_pipeline.h"

#include <utility>

#include "framework/base/status_macros.h"

namespace tandem {

absl::Status StepPipeline::Start(const FeedMap& feeds) {
  ASSIGN_OR_RETURN(RunHandle handle, exe_->RunAsync(plan_, scope_, feeds));
  handles_.push_back(std::move(handle));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> StepPipeline::Next(RunStats* stats) {
  if (handles_.empty()) {
    return absl::FailedPreconditionError("StepPipeline::Next: no step was started");
  }
  RunHandle handle = std::move(handles_.front());
  handles_.pop_front();
  return handle.Wait(stats);
}

}  // namespace tandem
