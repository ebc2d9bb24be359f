#include "examples/common/progress.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace tandem {

std::string FormatDuration(double seconds) {
  const int64_t s = static_cast<int64_t>(std::max(0.0, seconds));
  return absl::StrFormat("%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
}

void TrainingProgress::Step(int64_t examples) {
  if (++steps_ == 1) {
    clock_ = Stopwatch();
  } else {
    timed_examples_ += examples;
  }
}

double TrainingProgress::ExamplesPerSecond() const {
  if (steps_ < 2) return 0;
  return timed_examples_ / std::max(clock_.Seconds(), 1e-9);
}

double TrainingProgress::SecondsLeft() const {
  if (steps_ < 2) return 0;
  const double per_step = clock_.Seconds() / (steps_ - 1);
  return per_step * std::max<int64_t>(0, total_steps_ - steps_);
}

std::string TrainingProgress::Summary() const {
  return absl::StrFormat("%.0f examples/s  ETA %s", ExamplesPerSecond(),
                         FormatDuration(SecondsLeft()));
}

}  // namespace tandem
