#include "framework/runtime/schedule_trial.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace tandem {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

ScheduleTrial::ScheduleTrial(ScheduleTrialOptions options) : options_(options) {
  options_.warmup_runs = std::max(0, options_.warmup_runs);
  options_.runs_per_phase = std::max(1, options_.runs_per_phase);
  options_.rounds = std::max(1, options_.rounds);
  options_.retime_every_runs = std::max(0, options_.retime_every_runs);
  warmup_ = options_.warmup_runs;
}

bool ScheduleTrial::RetimeDue() const {
  return decided_ && options_.retime_every_runs > 0 &&
         runs_ - decided_at_ >= options_.retime_every_runs;
}

Schedule ScheduleTrial::PhaseSchedule(int phase) {
  const int round = phase / 2;
  const bool first = phase % 2 == 0;
  // Round 0: concurrent, then in order; round 1: in order, then concurrent; ...
  return (first == (round % 2 == 0)) ? Schedule::kConcurrent : Schedule::kInOrder;
}

int ScheduleTrial::TrialRuns() const { return 2 * options_.rounds * options_.runs_per_phase; }

bool ScheduleTrial::NextRunStartsPhase() const {
  if (!options_.enabled) return false;
  if (decided_) return RetimeDue();
  const int into = Into();
  return into >= 0 && into % options_.runs_per_phase == 0;
}

Schedule ScheduleTrial::NextRun(absl::Time now) {
  if (options_.enabled && RetimeDue()) {  // a new trial from this run, no warm-up
    decided_ = false;
    concurrent_.clear();
    in_order_.clear();
    trial_start_ = runs_;
    warmup_ = 0;
  }
  if (!options_.enabled || decided_) {
    ++runs_;
    return chosen_;
  }
  const int into = Into();
  ++runs_;
  if (into < 0) return Schedule::kConcurrent;
  const int phase = into / options_.runs_per_phase;
  if (into % options_.runs_per_phase == 0 && into > 0) {  // the phase before ends now
    const double per_run = absl::ToDoubleSeconds(now - phase_start_) / options_.runs_per_phase;
    (PhaseSchedule(phase - 1) == Schedule::kConcurrent ? concurrent_ : in_order_)
        .push_back(per_run);
    if (into == TrialRuns() || (phase % 2 == 0 && ClearlyApart())) {
      Decide();
      return chosen_;
    }
  }
  if (into % options_.runs_per_phase == 0) phase_start_ = now;
  return PhaseSchedule(phase);
}

int ScheduleTrial::MaxTrialRuns() const {
  return options_.enabled ? options_.warmup_runs + TrialRuns() + 1 : 0;
}

bool ScheduleTrial::ClearlyApart() const {
  if (options_.early_margin <= 0 || concurrent_.empty() || in_order_.empty()) return false;
  const double c = Median(concurrent_), i = Median(in_order_);
  return std::max(c, i) >= (1 + options_.early_margin) * std::min(c, i);
}

void ScheduleTrial::Decide() {
  decided_ = true;
  concurrent_median_ = Median(concurrent_);
  in_order_median_ = Median(in_order_);
  // Concurrent keeps ties: its runs may overlap where the caller pipelines
  // more than the trial did.
  chosen_ = in_order_median_ < concurrent_median_ ? Schedule::kInOrder : Schedule::kConcurrent;
  phases_each_ = static_cast<int>(concurrent_.size());
  decided_at_ = runs_;
}

std::string ScheduleTrial::Summary() const {
  if (!decided_) return "";
  const bool in_order = chosen_ == Schedule::kInOrder;
  return absl::StrFormat("%s: %.3f vs %.3f ms per run %s (medians of %d phase%s of %d runs each)",
                         in_order ? "in order" : "concurrent",
                         1e3 * (in_order ? in_order_median_ : concurrent_median_),
                         1e3 * (in_order ? concurrent_median_ : in_order_median_),
                         in_order ? "concurrently" : "in order", phases_each_,
                         phases_each_ == 1 ? "" : "s", options_.runs_per_phase);
}

}  // namespace tandem
