#include "profiler/chrome_trace.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "profiler/concurrency_testutil.h"
#include "profiler/crop_workload_testutil.h"
#include "profiler/profiler.h"

namespace tandem {
namespace profiler {
namespace {

Profile ProfileCrop(int runs, int warmup) {
  auto crop = CropWorkload::Create(*ParsePlace("sim:0"), /*slice_on_cpu=*/false);
  CHECK(crop.ok()) << crop.status();
  CHECK(StartProfiler({ProfilerState::kAll, warmup}).ok());
  CHECK((*crop)->Run(runs).ok());
  { RecordEvent span("after_runs"); }
  auto profile = CollectProfile();
  CHECK(profile.ok()) << profile.status();
  return *std::move(profile);
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

TEST(ChromeTraceTest, WrittenFileParsesAndHoldsEveryEvent) {
  const Profile profile = ProfileCrop(/*runs=*/3, /*warmup=*/1);
  const std::string path = TempPath("trace.json");
  ASSERT_OK(WriteChromeTrace(profile, path));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_OK_AND_ASSIGN(Json trace, ParseJson(text.str()));
  ASSERT_OK_AND_ASSIGN(const Json::Elements* events, trace.GetArray("traceEvents"));
  EXPECT_EQ(trace.GetString("displayTimeUnit").value_or(""), "ms");

  std::map<std::string, int> by_category;      // host track
  std::map<std::string, int> device_category;  // sim:0's stream tracks
  std::map<std::string, std::string> process_names;
  for (const Json& e : *events) {
    ASSERT_OK_AND_ASSIGN(std::string ph, e.GetString("ph"));
    ASSERT_OK_AND_ASSIGN(int64_t pid, e.GetInt("pid"));
    if (ph == "M") {
      ASSERT_OK_AND_ASSIGN(const Json* args, e.Get("args"));
      if (e.GetString("name").value_or("") == "process_name") {
        process_names[std::to_string(pid)] = args->GetString("name").value_or("");
      }
      continue;
    }
    ASSERT_EQ(ph, "X");
    ASSERT_OK_AND_ASSIGN(double ts, e.GetDouble("ts"));
    ASSERT_OK_AND_ASSIGN(double dur, e.GetDouble("dur"));
    EXPECT_GE(ts, 0);
    EXPECT_GE(dur, 0);
    ASSERT_OK(e.GetInt("tid").status());
    ASSERT_OK_AND_ASSIGN(std::string category, e.GetString("cat"));
    ++(pid == 1 ? by_category : device_category)[category];
    if (pid != 1) {
      ASSERT_OK_AND_ASSIGN(const Json* args, e.Get("args"));
      EXPECT_THAT(args->GetDouble("device_ms"), IsOkAndHolds(::testing::Ge(0.0)));
    }
    if (category == "copy") {
      ASSERT_OK_AND_ASSIGN(const Json* args, e.Get("args"));
      EXPECT_THAT(args->GetInt("bytes"), IsOkAndHolds(16));
      ASSERT_OK_AND_ASSIGN(std::string var, args->GetString("variable"));
      EXPECT_TRUE(var == "shape_0.tmp_0" || var == "slice_0.tmp_0") << var;
      ASSERT_OK_AND_ASSIGN(std::string name, e.GetString("name"));
      // The shape goes to the device asynchronously (queued on its stream);
      // the sliced shape comes back synchronously (the host reads it next).
      EXPECT_THAT(name, ::testing::StartsWith(var == "shape_0.tmp_0" ? "GpuMemcpyAsync:CPU->"
                                                                     : "GpuMemcpySync:"));
    }
  }
  EXPECT_EQ(process_names["1"], "host");
  EXPECT_EQ(process_names["2"], "sim:0");  // its stream tracks
  EXPECT_EQ(by_category["run"], 3);
  // The two fill_constant ops are folded: they run in the first run only.
  EXPECT_EQ(by_category["op"], 5 + 2 * 3);
  EXPECT_EQ(by_category["copy"], 3 * 2);
  EXPECT_EQ(by_category["user"], 1);
  // Sim times its streams: every copy, and the ops that launch device work
  // (the fill_constants, slice and crop_tensor, not shape), are on its
  // tracks too.
  EXPECT_EQ(device_category["op"], 2 + 2 * 3);
  EXPECT_EQ(device_category["copy"], 3 * 2);
  EXPECT_EQ(device_category.count("run"), 0u);
}

TEST(ChromeTraceTest, WarmupEventsAreMarked) {
  const Profile profile = ProfileCrop(/*runs=*/2, /*warmup=*/1);
  int warmup = 0, steady = 0;
  const Json trace = ChromeTraceJson(profile);
  for (const Json& e : trace.Find("traceEvents")->array()) {
    const Json* args = e.Find("args");
    if (e.Find("cat") == nullptr || e.Find("cat")->string_value() != "op") continue;
    if (e.Find("pid")->int_value() != 1) continue;  // the host track only
    (args->Has("warmup") ? warmup : steady)++;
  }
  EXPECT_EQ(warmup, 5);  // the first run computes the folded fill_constants
  EXPECT_EQ(steady, 3);
}

// Thread names by (pid, tid), and the complete events (pointers into the
// trace, which must outlive it).
struct Tracks {
  std::map<std::pair<int64_t, int64_t>, std::string> names;
  std::map<int64_t, std::string> processes;
  std::vector<const Json*> spans;

  explicit Tracks(const Json& trace) {
    for (const Json& e : trace.Find("traceEvents")->array()) {
      const std::string ph = e.Find("ph")->string_value();
      const int64_t pid = e.Find("pid")->int_value();
      if (ph == "X") {
        spans.push_back(&e);
      } else if (e.Find("name")->string_value() == "thread_name") {
        names[{pid, e.Find("tid")->int_value()}] = e.Find("args")->Find("name")->string_value();
      } else {
        processes[pid] = e.Find("args")->Find("name")->string_value();
      }
    }
  }
  // The track (thread name) of the complete event `name` in process `pid`.
  std::vector<std::string> TracksOf(const std::string& name, int64_t pid) const {
    std::vector<std::string> out;
    for (const Json* e : spans) {
      if (e->Find("name")->string_value() == name && e->Find("pid")->int_value() == pid) {
        auto it = names.find({pid, e->Find("tid")->int_value()});
        out.push_back(it == names.end() ? "?" : it->second);
      }
    }
    return out;
  }
  const Json* Find(const std::string& name, int64_t pid) const {
    for (const Json* e : spans) {
      if (e->Find("name")->string_value() == name && e->Find("pid")->int_value() == pid) return e;
    }
    return nullptr;
  }
};

TEST(ChromeTraceTest, OneTrackPerHostThreadAndDeviceStream) {
  FakeClock clock;
  QueueDevice gpu(GPUPlace(0));
  ASSERT_OK(StartProfiler({ProfilerState::kAll, 0}));
  FeedConcurrentRun(&gpu);
  ASSERT_OK_AND_ASSIGN(Profile profile, CollectProfile());
  const Json trace = ChromeTraceJson(profile);
  const Tracks t(trace);  // points into `trace`
  std::set<std::string> host;
  for (const auto& [key, name] : t.names) {
    if (key.first == 1) host.insert(name);
  }
  EXPECT_THAT(host, ::testing::ElementsAre("dispatcher", "host worker 0", "host worker 1"));
  using ::testing::ElementsAre;
  EXPECT_THAT(t.TracksOf("matmul", 1), ElementsAre("dispatcher"));
  EXPECT_THAT(t.TracksOf("lookup_table", 1), ElementsAre("host worker 0"));
  EXPECT_THAT(t.TracksOf("sum", 1), ElementsAre("host worker 1"));
  EXPECT_THAT(t.TracksOf("GpuMemcpySync:GPU->CPU", 1), ElementsAre("host worker 1"));
  EXPECT_THAT(t.TracksOf("wait: lookup_table", 1), ElementsAre("host worker 0"));
  EXPECT_THAT(t.TracksOf("wait: end of run", 1), ElementsAre("dispatcher"));
  // The device: its own process, one track per stream.
  int64_t gpu_pid = -1;
  for (const auto& [pid, name] : t.processes) {
    if (name == "gpu:0") gpu_pid = pid;
  }
  ASSERT_GT(gpu_pid, 1);
  EXPECT_THAT(t.TracksOf("matmul", gpu_pid), ElementsAre("gpu:0 compute"));
  EXPECT_THAT(t.TracksOf("relu", gpu_pid), ElementsAre("gpu:0 compute"));
  EXPECT_THAT(t.TracksOf("GpuMemcpySync:GPU->CPU", gpu_pid), ElementsAre("gpu:0 copy"));
  const Json* copy = t.Find("GpuMemcpySync:GPU->CPU", gpu_pid);
  EXPECT_DOUBLE_EQ(copy->Find("ts")->double_value(), 45);
  EXPECT_NEAR(copy->Find("dur")->double_value(), 10, 1e-9);
  const Json* sum = t.Find("sum", 1);
  EXPECT_EQ(sum->Find("args")->Find("worker")->int_value(), 1);
  const Json* host_copy = t.Find("GpuMemcpySync:GPU->CPU", 1);
  EXPECT_EQ(host_copy->Find("args")->Find("parent_op_index")->int_value(), 3);
  EXPECT_EQ(host_copy->Find("args")->Find("consumer")->string_value(), "sum");
  EXPECT_EQ(host_copy->Find("cat")->string_value(), "copy");
  EXPECT_EQ(t.Find("wait: end of run", 1)->Find("cat")->string_value(), "wait");
}

TEST(ChromeTraceTest, UnwritablePathNamesPathAndReason) {
  const Profile profile = ProfileCrop(1, 0);
  EXPECT_THAT(WriteChromeTrace(profile, "/nonexistent-dir/t.json"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("cannot write the Chrome trace to '/nonexistent-dir/t.json'")));
  const std::string dir = TempPath("");
  EXPECT_THAT(WriteChromeTrace(profile, dir),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("Is a directory")));
}

}  // namespace
}  // namespace profiler
}  // namespace tandem
