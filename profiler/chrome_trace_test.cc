#include "profiler/chrome_trace.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
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
