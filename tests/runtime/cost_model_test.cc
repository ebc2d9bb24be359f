// The cost model (framework/estimate/cost_model.h): measured op times cached
// on disk per device, the analytical fallback, copy costs, cache files.
#include "framework/estimate/cost_model.h"

#include <dirent.h>

#include <cstdlib>
#include <fstream>

#include "framework/autoplace/calibration.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

const Place kSim0 = *ParsePlace("sim:0");

OpDesc Scale() {
  OpDesc op;
  op.type = "scale";
  op.inputs["X"] = {"x"};
  op.outputs["Out"] = {"y"};
  op.attrs["scale"] = 2.0;
  return op;
}

std::map<std::string, std::vector<TensorMeta>> Args(const std::string& arg, Shape shape) {
  return {{arg, {TensorMeta{DataType::kFloat32, std::move(shape)}}}};
}

std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    }
    closedir(d);
  }
  return names;
}

std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::system(("rm -rf '" + dir + "'").c_str());
  return dir;
}

TEST(CostModel, MeasuresOnceThenReadsTheCacheFile) {
  const std::string dir = FreshDir("costs_measure") + "/nested";
  const auto x = Args("X", Shape({64, 64}));
  const auto y = Args("Out", Shape({64, 64}));
  double first = 0, first_host = 0;
  {
    CostModel costs({.cache_dir = dir, .measure = true, .time_dispatch = TimeExecutorDispatch});
    ASSERT_OK_AND_ASSIGN(OpCost c, costs.OpTime(Scale(), kSim0, x, y));
    EXPECT_TRUE(c.measured);
    EXPECT_GT(c.micros, 0);
    EXPECT_EQ(costs.measurements(), 1);
    ASSERT_OK_AND_ASSIGN(OpCost again, costs.OpTime(Scale(), kSim0, x, y));
    EXPECT_EQ(again.micros, c.micros);
    EXPECT_EQ(costs.measurements(), 1);  // the same key is not timed again
    EXPECT_TRUE(costs.Constants(kSim0).measured);
    ASSERT_OK(costs.Save());
    first = c.micros;
    first_host = c.host_micros;
  }
  const std::vector<std::string> files = Files(dir);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].rfind("costs-sim-", 0), 0u) << files[0];
  std::ifstream in(dir + "/" + files[0]);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("@constants\tlaunch_us=", 0), 0u) << line;
  CostModel reread({.cache_dir = dir, .measure = true, .time_dispatch = TimeExecutorDispatch});
  ASSERT_OK_AND_ASSIGN(OpCost cached, reread.OpTime(Scale(), kSim0, x, y));
  EXPECT_TRUE(cached.measured);
  EXPECT_DOUBLE_EQ(cached.micros, first);
  EXPECT_DOUBLE_EQ(cached.host_micros, first_host);
  EXPECT_EQ(reread.measurements(), 0);
}

// A sparse update is timed too (its Grad: distinct rows of Param's height).
// On the host all of an op's time is the host's; on a device the host part
// is at least the executor's cost of an op and at most the whole.
TEST(CostModel, TimesSparseInputsAndSplitsOffTheHostPart) {
  OpDesc sgd;
  sgd.type = "sgd";
  sgd.inputs = {{"Param", {"w"}}, {"Grad", {"w@GRAD"}}, {"LearningRate", {"lr"}}};
  sgd.outputs = {{"ParamOut", {"w"}}};
  const std::map<std::string, std::vector<TensorMeta>> in = {
      {"Param", {TensorMeta{DataType::kFloat32, Shape({1000, 8})}}},
      {"Grad", {TensorMeta{DataType::kFloat32, Shape({64, 8}), true}}},
      {"LearningRate", {TensorMeta{DataType::kFloat32, Shape({1})}}}};
  const auto out = Args("ParamOut", Shape({1000, 8}));
  CostModel costs({.cache_dir = "", .measure = true, .time_dispatch = TimeExecutorDispatch});
  ASSERT_OK_AND_ASSIGN(OpCost cpu, costs.OpTime(sgd, CPUPlace(), in, out));
  EXPECT_TRUE(cpu.measured);
  EXPECT_DOUBLE_EQ(cpu.host_micros, cpu.micros);
  ASSERT_OK_AND_ASSIGN(OpCost sim, costs.OpTime(sgd, kSim0, in, out));
  EXPECT_TRUE(sim.measured);
  EXPECT_GE(sim.host_micros, costs.Constants(kSim0).launch_us);
  EXPECT_LE(sim.host_micros, sim.micros);
  CostModel analytical({.cache_dir = "", .measure = false});
  ASSERT_OK_AND_ASSIGN(OpCost est, analytical.OpTime(Scale(), kSim0, Args("X", Shape({8})),
                                                     Args("Out", Shape({8}))));
  EXPECT_DOUBLE_EQ(est.host_micros, analytical.Constants(kSim0).launch_us);
}

TEST(CostModel, AnalyticalWhenNotMeasuringOrTooLarge) {
  CostModel costs({.cache_dir = "", .measure = false});
  const DeviceConstants& c = costs.Constants(kSim0);
  EXPECT_FALSE(c.measured);
  ASSERT_OK_AND_ASSIGN(OpCost est, costs.OpTime(Scale(), kSim0, Args("X", Shape({1000, 250})),
                                                Args("Out", Shape({1000, 250}))));
  EXPECT_FALSE(est.measured);
  EXPECT_DOUBLE_EQ(est.micros, c.launch_us + 2e6 / c.bytes_per_us);  // 1 MB read, 1 MB written
  EXPECT_EQ(costs.measurements(), 0);
  CostModel small({.cache_dir = "",
                   .measure = true,
                   .max_measured_bytes = 1024,
                   .time_dispatch = TimeExecutorDispatch});
  ASSERT_OK_AND_ASSIGN(OpCost big, small.OpTime(Scale(), kSim0, Args("X", Shape({1000, 250})),
                                                Args("Out", Shape({1000, 250}))));
  EXPECT_FALSE(big.measured);
  EXPECT_EQ(small.measurements(), 0);
  const DeviceConstants& m = small.Constants(kSim0);
  EXPECT_DOUBLE_EQ(big.micros, m.launch_us + 2e6 / m.bytes_per_us);
}

// A gather's time does not grow with its table: 100 us at 1000 rows and 112
// us (noise) at 4000 stay 112 us at 10M rows, not 40 ms; an update that
// streams the rows (100 us, 400 us) grows linearly (1 us per 10 rows).
TEST(CostModel, ExtrapolatesByRowsOnlyWhenTheRowsDriveTheTime) {
  EXPECT_DOUBLE_EQ(ExtrapolateRows(1000, 100, 112, 10000000), 112);
  EXPECT_DOUBLE_EQ(ExtrapolateRows(1000, 100, 90, 10000000), 90);
  EXPECT_DOUBLE_EQ(ExtrapolateRows(1000, 100, 400, 10000000), 1000000);
  EXPECT_DOUBLE_EQ(ExtrapolateRows(1000, 100, 400, 4000), 400);
}

TEST(CostModel, OpsThatCannotRunOnZerosAreAnalytical) {
  CostModel costs({.cache_dir = "", .measure = true, .time_dispatch = TimeExecutorDispatch});
  OpDesc op = Scale();
  op.type = "no_such_op";
  ASSERT_OK_AND_ASSIGN(OpCost c,
                       costs.OpTime(op, kSim0, Args("X", Shape({4})), Args("Out", Shape({4}))));
  EXPECT_FALSE(c.measured);
}

TEST(CostModel, CopiesCostLatencyBandwidthAndTheRoundTripWhenSync) {
  CostModel costs({.cache_dir = "", .measure = false});
  const DeviceConstants& c = costs.Constants(kSim0);
  const int64_t bytes = 1 << 20;
  EXPECT_DOUBLE_EQ(costs.CopyMicros(kSim0, CopyKind::kHostToDevice, bytes, false),
                   c.h2d_latency_us + bytes / c.h2d_bytes_per_us);
  EXPECT_DOUBLE_EQ(costs.CopyMicros(kSim0, CopyKind::kDeviceToHost, bytes, true),
                   c.d2h_latency_us + bytes / c.d2h_bytes_per_us + c.sync_us);
  CostModel measured({.cache_dir = "", .measure = true, .time_dispatch = TimeExecutorDispatch});
  const DeviceConstants& m = measured.Constants(kSim0);
  EXPECT_TRUE(m.measured);
  EXPECT_GT(m.h2d_latency_us, 0);
  EXPECT_GT(m.d2h_bytes_per_us, 0);
  EXPECT_GT(m.sync_us, 0);
  EXPECT_LT(measured.CopyMicros(kSim0, CopyKind::kHostToDevice, 16, false),
            measured.CopyMicros(kSim0, CopyKind::kHostToDevice, 16 << 20, false));
}

TEST(CostModel, MalformedCacheLinesAreIgnored) {
  const std::string dir = FreshDir("costs_malformed");
  {
    CostModel costs({.cache_dir = dir, .measure = true, .time_dispatch = TimeExecutorDispatch});
    ASSERT_OK(
        costs.OpTime(Scale(), kSim0, Args("X", Shape({8})), Args("Out", Shape({8}))).status());
    ASSERT_OK(costs.Save());
  }
  const std::string path = dir + "/" + Files(dir).at(0);
  {
    std::ofstream out(path, std::ios::app);
    out << "no tab here\n"
        << "key\tnot-a-number\n"
        << "neg\t-5\t0\n"
        << "host_over_total\t5\t7\n"
        << "one_number_of_an_older_cache\t12\n"
        << "@constants\tlaunch_us=x\n";
  }
  CostModel reread({.cache_dir = dir, .measure = true, .time_dispatch = TimeExecutorDispatch});
  ASSERT_OK_AND_ASSIGN(
      OpCost c, reread.OpTime(Scale(), kSim0, Args("X", Shape({8})), Args("Out", Shape({8}))));
  EXPECT_TRUE(c.measured);
  EXPECT_EQ(reread.measurements(), 0);  // the good line still counts
}

TEST(CostModel, KeyNamesTypePlaceShapesAndAttributes) {
  EXPECT_EQ(OpCostKey(Scale(), kSim0, Args("X", Shape({4, 8})), Args("Out", Shape({4, 8}))),
            "scale|sim|X=float32[4, 8]|Out=float32[4, 8]|{scale=2}");
  EXPECT_EQ(OpBytes(Args("X", Shape({4, 8})), Args("Out", Shape({4, 8}))), 256);
}

}  // namespace
}  // namespace tandem
