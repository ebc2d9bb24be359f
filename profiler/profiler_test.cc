#include "profiler/profiler.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/device/device_registry.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/runtime/execution_observer.h"
#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "profiler/chrome_trace.h"
#include "profiler/concurrency_testutil.h"
#include "profiler/crop_workload_testutil.h"

namespace tandem {
namespace profiler {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::Not;

Place Sim0() { return *ParsePlace("sim:0"); }

class ProfilerTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (IsProfilerEnabled()) CollectProfile().status().IgnoreError();
  }
};

int CountKind(const Profile& p, EventKind kind, bool steady_only) {
  int n = 0;
  for (const ProfileEvent& e : p.events) n += e.kind == kind && (!steady_only || p.IsSteady(e));
  return n;
}

TEST_F(ProfilerTest, ParsesStatesInAnyCase) {
  EXPECT_THAT(ParseProfilerState("CPU"), IsOkAndHolds(ProfilerState::kCPU));
  EXPECT_THAT(ParseProfilerState("gpu"), IsOkAndHolds(ProfilerState::kGPU));
  EXPECT_THAT(ParseProfilerState("ALL"), IsOkAndHolds(ProfilerState::kAll));
  EXPECT_THAT(ParseProfilerState("All"), IsOkAndHolds(ProfilerState::kAll));
}

TEST_F(ProfilerTest, UnknownStateListsTheAcceptedOnes) {
  EXPECT_THAT(StartProfiler("TPU"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'TPU'"), HasSubstr("\"CPU\", \"GPU\", \"All\""))));
  EXPECT_FALSE(IsProfilerEnabled());
}

TEST_F(ProfilerTest, UnknownSortKeyListsTheAcceptedOnesAndKeepsProfiling) {
  ASSERT_OK(StartProfiler("All"));
  EXPECT_THAT(StopProfiler("median"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'median'"),
                             HasSubstr("\"default\", \"calls\", \"total\", \"max\", \"min\", "
                                       "\"ave\""))));
  EXPECT_TRUE(IsProfilerEnabled());
  EXPECT_OK(StopProfiler("TOTAL"));
}

TEST_F(ProfilerTest, StartStopMisuseIsFailedPrecondition) {
  EXPECT_THAT(StopProfiler(), StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_OK_AND_ASSIGN(auto crop, CropWorkload::Create(Sim0(), false));
  EXPECT_THAT(AttachPlan(crop->plan()), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(StartProfiler({ProfilerState::kCPU, -1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("warmup_runs")));
  ASSERT_OK(StartProfiler("CPU"));
  EXPECT_THAT(StartProfiler("CPU"), StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST_F(ProfilerTest, ObserverIsInstalledOnlyWhileProfiling) {
  EXPECT_EQ(GetExecutionObserver(), nullptr);
  ASSERT_OK(StartProfiler("All"));
  EXPECT_NE(GetExecutionObserver(), nullptr);
  ASSERT_OK(CollectProfile().status());
  EXPECT_EQ(GetExecutionObserver(), nullptr);
}

TEST_F(ProfilerTest, EachOpAndCopyYieldsExactlyOneEvent) {
  for (bool slice_on_cpu : {false, true}) {
    SCOPED_TRACE(slice_on_cpu ? "slice on cpu" : "slice on sim:0");
    ASSERT_OK_AND_ASSIGN(auto crop, CropWorkload::Create(Sim0(), slice_on_cpu));
    ASSERT_OK(StartProfiler({ProfilerState::kAll, /*warmup_runs=*/0}));
    ASSERT_OK_AND_ASSIGN(std::vector<RunStats> stats, crop->Run(4));
    ASSERT_OK_AND_ASSIGN(Profile p, CollectProfile());
    ASSERT_EQ(p.runs.size(), 4u);
    int ops = 0, copies = 0;
    for (const RunStats& s : stats) {
      ops += s.ops;
      copies += s.copies();
    }
    EXPECT_EQ(CountKind(p, EventKind::kOp, false), ops);
    EXPECT_EQ(CountKind(p, EventKind::kCopy, false), copies);
    EXPECT_EQ(copies, slice_on_cpu ? 0 : 8);
    // Per run: one event per executed step (concurrent runs may record them
    // out of program order), each step once; waits are events of their own.
    std::vector<std::vector<int>> per_run(p.runs.size());
    for (const ProfileEvent& e : p.events) {
      if (e.kind != EventKind::kWait) per_run.at(e.run).push_back(e.op_index);
    }
    for (size_t r = 0; r < per_run.size(); ++r) {
      EXPECT_EQ(per_run[r].size(), static_cast<size_t>(stats[r].ops + stats[r].copies()));
      std::sort(per_run[r].begin(), per_run[r].end());
      for (size_t i = 1; i < per_run[r].size(); ++i) EXPECT_LT(per_run[r][i - 1], per_run[r][i]);
      if (!per_run[r].empty()) EXPECT_GE(per_run[r][0], 0);
    }
    for (size_t r = 0; r < p.runs.size(); ++r) {
      EXPECT_EQ(p.runs[r].stats.copies(), stats[r].copies());
    }
  }
}

TEST_F(ProfilerTest, TimestampsAreMonotonicAndInsideTheirRun) {
  ASSERT_OK_AND_ASSIGN(auto crop, CropWorkload::Create(Sim0(), false));
  ASSERT_OK(StartProfiler({ProfilerState::kAll, 0}));
  ASSERT_OK(crop->Run(3).status());
  ASSERT_OK_AND_ASSIGN(Profile p, CollectProfile());
  int64_t last_end = 0;
  for (const ProfileEvent& e : p.events) {
    EXPECT_LE(e.start_ns, e.end_ns) << e.name;
    EXPECT_GE(e.start_ns, last_end) << e.name;  // one thread: events do not overlap
    last_end = e.end_ns;
    const ProfileRun& run = p.runs.at(e.run);
    EXPECT_GE(e.start_ns, run.start_ns);
    EXPECT_LE(e.end_ns, run.end_ns);
  }
  for (size_t r = 1; r < p.runs.size(); ++r) EXPECT_GE(p.runs[r].start_ns, p.runs[r - 1].end_ns);
  EXPECT_LE(p.runs.back().end_ns, p.duration_ns);
}

std::vector<std::string> OutputBytes(const CropWorkload& crop) {
  std::vector<std::string> bytes;
  for (const Tensor& t : crop.outputs()) {
    bytes.emplace_back(static_cast<const char*>(t.raw_data()), t.NumBytes());
  }
  return bytes;
}

TEST_F(ProfilerTest, ProfilingDoesNotChangeResults) {
  for (bool slice_on_cpu : {false, true}) {
    ASSERT_OK_AND_ASSIGN(auto off, CropWorkload::Create(Sim0(), slice_on_cpu));
    ASSERT_OK(off->Run(3).status());
    ASSERT_OK_AND_ASSIGN(auto on, CropWorkload::Create(Sim0(), slice_on_cpu));
    ASSERT_OK(StartProfiler("All"));
    ASSERT_OK(on->Run(3).status());
    ASSERT_OK(CollectProfile().status());
    EXPECT_EQ(OutputBytes(*on), OutputBytes(*off));
  }
}

TEST_F(ProfilerTest, WarmupRunsAreRecordedButNotSteady) {
  ASSERT_OK_AND_ASSIGN(auto crop, CropWorkload::Create(Sim0(), false));
  ASSERT_OK(StartProfiler({ProfilerState::kAll, /*warmup_runs=*/2}));
  ASSERT_OK(crop->Run(5).status());
  ASSERT_OK_AND_ASSIGN(Profile p, CollectProfile());
  ASSERT_EQ(p.runs.size(), 5u);
  EXPECT_TRUE(p.runs[0].warmup && p.runs[1].warmup && !p.runs[2].warmup);
  EXPECT_EQ(p.SteadyRuns(), 3);
  EXPECT_EQ(p.SteadyStepMs().size(), 3u);
  EXPECT_EQ(CountKind(p, EventKind::kCopy, true), 6);
  EXPECT_EQ(CountKind(p, EventKind::kCopy, false), 10);
  EXPECT_EQ(p.steady_start_ns, p.runs[1].end_ns);
}

TEST_F(ProfilerTest, ResetDiscardsEventsButNotTheWarmupCount) {
  ASSERT_OK_AND_ASSIGN(auto crop, CropWorkload::Create(Sim0(), false));
  ASSERT_OK(StartProfiler({ProfilerState::kAll, 1}));
  ASSERT_OK(crop->Run(2).status());
  ResetProfiler();
  EXPECT_TRUE(GetProfile().events.empty());
  ASSERT_OK(crop->Run(2).status());
  ASSERT_OK_AND_ASSIGN(Profile p, CollectProfile());
  EXPECT_EQ(p.runs.size(), 2u);
  EXPECT_EQ(p.SteadyRuns(), 2);
}

TEST_F(ProfilerTest, RecordEventSpansOnlyWhileProfiling) {
  { RecordEvent ignored("before"); }
  ASSERT_OK(StartProfiler({ProfilerState::kCPU, 0}));
  ASSERT_OK_AND_ASSIGN(auto crop, CropWorkload::Create(Sim0(), false));
  {
    RecordEvent step("train_step");
    ASSERT_OK(crop->Run(1).status());
  }
  ASSERT_OK_AND_ASSIGN(Profile p, CollectProfile());
  { RecordEvent ignored("after"); }
  ASSERT_EQ(CountKind(p, EventKind::kUser, false), 1);
  const ProfileEvent& span = p.events.back();
  EXPECT_EQ(span.name, "train_step");
  EXPECT_LE(span.start_ns, p.runs[0].start_ns);
  EXPECT_GE(span.end_ns, p.runs[0].end_ns);
  EXPECT_TRUE(p.IsSteady(span));
  EXPECT_EQ(CountKind(GetProfile(), EventKind::kUser, false), 1);
}

TEST_F(ProfilerTest, UnwritableTracePathIsAnErrorAndTheProfileIsKept) {
  ASSERT_OK_AND_ASSIGN(auto crop, CropWorkload::Create(Sim0(), false));
  ASSERT_OK(StartProfiler({ProfilerState::kAll, 0}));
  ASSERT_OK(crop->Run(2).status());
  const std::string path = "/nonexistent-dir/trace.json";
  EXPECT_THAT(StopProfiler("total", path),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr(path), HasSubstr("No such file or directory"))));
  EXPECT_FALSE(IsProfilerEnabled());
  EXPECT_EQ(CountKind(GetProfile(), EventKind::kCopy, false), 4);
  // Training goes on.
  EXPECT_OK(crop->Run(1).status());
}

TEST_F(ProfilerTest, ScopedProfilerStopsOnDestruction) {
  ASSERT_OK_AND_ASSIGN(auto crop, CropWorkload::Create(Sim0(), false));
  {
    ScopedProfiler prof({ProfilerState::kAll, 0}, SortKey::kCalls);
    ASSERT_OK(prof.status());
    EXPECT_TRUE(IsProfilerEnabled());
    ASSERT_OK(crop->Run(1).status());
  }
  EXPECT_FALSE(IsProfilerEnabled());
  EXPECT_EQ(GetProfile().runs.size(), 1u);
  ScopedProfiler first({ProfilerState::kCPU, 0});
  ScopedProfiler second({ProfilerState::kCPU, 0});
  EXPECT_THAT(second.status(), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_OK(second.Stop());  // does not stop the first one's session
  EXPECT_TRUE(IsProfilerEnabled());
  EXPECT_OK(first.Stop());
  EXPECT_FALSE(IsProfilerEnabled());
}

// ---- Device time, with a device whose timing events count calls -----------

class FakeEvent final : public Event {
 public:
  double at_ms = 0;
};

class FakeStream final : public Stream {};

// Every recorded timing event is 0.5 ms after the previous one.
class FakeTimedDevice final : public Device {
 public:
  Place place() const override { return Sim0(); }
  std::string Description() const override { return "fake timed device"; }
  Allocator* allocator() override { return CpuAllocator::Default(); }
  Allocator* host_allocator() override { return CpuAllocator::Default(); }
  Stream* compute_stream() override { return &compute_; }
  Stream* copy_stream() override { return &copy_; }
  absl::StatusOr<std::unique_ptr<Stream>> CreateStream() override {
    return std::unique_ptr<Stream>(new FakeStream());
  }
  absl::StatusOr<std::unique_ptr<Event>> CreateEvent() override {
    return std::unique_ptr<Event>(new FakeEvent());
  }
  absl::Status Copy(CopyKind, void*, const void*, size_t) override { return absl::OkStatus(); }
  absl::Status CopyAsync(CopyKind, void*, const void*, size_t, Stream*) override {
    return absl::OkStatus();
  }
  absl::StatusOr<std::unique_ptr<Event>> CreateTimingEvent() override { return CreateEvent(); }
  absl::StatusOr<double> EventElapsedMs(Event* start, Event* end) override {
    return static_cast<FakeEvent*>(end)->at_ms - static_cast<FakeEvent*>(start)->at_ms;
  }
  absl::Status RecordEvent(Event* event, Stream*) override {
    static_cast<FakeEvent*>(event)->at_ms = clock_ms_ += 0.5;
    return absl::OkStatus();
  }
  absl::Status StreamWaitEvent(Stream*, Event*) override { return absl::OkStatus(); }
  absl::Status SynchronizeEvent(Event*) override { return absl::OkStatus(); }
  absl::Status SynchronizeStream(Stream*) override { return absl::OkStatus(); }
  absl::Status Synchronize() override { return absl::OkStatus(); }

 private:
  FakeStream compute_, copy_;
  double clock_ms_ = 0;
};

// Feeds the installed observer one run: slice (device work), shape (its
// output lives in host memory: no device work) and an H2D copy.
void FakeRun(FakeTimedDevice* device) {
  ExecutionObserver* observer = GetExecutionObserver();
  ASSERT_NE(observer, nullptr);
  OpDesc slice, shape, copy;
  slice.type = "slice";
  slice.outputs["Out"] = {"s"};
  shape.type = "shape";
  shape.outputs["Out"] = {"t"};
  copy.type = "memcpy_h2d";
  observer->OnRunBegin();
  int index = 0;
  for (const OpDesc* op : {&slice, &shape, &copy}) {
    OpEvent e;
    e.op = op;
    e.index = index++;
    e.place = device->place();
    e.device = device;
    e.is_copy = op == &copy;
    e.stream = e.is_copy ? device->copy_stream() : device->compute_stream();
    e.bytes = e.is_copy ? 16 : 0;
    e.var = e.is_copy ? "t" : "";
    e.consumer = e.is_copy ? "slice" : "";
    observer->OnOpBegin(e);
    observer->OnOpEnd(e);
  }
  RunStats stats;
  stats.ops = 2;
  stats.copies_h2d = 1;
  observer->OnRunEnd(stats);
}

TEST_F(ProfilerTest, DeviceTimeOnlyForOpsThatLaunchDeviceWork) {
  FakeTimedDevice device;
  ASSERT_OK(StartProfiler({ProfilerState::kGPU, 0}));
  FakeRun(&device);
  ASSERT_OK_AND_ASSIGN(Profile p, CollectProfile());
  ASSERT_EQ(p.events.size(), 3u);
  EXPECT_TRUE(p.events[0].has_device_time);  // slice: two events 0.5 ms apart
  EXPECT_DOUBLE_EQ(p.events[0].device_ms, 0.5);
  EXPECT_FALSE(p.events[1].has_device_time);  // shape: HostMemory output
  EXPECT_TRUE(p.events[2].has_device_time);   // the copy
  EXPECT_DOUBLE_EQ(p.events[2].device_ms, 0.5);
  EXPECT_GE(p.events[2].device_start_ns, p.events[2].start_ns);
  ASSERT_EQ(p.streams.size(), 2u);
  EXPECT_EQ(p.streams[p.events[0].stream].name, "compute");
  EXPECT_EQ(p.streams[p.events[2].stream].name, "copy");
  // The trace has a track per device stream holding the device spans.
  const Json trace = ChromeTraceJson(p);
  int device_spans = 0;
  for (const Json& e : trace.Find("traceEvents")->array()) {
    if (e.Find("ph")->string_value() == "X" && e.Find("pid")->int_value() != 1) ++device_spans;
  }
  EXPECT_EQ(device_spans, 2);
}

TEST_F(ProfilerTest, CpuStateRecordsNoDeviceTime) {
  FakeTimedDevice device;
  ASSERT_OK(StartProfiler({ProfilerState::kCPU, 0}));
  FakeRun(&device);
  ASSERT_OK_AND_ASSIGN(Profile p, CollectProfile());
  ASSERT_EQ(p.events.size(), 3u);
  for (const ProfileEvent& e : p.events) EXPECT_FALSE(e.has_device_time) << e.name;
}

// ---- Concurrent hooks (concurrency_testutil.h: the timeline and its sums) --

const ProfileEvent* FindEvent(const Profile& p, EventKind kind, const std::string& name) {
  for (const ProfileEvent& e : p.events) {
    if (e.kind == kind && e.name == name) return &e;
  }
  return nullptr;
}

constexpr double kEps = 1e-12;

TEST_F(ProfilerTest, ConcurrentHooksNestPerThreadAndTimeEachStream) {
  FakeClock clock;
  QueueDevice gpu(GPUPlace(0));
  ASSERT_OK(StartProfiler({ProfilerState::kAll, 0}));
  FeedConcurrentRun(&gpu);
  ASSERT_OK_AND_ASSIGN(Profile p, CollectProfile());
  ASSERT_EQ(p.runs.size(), 1u);  // counted once, by the dispatcher
  EXPECT_EQ(p.runs[0].start_ns, 0);
  EXPECT_EQ(p.runs[0].end_ns, 100000);
  EXPECT_EQ(p.runs[0].stats.ops, 4);
  EXPECT_EQ(CountKind(p, EventKind::kOp, false), 4);
  EXPECT_EQ(CountKind(p, EventKind::kCopy, false), 1);
  EXPECT_EQ(CountKind(p, EventKind::kWait, false), 2);
  for (const ProfileEvent& e : p.events) EXPECT_EQ(e.run, 0) << e.name;  // workers' too

  const ProfileEvent* sum = FindEvent(p, EventKind::kOp, "sum");
  const ProfileEvent* copy = FindEvent(p, EventKind::kCopy, "memcpy_d2h");
  const ProfileEvent* lookup = FindEvent(p, EventKind::kOp, "lookup_table");
  ASSERT_TRUE(sum != nullptr && copy != nullptr && lookup != nullptr);
  // The copy nests under sum, on sum's thread; sum's self time leaves it out.
  EXPECT_EQ(sum->start_ns, 20000);
  EXPECT_EQ(sum->end_ns, 60000);
  EXPECT_EQ(sum->child_ns, 10000);
  EXPECT_NEAR(sum->self_ms(), 0.030, kEps);
  EXPECT_EQ(copy->parent_op_index, 3);
  EXPECT_EQ(copy->consumer, "sum");
  EXPECT_EQ(copy->thread, sum->thread);
  EXPECT_EQ(copy->worker, 1);
  EXPECT_EQ(copy->start_ns, 45000);
  EXPECT_EQ(copy->end_ns, 55000);
  EXPECT_EQ(lookup->parent_op_index, -1);
  EXPECT_NE(lookup->thread, sum->thread);
  // Device intervals, per stream, on the host clock.
  const ProfileEvent* matmul = FindEvent(p, EventKind::kOp, "matmul");
  const ProfileEvent* relu = FindEvent(p, EventKind::kOp, "relu");
  ASSERT_TRUE(matmul != nullptr && relu != nullptr);
  EXPECT_TRUE(matmul->has_device_time);
  EXPECT_EQ(matmul->device_start_ns, 10000);
  EXPECT_NEAR(matmul->device_ms, 0.030, kEps);
  EXPECT_EQ(relu->device_start_ns, 62000);
  EXPECT_NEAR(relu->device_ms, 0.020, kEps);
  EXPECT_TRUE(copy->has_device_time);
  EXPECT_EQ(copy->device_start_ns, 45000);
  EXPECT_NEAR(copy->device_ms, 0.010, kEps);
  EXPECT_FALSE(lookup->has_device_time);  // cpu: no timer
  EXPECT_EQ(p.streams[matmul->stream].name, "compute");
  EXPECT_EQ(p.streams[relu->stream].name, "compute");
  EXPECT_EQ(p.streams[copy->stream].name, "copy");
  EXPECT_EQ(p.streams[copy->stream].place, GPUPlace(0));
  // Waits: one before lookup_table on its worker, one at the end of the run.
  const ProfileEvent* wait = FindEvent(p, EventKind::kWait, "lookup_table");
  const ProfileEvent* end_wait = FindEvent(p, EventKind::kWait, "end of run");
  ASSERT_TRUE(wait != nullptr && end_wait != nullptr);
  EXPECT_EQ(wait->thread, lookup->thread);
  EXPECT_EQ(wait->end_ns - wait->start_ns, 3000);
  EXPECT_EQ(end_wait->thread, matmul->thread);
  EXPECT_EQ(end_wait->op_index, -1);

  std::vector<std::string> names;
  for (const ThreadInfo& t : p.threads) names.push_back(t.name);
  EXPECT_THAT(names,
              ::testing::UnorderedElementsAre("dispatcher", "host worker 0", "host worker 1"));
}

TEST_F(ProfilerTest, ConcurrencyFiguresOfAConcurrentRunAreExact) {
  FakeClock clock;
  QueueDevice gpu(GPUPlace(0));
  ASSERT_OK(StartProfiler({ProfilerState::kAll, 0}));
  FeedConcurrentRun(&gpu);
  ASSERT_OK_AND_ASSIGN(Profile p, CollectProfile());
  const Concurrency& c = p.concurrency;
  ASSERT_EQ(c.steps.size(), 1u);
  EXPECT_EQ(c.steady_steps, 1);
  const StepConcurrency& s = c.steps[0];
  EXPECT_TRUE(s.steady);
  EXPECT_NEAR(s.step_ms, 0.100, kEps);
  EXPECT_NEAR(s.host_busy_ms, 0.045, kEps);  // 5..45 and 55..60: the copy is not host work
  EXPECT_NEAR(s.host_wait_ms, 0.010, kEps);
  EXPECT_NEAR(s.overlap_ms, 0.030, kEps);
  ASSERT_EQ(s.devices.size(), 1u);  // cpu is the host, not a device
  const DeviceConcurrency* d = s.Find(GPUPlace(0));
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(d->timed);
  EXPECT_NEAR(d->busy_ms, 0.060, kEps);  // both streams
  EXPECT_NEAR(d->overlap_ms, 0.030, kEps);
  EXPECT_NEAR(d->idle_for_host_ms, 0.015, kEps);
  EXPECT_EQ(s.Find(CPUPlace()), nullptr);
  // One steady step: the medians are its figures.
  EXPECT_NEAR(c.median.host_busy_ms, 0.045, kEps);
  EXPECT_NEAR(c.median.devices.at(0).idle_for_host_ms, 0.015, kEps);
  // gpu:0 idles 5 us during lookup_table and 10 us during sum.
  ASSERT_EQ(c.blockers.size(), 1u);
  EXPECT_EQ(c.blockers[0].device, GPUPlace(0));
  EXPECT_EQ(c.blockers[0].op, "sum");
  EXPECT_EQ(c.blockers[0].op_index, 3);
  EXPECT_NEAR(c.blockers[0].idle_ms_per_step, 0.010, kEps);
  EXPECT_EQ(DescribeHostBlocker(c.blockers[0]),
            "gpu:0 idled 10 us per step waiting for host op sum (#3)");
}

TEST_F(ProfilerTest, WarmupRunsAreLeftOutOfTheConcurrencyMedians) {
  FakeClock clock;
  QueueDevice gpu(GPUPlace(0));
  ASSERT_OK(StartProfiler({ProfilerState::kAll, 1}));
  for (int run = 0; run < 3; ++run) FeedConcurrentRun(&gpu, 1000 * run);
  ASSERT_OK_AND_ASSIGN(Profile p, CollectProfile());
  ASSERT_EQ(p.runs.size(), 3u);
  const Concurrency& c = p.concurrency;
  ASSERT_EQ(c.steps.size(), 3u);
  EXPECT_FALSE(c.steps[0].steady);
  EXPECT_EQ(c.steady_steps, 2);
  for (const StepConcurrency& s : c.steps) {
    EXPECT_NEAR(s.overlap_ms, 0.030, kEps) << s.run;  // each run anchored on its own
  }
  EXPECT_NEAR(c.blockers.at(0).idle_ms_per_step, 0.010, kEps);
  // The same worker threads every run: one name each.
  EXPECT_EQ(p.threads.size(), 3u);
}

TEST_F(ProfilerTest, AFailedOpLeavesNoSpanBehind) {
  FakeClock clock;
  QueueDevice gpu(GPUPlace(0));
  ASSERT_OK(StartProfiler({ProfilerState::kAll, 0}));
  ExecutionObserver* observer = GetExecutionObserver();
  OpDesc failing, ok;
  failing.type = "failing";
  ok.type = "ok";
  OpEvent a, b;
  a.op = &failing;
  a.index = 1;
  a.device = &gpu;
  a.stream = gpu.compute_stream();
  b = a;
  b.op = &ok;
  b.index = 2;
  FakeClock::SetUs(1);
  observer->OnRunBegin();
  observer->OnOpBegin(a);  // fails: no OnOpEnd, no OnRunEnd
  FakeClock::SetUs(10);
  observer->OnRunBegin();
  FakeClock::SetUs(11);
  observer->OnOpBegin(b);
  gpu.Run(gpu.compute_stream(), 5);
  FakeClock::SetUs(12);
  observer->OnOpEnd(b);
  observer->OnOpEnd(a);  // too late: ignored
  FakeClock::SetUs(20);
  observer->OnRunEnd(RunStats());
  ASSERT_OK_AND_ASSIGN(Profile p, CollectProfile());
  ASSERT_EQ(p.runs.size(), 2u);
  EXPECT_EQ(p.runs[0].end_ns, -1);
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].name, "ok");
  EXPECT_EQ(p.events[0].run, 1);
  EXPECT_EQ(p.events[0].child_ns, 0);
  EXPECT_EQ(p.events[0].device_start_ns, 11000);
  EXPECT_NEAR(p.events[0].device_ms, 0.005, kEps);
  ASSERT_EQ(p.concurrency.steps.size(), 1u);  // the failed run has no figures
  EXPECT_NEAR(p.concurrency.steps[0].devices.at(0).busy_ms, 0.005, kEps);
}

TEST_F(ProfilerTest, ManyWorkersAtOnceLoseNoEventAndNestEachCopyUnderItsOp) {
  constexpr int kWorkers = 4, kOps = 500;
  QueueDevice gpu(GPUPlace(0));
  ASSERT_OK(StartProfiler({ProfilerState::kAll, 0}));
  ExecutionObserver* observer = GetExecutionObserver();
  std::vector<OpDesc> ops(kWorkers);
  OpDesc copy_op;
  copy_op.type = "memcpy_d2h";
  observer->OnRunBegin();
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    ops[w].type = absl::StrCat("host_op_", w);
    workers.emplace_back([&, w] {
      for (int i = 0; i < kOps; ++i) {
        OpEvent op;
        op.op = &ops[w];
        op.index = w * kOps + i;
        op.worker = w;
        OpEvent copy;
        copy.op = &copy_op;
        copy.index = 100000 + op.index;
        copy.device = &gpu;
        copy.stream = gpu.copy_stream();
        copy.place = gpu.place();
        copy.is_copy = true;
        copy.copy_kind = CopyKind::kDeviceToHost;
        copy.worker = w;
        observer->OnOpBegin(op);
        observer->OnOpBegin(copy);
        observer->OnOpEnd(copy);
        observer->OnOpEnd(op);
      }
    });
  }
  for (std::thread& t : workers) t.join();
  observer->OnRunEnd(RunStats());
  ASSERT_OK_AND_ASSIGN(Profile p, CollectProfile());
  ASSERT_EQ(p.runs.size(), 1u);
  EXPECT_EQ(CountKind(p, EventKind::kOp, false), kWorkers * kOps);
  EXPECT_EQ(CountKind(p, EventKind::kCopy, false), kWorkers * kOps);
  std::map<int, int> thread_of_op;  // op_index -> thread
  for (const ProfileEvent& e : p.events) {
    ASSERT_EQ(e.run, 0) << e.name;
    if (e.kind == EventKind::kOp) {
      EXPECT_EQ(e.name, absl::StrCat("host_op_", e.worker));
      thread_of_op[e.op_index] = e.thread;
    }
  }
  for (const ProfileEvent& e : p.events) {
    if (e.kind != EventKind::kCopy) continue;
    ASSERT_EQ(e.parent_op_index, e.op_index - 100000);
    EXPECT_EQ(e.consumer, absl::StrCat("host_op_", e.worker));
    EXPECT_EQ(e.thread, thread_of_op.at(e.parent_op_index));
    EXPECT_TRUE(e.has_device_time);  // every timing was read at the run's end
  }
  EXPECT_EQ(p.threads.size(), 1u + kWorkers);
}

// ComputeConcurrency on a hand-made profile: medians per figure, devices
// without a timer.
ProfileEvent Span(EventKind kind, int run, Place place, int thread, int64_t start_us,
                  int64_t end_us) {
  ProfileEvent e;
  e.kind = kind;
  e.name = "op";
  e.run = run;
  e.place = place;
  e.thread = thread;
  e.start_ns = start_us * 1000;
  e.end_ns = end_us * 1000;
  return e;
}

TEST(ComputeConcurrencyTest, MediansPerFigureAndUntimedDevices) {
  Profile p;
  p.streams = {{GPUPlace(0), "compute"}, {GPUPlace(1), "compute"}, {CPUPlace(), "compute"}};
  for (int r = 0; r < 3; ++r) {
    ProfileRun run;
    run.start_ns = r * 100000;
    run.end_ns = run.start_ns + (r + 1) * 10000;  // 10, 20, 30 us
    p.runs.push_back(run);
    const int64_t t0 = r * 100;
    // Host: two threads, 0..4 and 2..(4 + 2r): union 4 + 2r us.
    p.events.push_back(Span(EventKind::kOp, r, CPUPlace(), 0, t0, t0 + 4));
    p.events.push_back(Span(EventKind::kOp, r, CPUPlace(), 1, t0 + 2, t0 + 4 + 2 * r));
    // gpu:0 busy 3..(5 + r) us; gpu:1 is used but has no timer.
    ProfileEvent k = Span(EventKind::kOp, r, GPUPlace(0), 0, t0, t0 + 1);
    k.stream = 0;
    k.has_device_time = true;
    k.device_start_ns = (t0 + 3) * 1000;
    k.device_ms = (2 + r) * 1e-3;
    p.events.push_back(k);
    ProfileEvent untimed = Span(EventKind::kOp, r, GPUPlace(1), 0, t0 + 1, t0 + 2);
    untimed.stream = 1;
    p.events.push_back(untimed);
    p.events.push_back(Span(EventKind::kWait, r, CPUPlace(), 0, t0 + 6, t0 + 6 + 3 * r));
  }
  const Concurrency c = ComputeConcurrency(p);
  ASSERT_EQ(c.steps.size(), 3u);
  EXPECT_EQ(c.steady_steps, 3);
  std::vector<double> busy, overlap;
  for (const StepConcurrency& s : c.steps) {
    busy.push_back(s.host_busy_ms);
    overlap.push_back(s.overlap_ms);
  }
  EXPECT_NEAR(busy[0], 0.004, kEps);
  EXPECT_NEAR(busy[1], 0.006, kEps);
  EXPECT_NEAR(busy[2], 0.008, kEps);
  // Host busy 0..(4 + 2r), gpu:0 3..(5 + r): overlap 1, 3, 4 us.
  EXPECT_NEAR(overlap[0], 0.001, kEps);
  EXPECT_NEAR(overlap[1], 0.003, kEps);
  EXPECT_NEAR(overlap[2], 0.004, kEps);
  EXPECT_NEAR(c.median.step_ms, 0.020, kEps);
  EXPECT_NEAR(c.median.host_busy_ms, 0.006, kEps);
  EXPECT_NEAR(c.median.host_wait_ms, 0.003, kEps);
  ASSERT_EQ(c.median.devices.size(), 2u);
  EXPECT_EQ(c.median.devices[0].place, GPUPlace(0));
  EXPECT_TRUE(c.median.devices[0].timed);
  EXPECT_NEAR(c.median.devices[0].busy_ms, 0.003, kEps);
  EXPECT_NEAR(c.median.devices[0].idle_for_host_ms, 0.003, kEps);  // 3, 3, 4
  EXPECT_EQ(c.median.devices[1].place, GPUPlace(1));
  EXPECT_FALSE(c.median.devices[1].timed);
  EXPECT_EQ(c.median.devices[1].busy_ms, 0);
  EXPECT_EQ(c.median.devices[1].idle_for_host_ms, 0);
  // gpu:0 idles before its work (0..3) while both host ops run.
  ASSERT_EQ(c.blockers.size(), 1u);
  EXPECT_EQ(c.blockers[0].device, GPUPlace(0));
}

// ComputeHostOptimizer on a hand-made profile of an offloaded step, two
// steps of 100 us: gpu:0 computes the backward 0..60 and a forward 95..100,
// a gradient comes down 40..50 (device time), the host updates 50..80 and
// casts the weight 80..90, which goes up 90..95.
TEST(ComputeHostOptimizerTest, HiddenWaitedAndBytesOfAnOffloadedStep) {
  static const KernelRegistration kAnyKernel{KernelDef("any", "cpu"), nullptr};
  Profile p;
  p.streams = {{GPUPlace(0), "compute"}, {GPUPlace(0), "copy"}};
  PlacedProgram plan;
  Block& block = plan.program.block();
  for (const char* v : {"w", "w.cast", "w.cast@GRAD", "w@GRAD", "w.cast@gpu:0", "x"}) {
    ASSERT_OK(block.AddVar(VarDesc{v, DataType::kFloat32, Shape({1})}));
  }
  block.FindVar("w")->persistable = true;
  struct PlanOp {
    std::string type;
    OpRole role;
    Place place;
    std::map<std::string, std::vector<std::string>> inputs, outputs;
    bool copy;
  };
  const std::vector<PlanOp> ops = {
      {"fc_grad",
       OpRole::kBackward,
       GPUPlace(0),
       {{"X", {"x"}}},
       {{"W@GRAD", {"w.cast@GRAD"}}},
       false},
      {"memcpy_d2h",
       OpRole::kCopy,
       GPUPlace(0),
       {{"X", {"w.cast@GRAD"}}},
       {{"Out", {"w.cast@GRAD"}}},
       true},
      {"cast",
       OpRole::kBackward,
       CPUPlace(),
       {{"X", {"w.cast@GRAD"}}},
       {{"Out", {"w@GRAD"}}},
       false},
      {"adam", OpRole::kOptimize, CPUPlace(), {{"Param", {"w"}}}, {{"ParamOut", {"w"}}}, false},
      {"cast", OpRole::kForward, CPUPlace(), {{"X", {"w"}}}, {{"Out", {"w.cast"}}}, false},
      {"memcpy_h2d",
       OpRole::kCopy,
       GPUPlace(0),
       {{"X", {"w.cast"}}},
       {{"Out", {"w.cast@gpu:0"}}},
       true},
      {"fc", OpRole::kForward, GPUPlace(0), {{"W", {"w.cast@gpu:0"}}}, {{"Out", {"x"}}}, false}};
  for (const PlanOp& o : ops) {
    OpDesc op;
    op.type = o.type;
    op.role = o.role;
    op.inputs = o.inputs;
    op.outputs = o.outputs;
    block.AppendOp(op);
    plan.places.push_back(o.place);
    plan.kernels.push_back(o.copy ? nullptr : &kAnyKernel);
    PlacementEntry entry;
    if (o.copy) entry.copy = CopyStep{};
    plan.table.push_back(entry);
  }
  p.plan = plan;
  for (int r = 0; r < 2; ++r) {
    const int64_t t = r * 100;
    p.runs.push_back(ProfileRun{0, t * 1000, (t + 100) * 1000});
    auto device = [&](EventKind kind, int op, int stream, int64_t from, int64_t to) {
      ProfileEvent e = Span(kind, r, GPUPlace(0), 0, t + from, t + from + 1);
      e.op_index = op;
      e.stream = stream;
      e.has_device_time = true;
      e.device_start_ns = (t + from) * 1000;
      e.device_ms = (to - from) * 1e-3;
      return e;
    };
    p.events.push_back(device(EventKind::kOp, 0, 0, 0, 60));
    ProfileEvent down = device(EventKind::kCopy, 1, 1, 40, 50);
    down.copy_kind = CopyKind::kDeviceToHost;
    down.var = "w.cast@GRAD";
    down.bytes = 200;
    down.consumer = "cast";
    p.events.push_back(down);
    ProfileEvent grad_cast = Span(EventKind::kOp, r, CPUPlace(), 1, t + 50, t + 60);
    grad_cast.op_index = 2;
    p.events.push_back(grad_cast);
    ProfileEvent adam = Span(EventKind::kOp, r, CPUPlace(), 1, t + 60, t + 80);
    adam.op_index = 3;
    p.events.push_back(adam);
    ProfileEvent cast = Span(EventKind::kOp, r, CPUPlace(), 1, t + 80, t + 90);
    cast.op_index = 4;
    p.events.push_back(cast);
    ProfileEvent up = device(EventKind::kCopy, 5, 1, 90, 95);
    up.var = "w.cast";
    up.bytes = 100;
    up.consumer = "fc";
    p.events.push_back(up);
    p.events.push_back(device(EventKind::kOp, 6, 0, 95, 100));
  }
  const std::optional<HostOptimizer> h = ComputeHostOptimizer(p);
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->device, GPUPlace(0));
  EXPECT_EQ(h->optimize_ops, 1);
  EXPECT_EQ(h->cast_ops, 2);  // the weight's and its gradient's
  EXPECT_EQ(h->steady_steps, 2);
  EXPECT_NEAR(h->step_ms, 0.100, kEps);
  EXPECT_NEAR(h->busy_ms, 0.040, kEps);      // 50..90
  EXPECT_NEAR(h->optimize_ms, 0.020, kEps);  // 60..80
  EXPECT_NEAR(h->hidden_ms, 0.010, kEps);    // 50..60 beside the backward
  EXPECT_NEAR(h->hidden_backward_ms, 0.010, kEps);
  EXPECT_NEAR(h->device_wait_ms, 0.030, kEps);    // 60..90
  EXPECT_NEAR(h->transfer_wait_ms, 0.005, kEps);  // 90..95; 40..50 hid behind the backward
  EXPECT_EQ(h->bytes_up, 100);
  EXPECT_EQ(h->weights_up, 100);
  EXPECT_EQ(h->bytes_down, 200);
  EXPECT_EQ(h->gradients_down, 200);

  // Without the plan there is nothing to say; nor with the updates on the device.
  Profile no_plan = p;
  no_plan.plan.reset();
  EXPECT_FALSE(ComputeHostOptimizer(no_plan).has_value());
  Profile on_device = p;
  for (int i : {2, 3, 4}) on_device.plan->places[i] = GPUPlace(0);
  EXPECT_FALSE(ComputeHostOptimizer(on_device).has_value());
}

// Mixed precision in the report: a kernel that computed in bfloat16 gets a
// row of its own beside its float32 runs, keeps the copies it needed under
// it, and the Chrome trace names each op's dtype.
TEST(ReportTest, OpRowsAndTraceNameTheDtypeOfMixedPrecisionKernels) {
  Profile p;
  p.runs.push_back(ProfileRun{0, 0, 100000});
  auto op = [&](const std::string& name, std::optional<DataType> dtype, int64_t from) {
    ProfileEvent e = Span(EventKind::kOp, 0, CPUPlace(), 0, from, from + 10);
    e.name = name;
    e.op_index = static_cast<int>(from);
    e.dtype = dtype;
    p.events.push_back(e);
  };
  op("fc", DataType::kFloat32, 0);
  op("fc", DataType::kBFloat16, 20);
  op("fc", DataType::kBFloat16, 40);
  op("shape", std::nullopt, 60);
  ProfileEvent up = Span(EventKind::kCopy, 0, CPUPlace(), 0, 21, 23);
  up.name = "memcpy_h2d";
  up.consumer = "fc";
  up.var = "x";
  up.bytes = 8;
  p.events.push_back(up);
  const std::string report = FormatReport(p, SortKey::kDefault);
  EXPECT_THAT(report, HasSubstr("fc [bfloat16]"));
  EXPECT_THAT(report, Not(HasSubstr("fc [float32]")));  // float32 is the plain name
  EXPECT_THAT(report, Not(HasSubstr("shape [")));
  const std::string trace = ChromeTraceJson(p).Dump();
  EXPECT_THAT(trace, HasSubstr("\"dtype\":\"bfloat16\""));
  EXPECT_THAT(trace, HasSubstr("\"dtype\":\"float32\""));
}

// The recomputed ops' time per step: device time where measured, host
// self time otherwise; steady runs only; nothing without such ops.
TEST(ComputeRecomputationTest, TimeOfTheRecomputedOpsPerStep) {
  static const KernelRegistration kAnyKernel{KernelDef("any", "cpu"), nullptr};
  Profile p;
  p.warmup_runs = 1;
  p.streams = {{GPUPlace(0), "compute"}};
  PlacedProgram plan;
  for (const auto& [type, recomputed, place] :
       std::vector<std::tuple<std::string, bool, Place>>{{"gelu", false, GPUPlace(0)},
                                                         {"fc_grad", false, GPUPlace(0)},
                                                         {"gelu", true, GPUPlace(0)},
                                                         {"cast", true, CPUPlace()}}) {
    OpDesc op;
    op.type = type;
    if (recomputed) op.origin = {OpOrigin::Kind::kRecomputeOf, 0, ""};
    plan.program.block().AppendOp(op);
    plan.places.push_back(place);
    plan.kernels.push_back(&kAnyKernel);
    plan.table.push_back(PlacementEntry{});
  }
  p.plan = plan;
  for (int r = 0; r < 3; ++r) {
    const int64_t t = r * 100;
    p.runs.push_back(ProfileRun{0, t * 1000, (t + 100) * 1000, /*warmup=*/r == 0});
    for (int op : {0, 1, 2}) {
      ProfileEvent e = Span(EventKind::kOp, r, GPUPlace(0), 0, t + 10 * op, t + 10 * op + 1);
      e.op_index = op;
      e.stream = 0;
      e.has_device_time = true;
      e.device_ms = (op + 1) * 0.004;  // the recomputed gelu: 12 us of device time
      p.events.push_back(e);
    }
    ProfileEvent cast = Span(EventKind::kOp, r, CPUPlace(), 1, t + 40, t + 47);  // 7 us on the host
    cast.op_index = 3;
    p.events.push_back(cast);
  }
  const std::optional<Recomputation> rc = ComputeRecomputation(p);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(rc->ops, 2);
  EXPECT_EQ(rc->steady_steps, 2);
  EXPECT_NEAR(rc->step_ms, 0.100, kEps);  // runs 1 and 2: 100..300 us
  EXPECT_NEAR(rc->ms, 0.012 + 0.007, kEps);
  EXPECT_THAT(FormatReport(p, SortKey::kTotal),
              HasSubstr("2 forward ops run again in the backward"));

  Profile none = p;
  for (OpDesc& op : none.plan->program.block().mutable_ops()) op.origin = OpOrigin();
  EXPECT_FALSE(ComputeRecomputation(none).has_value());
  EXPECT_THAT(FormatReport(none, SortKey::kTotal), Not(HasSubstr("Recomputation")));
}

// On a real GPU (skipped without one): device time for ops that launch
// kernels and for copies, none for shape (HostMemory output).
TEST_F(ProfilerTest, GpuOpsGetDeviceTimeWhereTheyLaunchWork) {
  if (DeviceRegistry::Global().DeviceCount(DeviceType::GPU()) == 0) GTEST_SKIP() << "no GPU";
  ASSERT_OK_AND_ASSIGN(auto crop, CropWorkload::Create(GPUPlace(0), /*slice_on_cpu=*/false));
  ASSERT_OK(StartProfiler({ProfilerState::kAll, 1}));
  ASSERT_OK(crop->Run(4).status());
  ASSERT_OK_AND_ASSIGN(Profile p, CollectProfile());
  int timed = 0;
  for (const ProfileEvent& e : p.events) {
    if (!p.IsSteady(e) || e.kind == EventKind::kWait) continue;
    SCOPED_TRACE(e.name);
    if (e.name == "shape") {
      EXPECT_FALSE(e.has_device_time);
    } else {
      EXPECT_TRUE(e.has_device_time);
      EXPECT_GT(e.device_ms, 0);
      EXPECT_LT(e.device_ms, 1000);
      EXPECT_GE(e.device_start_ns, e.start_ns);
      ++timed;
    }
  }
  EXPECT_GE(timed, 3 * 4);  // at least slice, crop_tensor and the two copies
}

}  // namespace
}  // namespace profiler
}  // namespace tandem
