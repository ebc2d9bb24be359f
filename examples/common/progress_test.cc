#include "examples/common/progress.h"

#include <thread>

#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(FormatDurationTest, HoursMinutesSeconds) {
  EXPECT_EQ(FormatDuration(0), "0:00:00");
  EXPECT_EQ(FormatDuration(59.9), "0:00:59");
  EXPECT_EQ(FormatDuration(3 * 3600 + 25 * 60 + 7), "3:25:07");
  EXPECT_EQ(FormatDuration(-5), "0:00:00");
}

TEST(TrainingProgressTest, NoRateBeforeTheSecondStep) {
  TrainingProgress p(10);
  EXPECT_EQ(p.ExamplesPerSecond(), 0);
  p.Step(64);
  EXPECT_EQ(p.steps(), 1);
  EXPECT_EQ(p.ExamplesPerSecond(), 0);
  EXPECT_EQ(p.SecondsLeft(), 0);
  EXPECT_EQ(p.Summary(), "0 examples/s  ETA 0:00:00");
}

TEST(TrainingProgressTest, RateAndTimeLeftFromTheTimedSteps) {
  TrainingProgress p(/*total_steps=*/5);
  p.Step(1000);  // untimed
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  p.Step(100);
  // 100 examples in >= 50 ms: at most 2000/s; the untimed 1000 do not count.
  EXPECT_GT(p.ExamplesPerSecond(), 0);
  EXPECT_LE(p.ExamplesPerSecond(), 2000);
  // 3 steps left at >= 50 ms each.
  EXPECT_GE(p.SecondsLeft(), 0.15);
  EXPECT_LT(p.SecondsLeft(), 30);
  p.Step(100);
  p.Step(100);
  p.Step(100);
  EXPECT_EQ(p.SecondsLeft(), 0);  // done
}

}  // namespace
}  // namespace tandem
