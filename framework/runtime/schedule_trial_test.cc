#include "framework/runtime/schedule_trial.h"

#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

// Drives `trial` with runs costing `concurrent_ms` or `in_order_ms` each
// by the schedule NextRun returned, until it decides (or `max_runs`); the
// schedules in order.
std::vector<Schedule> Drive(ScheduleTrial* trial, double concurrent_ms, double in_order_ms,
                            int max_runs = 1000) {
  std::vector<Schedule> schedules;
  absl::Time now = absl::UnixEpoch();
  while (!trial->decided() && static_cast<int>(schedules.size()) < max_runs) {
    const Schedule s = trial->NextRun(now);
    schedules.push_back(s);
    now += absl::Milliseconds(s == Schedule::kInOrder ? in_order_ms : concurrent_ms);
  }
  return schedules;
}

TEST(ScheduleTrialTest, KeepsTheFasterScheduleAfterAlternatingPhases) {
  ScheduleTrial trial(
      {.enabled = true, .warmup_runs = 2, .runs_per_phase = 3, .rounds = 2, .early_margin = 0});
  const std::vector<Schedule> s = Drive(&trial, /*concurrent_ms=*/2.0, /*in_order_ms=*/1.5);
  ASSERT_TRUE(trial.decided());
  // 2 warm-up runs, phases C I | I C of 3 runs, then the deciding run.
  const Schedule C = Schedule::kConcurrent, I = Schedule::kInOrder;
  EXPECT_EQ(s, (std::vector<Schedule>{C, C, C, C, C, I, I, I, I, I, I, C, C, C, I}));
  EXPECT_EQ(trial.chosen(), Schedule::kInOrder);
  EXPECT_EQ(
      trial.Summary(),
      "in order: 1.500 vs 2.000 ms per run concurrently (medians of 2 phases of 3 runs each)");
  EXPECT_EQ(trial.NextRun(absl::UnixEpoch()), Schedule::kInOrder);  // for good
  EXPECT_FALSE(trial.NextRunStartsPhase());
}

TEST(ScheduleTrialTest, ConcurrentWinsWhenFasterAndKeepsTies) {
  ScheduleTrial faster(
      {.enabled = true, .warmup_runs = 0, .runs_per_phase = 2, .rounds = 3, .early_margin = 0});
  Drive(&faster, /*concurrent_ms=*/1.0, /*in_order_ms=*/1.25);
  EXPECT_EQ(faster.chosen(), Schedule::kConcurrent);
  EXPECT_EQ(faster.Summary(),
            "concurrent: 1.000 vs 1.250 ms per run in order (medians of 3 phases of 2 runs each)");
  ScheduleTrial tie({.enabled = true, .warmup_runs = 1, .runs_per_phase = 1, .rounds = 1});
  Drive(&tie, 1.0, 1.0);
  EXPECT_TRUE(tie.decided());
  EXPECT_EQ(tie.chosen(), Schedule::kConcurrent);
}

TEST(ScheduleTrialTest, PhasesTakeTheMedianSoOneSlowPhaseDoesNotDecide) {
  ScheduleTrial trial(
      {.enabled = true, .warmup_runs = 0, .runs_per_phase = 1, .rounds = 3, .early_margin = 0});
  // Phases: C I I C C I. In-order phases 1, 1, 1 ms; concurrent 0.8, 9 (a
  // stall), 0.8 ms: concurrent's median is 0.8.
  const double concurrent_ms[] = {0.8, 9.0, 0.8};
  absl::Time now = absl::UnixEpoch();
  int c = 0;
  while (!trial.decided()) {
    const Schedule s = trial.NextRun(now);
    if (trial.decided()) break;
    now += absl::Milliseconds(s == Schedule::kInOrder ? 1.0 : concurrent_ms[c++]);
  }
  EXPECT_EQ(c, 3);
  EXPECT_EQ(trial.chosen(), Schedule::kConcurrent);
}

// A clear difference ends the trial after the round that shows it; a small
// one takes every round.
TEST(ScheduleTrialTest, AClearDifferenceDecidesAfterItsRound) {
  ScheduleTrial clear({.enabled = true, .warmup_runs = 1, .runs_per_phase = 2, .rounds = 3});
  const std::vector<Schedule> s = Drive(&clear, /*concurrent_ms=*/1.0, /*in_order_ms=*/2.0);
  const Schedule C = Schedule::kConcurrent, I = Schedule::kInOrder;
  // Warm-up, one round (C C | I I), the deciding run: 6 runs of at most 14.
  EXPECT_EQ(s, (std::vector<Schedule>{C, C, C, I, I, C}));
  EXPECT_EQ(clear.MaxTrialRuns(), 14);
  EXPECT_EQ(clear.Summary(),
            "concurrent: 1.000 vs 2.000 ms per run in order (medians of 1 phase of 2 runs each)");
  ScheduleTrial close({.enabled = true, .warmup_runs = 1, .runs_per_phase = 2, .rounds = 3});
  EXPECT_EQ(Drive(&close, /*concurrent_ms=*/1.05, /*in_order_ms=*/1.0).size(), 14u);
  EXPECT_EQ(close.chosen(), I);
  EXPECT_EQ(ScheduleTrial({.enabled = false}).MaxTrialRuns(), 0);
}

TEST(ScheduleTrialTest, PhaseStartsAreAnnouncedSoRunsInFlightFinishFirst) {
  ScheduleTrial trial({.enabled = true, .warmup_runs = 2, .runs_per_phase = 2, .rounds = 1});
  std::vector<bool> starts;
  absl::Time now = absl::UnixEpoch();
  while (!trial.decided()) {
    starts.push_back(trial.NextRunStartsPhase());
    trial.NextRun(now);
    now += absl::Milliseconds(1);
  }
  // Warm-up (2), phase 1 (2), phase 2 (2), the deciding run.
  EXPECT_EQ(starts, (std::vector<bool>{false, false, true, false, true, false, true}));
}

// After retime_every_runs runs the trial runs again (no warm-up) and
// follows a change in which schedule is faster.
TEST(ScheduleTrialTest, RetimesAfterItsPeriodAndFollowsAChange) {
  ScheduleTrial trial({.enabled = true,
                       .warmup_runs = 1,
                       .runs_per_phase = 2,
                       .rounds = 1,
                       .early_margin = 0,
                       .retime_every_runs = 5});
  const Schedule C = Schedule::kConcurrent, I = Schedule::kInOrder;
  std::vector<Schedule> s;
  std::vector<bool> starts;
  absl::Time now = absl::UnixEpoch();
  for (int run = 0; run < 16; ++run) {
    starts.push_back(trial.NextRunStartsPhase());
    s.push_back(trial.NextRun(now));
    // Concurrent runs cost 1 ms for the first 8 runs, 3 ms after; in order 2 ms.
    now += absl::Milliseconds(s.back() == I ? 2.0 : (run < 8 ? 1.0 : 3.0));
    if (run == 5) {
      EXPECT_EQ(trial.Summary(),
                "concurrent: 1.000 vs 2.000 ms per run in order (medians of 1 phase of 2 runs "
                "each)");
    }
  }
  // Warm-up, C C | I I, decided (concurrent) at run 5; runs 6-10 concurrent;
  // run 11 starts the second trial: C C | I I, decided (in order) at run 15.
  EXPECT_EQ(s, (std::vector<Schedule>{C, C, C, I, I, C, C, C, C, C, C, C, C, I, I, I}));
  EXPECT_EQ(starts, (std::vector<bool>{false, true, false, true, false, true, false, false, false,
                                       false, false, true, false, true, false, true}));
  EXPECT_TRUE(trial.decided());
  EXPECT_EQ(trial.chosen(), I);
  EXPECT_EQ(trial.Summary(),
            "in order: 2.000 vs 3.000 ms per run concurrently (medians of 1 phase of 2 runs each)");
}

TEST(ScheduleTrialTest, DisabledRunsEverythingConcurrentlyWithoutPhases) {
  ScheduleTrial trial({.enabled = false});
  const std::vector<Schedule> s = Drive(&trial, 5.0, 1.0, /*max_runs=*/200);
  EXPECT_EQ(s.size(), 200u);
  for (Schedule x : s) EXPECT_EQ(x, Schedule::kConcurrent);
  EXPECT_FALSE(trial.decided());
  EXPECT_FALSE(trial.NextRunStartsPhase());
  EXPECT_EQ(trial.Summary(), "");
}

}  // namespace
}  // namespace tandem
