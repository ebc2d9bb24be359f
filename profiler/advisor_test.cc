#include "profiler/advisor.h"

#include "absl/strings/str_cat.h"
#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "profiler/concurrency_testutil.h"
#include "profiler/crop_workload_testutil.h"
#include "profiler/profiler.h"

namespace tandem {
namespace profiler {
namespace {

using ::testing::ElementsAre;

struct Profiled {
  std::unique_ptr<CropWorkload> crop;
  Profile profile;
  RunStats last;  // the last run's counters
};

Profiled ProfileCrop(bool slice_on_cpu) {
  Profiled out;
  auto crop = CropWorkload::Create(*ParsePlace("sim:0"), slice_on_cpu);
  CHECK(crop.ok()) << crop.status();
  out.crop = *std::move(crop);
  CHECK(StartProfiler({ProfilerState::kAll, 1}).ok());
  CHECK(AttachPlan(out.crop->plan()).ok());
  auto stats = out.crop->Run(4);
  CHECK(stats.ok()) << stats.status();
  out.last = stats->back();
  auto profile = CollectProfile();
  CHECK(profile.ok()) << profile.status();
  out.profile = *std::move(profile);
  return out;
}

TEST(AdvisorTest, NamesSliceOnTheAccelerator) {
  const Profiled run = ProfileCrop(/*slice_on_cpu=*/false);
  ASSERT_TRUE(run.profile.plan.has_value());
  const std::vector<Advice> advice = Advise(run.profile, *run.profile.plan);
  ASSERT_EQ(advice.size(), 1u) << FormatAdvice(advice);
  const Advice& a = advice[0];
  EXPECT_EQ(a.op, "slice");
  EXPECT_EQ(a.op_index, 3);
  EXPECT_EQ(a.placed_index, 4);
  EXPECT_EQ(a.place.ToString(), "sim:0");
  EXPECT_EQ(a.h2d_per_step, 1);
  EXPECT_EQ(a.d2h_per_step, 1);
  EXPECT_EQ(a.sync_per_step, run.last.sync_copies);
  std::string h2d_mode, d2h_mode;
  for (const CopyRecord& c : run.last.ledger) {
    (c.to.is_host() ? d2h_mode : h2d_mode) = c.sync ? "sync" : "async";
  }
  EXPECT_THAT(a.bytes, ElementsAre(16, 16));
  EXPECT_TRUE(a.profiled);
  EXPECT_GT(a.ms_per_step, 0);
  EXPECT_EQ(a.copies_removed, 2);
  EXPECT_THAT(a.message, HasSubstr(absl::StrCat("slice (#3, sim:0): 1 ", h2d_mode, " H2D + 1 ",
                                                d2h_mode, " D2H per step (16 B each, ")));
  EXPECT_THAT(a.message, HasSubstr("its input 'shape_0.tmp_0' is produced on the host "
                                   "(HostMemory output of 'shape')"));
  EXPECT_THAT(a.message, HasSubstr("its output 'slice_0.tmp_0' is read on the host by "
                                   "'crop_tensor' (HostMemory 'Shape')"));
  EXPECT_THAT(a.message, HasSubstr("put 'slice' under device_guard(\"cpu\") to remove both"));
  EXPECT_EQ(FormatAdvice(advice), a.message + "\n");
}

TEST(AdvisorTest, NothingWithSliceOnTheCpu) {
  const Profiled run = ProfileCrop(/*slice_on_cpu=*/true);
  const std::vector<Advice> advice = Advise(run.profile, *run.profile.plan);
  EXPECT_TRUE(advice.empty()) << FormatAdvice(advice);
  EXPECT_EQ(FormatAdvice(advice), "No op placement causes synchronous copies.\n");
}

TEST(AdvisorTest, WithoutAProfileGivesCountsOnly) {
  auto crop = CropWorkload::Create(*ParsePlace("sim:0"), /*slice_on_cpu=*/false);
  ASSERT_OK(crop.status());
  const std::vector<Advice> advice = Advise(Profile(), (*crop)->plan().placed());
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_FALSE(advice[0].profiled);
  EXPECT_THAT(advice[0].message, HasSubstr(": 1 H2D + 1 D2H per step (16 B each, not profiled)"));
}

TEST(AdvisorTest, NamesTheHostOpTheDeviceWaitsOnMost) {
  FakeClock clock;
  QueueDevice gpu(GPUPlace(0));
  ASSERT_OK(StartProfiler({ProfilerState::kAll, 1}));
  for (int run = 0; run < 3; ++run) FeedConcurrentRun(&gpu, 1000 * run);
  ASSERT_OK_AND_ASSIGN(Profile profile, CollectProfile());
  const std::vector<DeviceWaitAdvice> advice = AdviseDeviceWaits(profile);
  ASSERT_EQ(advice.size(), 1u);
  // gpu:0 idles 5 us per step during lookup_table, 10 us during sum.
  EXPECT_EQ(advice[0].device, GPUPlace(0));
  EXPECT_EQ(advice[0].op, "sum");
  EXPECT_EQ(advice[0].op_index, 3);
  EXPECT_NEAR(advice[0].idle_ms_per_step, 0.010, 1e-12);
  EXPECT_EQ(FormatDeviceWaitAdvice(advice),
            "gpu:0 idled 10 us per step waiting for host op sum (#3)\n");
}

TEST(AdvisorTest, NoDeviceWaitAdviceWithoutDeviceTime) {
  auto crop = CropWorkload::Create(*ParsePlace("sim:0"), /*slice_on_cpu=*/true);
  ASSERT_OK(crop.status());
  ASSERT_OK(StartProfiler({ProfilerState::kCPU, 1}));
  ASSERT_OK((*crop)->Run(3).status());
  ASSERT_OK_AND_ASSIGN(Profile profile, CollectProfile());
  EXPECT_TRUE(AdviseDeviceWaits(profile).empty());
  EXPECT_EQ(FormatDeviceWaitAdvice({}), "No device waited for a host op.\n");
}

}  // namespace
}  // namespace profiler
}  // namespace tandem
