// Chooses by measurement whether a plan's runs go concurrently or in
// program order: the concurrent mode pays where host and device work of a
// run (or of consecutive runs) overlap, and costs hand-offs, events and
// bookkeeping where they cannot. Which wins depends on kernel times that
// the dependency graph does not know, so after a few warm-up runs the
// executor times alternating phases of runs in each schedule and keeps the
// faster one. Both schedules give bitwise identical results, so the
// switches change nothing but time.
//
//   ScheduleTrial trial(options);
//   for each run:
//     if (trial.NextRunStartsPhase()) { ...finish the runs in flight... }
//     const Schedule s = trial.NextRun(absl::Now());   // run it so
//   trial.Summary();   // "in order: 0.710 vs 0.770 ms per run (...)"
//
// Every retime_every_runs runs after a decision the trial runs again (no
// warm-up) and may switch.
//
// A phase is timed from the start of its first run to the start of the
// run after its last, with the runs in flight finished before that
// timestamp (the caller does it when NextRunStartsPhase), so each phase
// pays for its own runs only; the caller's own work between runs (feeding,
// logging) counts in both. Not thread-safe: one per plan, called by the
// thread that starts its runs.
#ifndef TANDEM_FRAMEWORK_RUNTIME_SCHEDULE_TRIAL_H_
#define TANDEM_FRAMEWORK_RUNTIME_SCHEDULE_TRIAL_H_

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace tandem {

enum class Schedule { kConcurrent, kInOrder };

struct ScheduleTrialOptions {
  // Off: every run concurrent (no trial).
  bool enabled = true;
  // Runs before the trial (concurrent): first-run allocations, lazy
  // initialisation and graph capture are not timed.
  int warmup_runs = 4;
  // Runs per phase, and rounds of one phase per schedule (the first
  // schedule of a round alternates); each schedule's time is the median of
  // its phases.
  int runs_per_phase = 16;
  int rounds = 3;
  // After a round, a schedule whose median so far is this much faster than
  // the other's (0.10: the other takes 10% longer) is kept at once: a clear
  // difference needs no more rounds, and each round costs runs in the
  // slower schedule. <= 0: always every round.
  double early_margin = 0.10;
  // Runs after a decision at which the trial runs again (without warm-up),
  // in case the machine's load changed which schedule is faster; 0: never.
  int retime_every_runs = 10000;
};

class ScheduleTrial {
 public:
  explicit ScheduleTrial(ScheduleTrialOptions options = {});

  // True when the next run begins a timed phase, or follows the last one:
  // the runs in flight should finish before NextRun is called.
  bool NextRunStartsPhase() const;
  // Whether NextRun reads `now` for the next run (a trial is running or due);
  // otherwise the caller need not read the clock.
  bool NeedsTime() const { return options_.enabled && (!decided_ || RetimeDue()); }
  // Records that a run starts at `now` and returns the schedule it takes.
  Schedule NextRun(absl::Time now);

  bool decided() const { return decided_; }
  // Concurrent until decided.
  Schedule chosen() const { return chosen_; }
  // Runs that asked NextRun so far.
  int runs() const { return runs_; }
  // Empty before the decision; else "in order: 0.710 vs 0.770 ms per run
  // concurrently (medians of 3 phases of 16 runs each)" or the converse.
  std::string Summary() const;
  // Runs from the first until the decision at the latest (warm-up and every
  // round); 0 when disabled.
  int MaxTrialRuns() const;

 private:
  // The schedule of phase `phase` (0-based): rounds alternate which comes first.
  static Schedule PhaseSchedule(int phase);
  int TrialRuns() const;
  // The current trial's run index of the next run (negative in warm-up).
  int Into() const { return runs_ - trial_start_ - warmup_; }
  // Whether a decided trial is due to run again.
  bool RetimeDue() const;
  // Whether the phases so far show a difference of early_margin or more.
  bool ClearlyApart() const;
  void Decide();

  ScheduleTrialOptions options_;
  int runs_ = 0;
  absl::Time phase_start_;
  // Per-run seconds of each finished phase, by schedule.
  std::vector<double> concurrent_, in_order_;
  bool decided_ = false;
  Schedule chosen_ = Schedule::kConcurrent;
  double concurrent_median_ = 0, in_order_median_ = 0;
  int phases_each_ = 0;  // phases timed per schedule at the decision
  int trial_start_ = 0;  // runs before the current trial
  int warmup_ = 0;       // the current trial's warm-up runs (the first's only)
  int decided_at_ = 0;   // runs when the last decision was made
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_RUNTIME_SCHEDULE_TRIAL_H_
