// Progress of a training loop: throughput and estimated time left.
//
//   TrainingProgress progress(/*total_steps=*/epochs * batches_per_epoch);
//   for (...) {
//     ... run one step of `batch` examples ...
//     progress.Step(batch);
//     if (step % 100 == 0) std::printf("... %s\n", progress.Summary().c_str());
//   }
//
// The first step (allocations, caches, lazy initialisation) is not timed:
// rates count from its end. Not thread-safe.
#ifndef TANDEM_EXAMPLES_COMMON_PROGRESS_H_
#define TANDEM_EXAMPLES_COMMON_PROGRESS_H_

#include <cstdint>
#include <string>

#include "examples/common/example_util.h"

namespace tandem {

// "H:MM:SS" for `seconds` (rounded down; negative counts as 0).
std::string FormatDuration(double seconds);

class TrainingProgress {
 public:
  // `total_steps`: the steps the run will make (for the ETA).
  explicit TrainingProgress(int64_t total_steps) : total_steps_(total_steps) {}

  // Records one finished step of `examples` examples.
  void Step(int64_t examples);

  int64_t steps() const { return steps_; }
  // Examples per second over the timed steps (0 before the second step).
  double ExamplesPerSecond() const;
  // Seconds the remaining steps take at the timed steps' pace (0 before
  // the second step).
  double SecondsLeft() const;
  // "12345 examples/s  ETA 0:01:23".
  std::string Summary() const;

 private:
  int64_t total_steps_;
  int64_t steps_ = 0;
  int64_t timed_examples_ = 0;
  Stopwatch clock_;  // restarted when the first step ends
};

}  // namespace tandem

#endif  // TANDEM_EXAMPLES_COMMON_PROGRESS_H_
