#include "profiler/report.h"

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
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

// ---- A small parser for the printed report ---------------------------------

struct Cell {
  std::string text;
  double number = 0;
};

struct TableRow {
  int depth = 0;  // indentation of the first column, in steps of two spaces
  std::map<std::string, Cell> cells;
  const std::string& name() const { return cells.at("Event").text; }
  double operator[](const std::string& column) const { return cells.at(column).number; }
};

struct ParsedReport {
  std::vector<std::string> lines;
  std::vector<std::string> sections;  // titles in order
  std::vector<std::string> columns;   // of the Event Summary
  std::vector<TableRow> events;

  int LineOf(absl::string_view prefix) const {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(lines[i]), prefix)) return i;
    }
    return -1;
  }
  // The number after `key` on the line starting with `prefix`.
  double Number(absl::string_view prefix, absl::string_view key) const {
    const int line = LineOf(prefix);
    EXPECT_GE(line, 0) << prefix;
    if (line < 0) return -1;
    const std::string& text = lines[line];
    const size_t at = text.find(std::string(key));
    EXPECT_NE(at, std::string::npos) << key << " in " << text;
    return std::strtod(text.c_str() + at + key.size(), nullptr);
  }
};

// Splits a table row at the header's column starts.
std::vector<std::string> Split(const std::string& line, const std::vector<size_t>& starts) {
  std::vector<std::string> cells;
  for (size_t c = 0; c < starts.size(); ++c) {
    const size_t begin = std::min(starts[c], line.size());
    const size_t end = c + 1 < starts.size() ? std::min(starts[c + 1], line.size()) : line.size();
    cells.push_back(line.substr(begin, end - begin));
  }
  return cells;
}

ParsedReport Parse(const std::string& report) {
  ParsedReport p;
  p.lines = absl::StrSplit(report, '\n');
  const std::string dashes(25, '-');
  int header = -1;
  for (size_t i = 0; i < p.lines.size(); ++i) {
    const std::string& l = p.lines[i];
    if (absl::StartsWith(l, dashes) && absl::EndsWith(l, dashes)) {
      std::string title(
          absl::StripAsciiWhitespace(absl::StripSuffix(absl::StripPrefix(l, dashes), dashes)));
      p.sections.push_back(std::string(
          absl::StripAsciiWhitespace(absl::StripSuffix(absl::StripPrefix(title, ">"), "<"))));
    }
    if (absl::StartsWith(l, "Event ") && header < 0) header = static_cast<int>(i);
  }
  if (header < 0) return p;
  // Column starts: each header title begins after two or more spaces.
  const std::string& h = p.lines[header];
  std::vector<size_t> starts = {0};
  for (size_t i = 2; i < h.size(); ++i) {
    if (h[i] != ' ' && h[i - 1] == ' ' && h[i - 2] == ' ') starts.push_back(i);
  }
  for (const std::string& cell : Split(h, starts)) {
    p.columns.emplace_back(absl::StripAsciiWhitespace(cell));
  }
  for (size_t i = header + 1; i < p.lines.size() && !p.lines[i].empty(); ++i) {
    if (absl::StartsWith(p.lines[i], "Copies are listed")) break;
    TableRow row;
    const std::vector<std::string> cells = Split(p.lines[i], starts);
    row.depth = static_cast<int>(cells[0].find_first_not_of(' ')) / 2;
    for (size_t c = 0; c < cells.size(); ++c) {
      Cell cell;
      cell.text = std::string(absl::StripAsciiWhitespace(cells[c]));
      cell.number = std::strtod(cell.text.c_str(), nullptr);
      row.cells[p.columns[c]] = cell;
    }
    p.events.push_back(row);
  }
  return p;
}

// The ratio in "0.012345 (0.987654)".
double RatioOf(const TableRow& row, const std::string& column) {
  const std::string& text = row.cells.at(column).text;
  const size_t open = text.find('(');
  return open == std::string::npos ? -1 : std::strtod(text.c_str() + open + 1, nullptr);
}

// ---- Tests -------------------------------------------------------------------

Place Sim0() { return *ParsePlace("sim:0"); }

struct Profiled {
  Profile profile;
  std::vector<RunStats> stats;  // every run's, warm-up included
};

Profiled ProfileCrop(bool slice_on_cpu, ProfilerState state = ProfilerState::kAll, int runs = 6,
                     int warmup = 1) {
  Profiled out;
  auto crop = CropWorkload::Create(Sim0(), slice_on_cpu);
  CHECK(crop.ok()) << crop.status();
  CHECK(StartProfiler({state, warmup}).ok());
  CHECK(AttachPlan((*crop)->plan()).ok());
  auto stats = (*crop)->Run(runs);
  CHECK(stats.ok()) << stats.status();
  out.stats = *stats;
  auto profile = CollectProfile();
  CHECK(profile.ok()) << profile.status();
  out.profile = *std::move(profile);
  return out;
}

TEST(ReportTest, ParseSortKey) {
  EXPECT_THAT(ParseSortKey("default"), IsOkAndHolds(SortKey::kDefault));
  EXPECT_THAT(ParseSortKey("Calls"), IsOkAndHolds(SortKey::kCalls));
  EXPECT_THAT(ParseSortKey("total"), IsOkAndHolds(SortKey::kTotal));
  EXPECT_THAT(ParseSortKey("max"), IsOkAndHolds(SortKey::kMax));
  EXPECT_THAT(ParseSortKey("min"), IsOkAndHolds(SortKey::kMin));
  EXPECT_THAT(ParseSortKey("ave"), IsOkAndHolds(SortKey::kAve));
  EXPECT_THAT(ParseSortKey("gpu"), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("\"default\", \"calls\", \"total\"")));
}

TEST(ReportTest, SectionsHeaderAndColumnsFollowTheReference) {
  const Profiled run = ProfileCrop(false);
  const std::string report = FormatReport(run.profile, SortKey::kTotal);
  const ParsedReport p = Parse(report);
  EXPECT_THAT(p.sections,
              ElementsAre("Profiling Report", "GpuMemCpy Summary", "Concurrency", "Event Summary",
                          "Copy Ledger", "Placement", "Memory Summary"))
      << report;
  EXPECT_GE(p.LineOf("Note! This Report merge all thread info into one."), 0);
  EXPECT_GE(p.LineOf("Place: All"), 0);
  EXPECT_GE(p.LineOf("Time unit: ms"), 0);
  EXPECT_GE(p.LineOf("Sorted by total time in descending order in the same thread"), 0);
  EXPECT_GE(p.LineOf("Steady state: 5 runs (warm-up runs excluded: 1)"), 0) << report;
  EXPECT_THAT(p.columns,
              ElementsAre("Event", "Calls", "Total", "CPU Time (Ratio)", "GPU Time (Ratio)", "Min.",
                          "Max.", "Ave.", "Ratio.", "Bytes"));
}

TEST(ReportTest, OverheadRatiosAndTotalsAddUp) {
  const Profiled run = ProfileCrop(false);
  const ParsedReport p = Parse(FormatReport(run.profile, SortKey::kTotal));
  const double total = p.Number("Total time:", "Total time:");
  double steps = 0;
  for (double ms : run.profile.SteadyStepMs()) steps += ms;
  EXPECT_NEAR(total, steps, 1e-5 * steps);  // wall time of the steady runs
  const double compute = p.Number("Computation time", "Total:");
  const double overhead = p.Number("Framework overhead", "Total:");
  EXPECT_NEAR(compute + overhead, total, 1e-5 * total);
  EXPECT_NEAR(p.Number("Computation time", "Ratio:") + p.Number("Framework overhead", "Ratio:"),
              100, 1e-3);
  const double median = p.Number("Step time", "Median:");
  const double p90 = p.Number("Step time", "P90:");
  EXPECT_GT(median, 0);
  EXPECT_LE(median, p90);
  EXPECT_LE(p.Number("Step time", "Min:"), median);
  EXPECT_LE(p90, p.Number("Step time", "Max:"));
}

TEST(ReportTest, CopyCountsEqualTheExecutorsCounters) {
  const Profiled run = ProfileCrop(false);
  const ParsedReport p = Parse(FormatReport(run.profile, SortKey::kTotal));
  int copies = 0, sync = 0, async = 0, runs = 0;
  int64_t bytes = 0;
  for (size_t r = 1; r < run.stats.size(); ++r) {  // run 0 is the warm-up
    copies += run.stats[r].copies();
    sync += run.stats[r].sync_copies;
    async += run.stats[r].async_copies;
    bytes += run.stats[r].bytes_h2d + run.stats[r].bytes_d2h;
    ++runs;
  }
  EXPECT_EQ(copies, 2 * runs);
  EXPECT_EQ(p.Number("GpuMemcpy ", "Calls:"), copies);
  EXPECT_EQ(p.Number("GpuMemcpy ", "Bytes:"), bytes);
  EXPECT_EQ(p.Number("GpuMemcpySync", "Calls:"), sync);
  EXPECT_EQ(p.Number("GpuMemcpyAsync", "Calls:"), async);
  EXPECT_NEAR(p.Number("GpuMemcpySync", "Total:") + p.Number("GpuMemcpyAsync", "Total:"),
              p.Number("GpuMemcpy ", "Total:"), 1e-5);
  // The Event Summary's copy rows count the same copies.
  double nested = 0;
  for (const TableRow& row : p.events) {
    if (absl::StrContains(row.name(), "GpuMemcpy")) nested += row["Calls"];
  }
  EXPECT_EQ(nested, copies);
}

TEST(ReportTest, CopiesAreNestedUnderTheOpThatReadThem) {
  const Profiled run = ProfileCrop(false);
  const ParsedReport p = Parse(FormatReport(run.profile, SortKey::kTotal));
  std::map<std::string, std::string> parent_of;  // copy row -> op row above it
  std::string parent;
  for (const TableRow& row : p.events) {
    if (row.depth == 0) {
      parent = row.name();
      EXPECT_FALSE(absl::StrContains(row.name(), "GpuMemcpy")) << row.name();
    } else {
      EXPECT_EQ(row.depth, 1);
      parent_of[row.name()] = parent;
      EXPECT_EQ(row["Bytes"], 16 * row["Calls"]);
    }
  }
  ASSERT_EQ(parent_of.size(), 2u);
  for (const auto& [copy, parent] : parent_of) {
    EXPECT_THAT(copy, ::testing::StartsWith("GpuMemcpy"));
    EXPECT_EQ(parent, absl::EndsWith(copy, ":CPU->SIM") ? "slice" : "crop_tensor") << copy;
  }
}

TEST(ReportTest, RowsAreConsistent) {
  const Profiled run = ProfileCrop(false);
  const ParsedReport p = Parse(FormatReport(run.profile, SortKey::kTotal));
  ASSERT_FALSE(p.events.empty());
  double top_ratio = 0;
  std::map<std::string, double> calls;
  std::map<std::string, bool> timed;  // has a GPU time
  for (const TableRow& row : p.events) {
    calls[row.name()] = row["Calls"];
    EXPECT_LE(row["Min."], row["Ave."] + 1e-6) << row.name();
    EXPECT_LE(row["Ave."], row["Max."] + 1e-6) << row.name();
    EXPECT_NEAR(row["Ave."] * row["Calls"], row["Total"], 1e-5 * row["Calls"] + 1e-6);
    EXPECT_DOUBLE_EQ(row["CPU Time (Ratio)"], row["Total"]);
    // Sim times its streams: device work has a GPU time, and the two shares
    // add up to one; the rest is host time only.
    timed[row.name()] = row.cells.at("GPU Time (Ratio)").text != "-";
    if (timed[row.name()]) {
      EXPECT_GE(row["GPU Time (Ratio)"], 0) << row.name();
      EXPECT_NEAR(RatioOf(row, "CPU Time (Ratio)") + RatioOf(row, "GPU Time (Ratio)"), 1.0, 2e-6)
          << row.name();
    } else {
      EXPECT_DOUBLE_EQ(RatioOf(row, "CPU Time (Ratio)"), 1.0) << row.name();
    }
    if (row.depth == 0) top_ratio += row["Ratio."];
  }
  EXPECT_TRUE(timed["slice"]);
  EXPECT_TRUE(timed["crop_tensor"]);
  EXPECT_FALSE(timed["shape"]);  // its output is host memory: no device work
  for (const auto& [name, has_gpu] : timed) {
    if (absl::StrContains(name, "GpuMemcpy")) {
      EXPECT_TRUE(has_gpu) << name;
    }
  }
  EXPECT_GT(top_ratio, 0);
  EXPECT_LE(top_ratio, 1.0);
  // fill_constant may be folded into a constant by the executor.
  int fills = 0;
  for (const ProfileEvent& e : run.profile.events) {
    fills += run.profile.IsSteady(e) && e.name == "fill_constant";
  }
  EXPECT_EQ(calls["fill_constant"], fills);
  EXPECT_EQ(calls["shape"], 5);
  EXPECT_EQ(calls["slice"], 5);
  EXPECT_EQ(calls["crop_tensor"], 5);
}

TEST(ReportTest, SortKeysOrderTheRows) {
  const Profiled run = ProfileCrop(false);
  for (const auto& [key, column] :
       std::vector<std::pair<SortKey, std::string>>{{SortKey::kCalls, "Calls"},
                                                    {SortKey::kTotal, "Total"},
                                                    {SortKey::kMax, "Max."},
                                                    {SortKey::kMin, "Min."},
                                                    {SortKey::kAve, "Ave."}}) {
    SCOPED_TRACE(column);
    const ParsedReport p = Parse(FormatReport(run.profile, key));
    double last = 1e300;
    for (const TableRow& row : p.events) {
      if (row.depth > 0) continue;
      EXPECT_LE(row[column], last) << row.name();
      last = row[column];
    }
  }
  // Default: program order.
  const ParsedReport p = Parse(FormatReport(run.profile, SortKey::kDefault));
  EXPECT_GE(p.LineOf("Sorted by event first end time"), 0);
  std::vector<std::string> top, program_order;
  for (const TableRow& row : p.events) {
    if (row.depth == 0) top.push_back(row.name());
  }
  for (const ProfileEvent& e : run.profile.events) {
    if (e.kind == EventKind::kOp && run.profile.IsSteady(e) &&
        std::find(program_order.begin(), program_order.end(), e.name) == program_order.end()) {
      program_order.push_back(e.name);
    }
  }
  EXPECT_EQ(top, program_order);
  EXPECT_THAT(program_order, ::testing::IsSupersetOf({"shape", "slice", "crop_tensor"}));
}

TEST(ReportTest, LedgerPlacementAndMemory) {
  const Profiled run = ProfileCrop(false);
  const std::string report = FormatReport(run.profile, SortKey::kTotal);
  const ParsedReport p = Parse(report);
  // # Variable From To Bytes Mode Consumer (#) Per-step ...
  const int h2d = p.LineOf("3  shape_0.tmp_0");
  ASSERT_GE(h2d, 0) << report;
  const std::vector<std::string> in = absl::StrSplit(p.lines[h2d], ' ', absl::SkipEmpty());
  EXPECT_THAT(std::vector<std::string>(in.begin() + 2, in.begin() + 5),
              ElementsAre("cpu", "sim:0", "16"));
  EXPECT_THAT(std::vector<std::string>(in.begin() + 6, in.begin() + 9),
              ElementsAre("slice", "(#4)", "1"));
  const int d2h = p.LineOf("5  slice_0.tmp_0");
  ASSERT_GE(d2h, 0) << report;
  const std::vector<std::string> out = absl::StrSplit(p.lines[d2h], ' ', absl::SkipEmpty());
  EXPECT_THAT(std::vector<std::string>(out.begin() + 2, out.begin() + 9),
              ElementsAre("sim:0", "cpu", "16", "sync", "crop_tensor", "(#6)", "1"));
  EXPECT_EQ(p.LineOf("5 ops, 2 copies") > p.LineOf("3    memcpy_h2d"), true) << report;
  const int memory = p.LineOf("sim:0  ");
  EXPECT_GT(memory, p.LineOf("Place  In use (B)")) << report;
}

TEST(ReportTest, SliceOnCpuHasNoCopies) {
  const Profiled run = ProfileCrop(true);
  const std::string report = FormatReport(run.profile, SortKey::kTotal);
  const ParsedReport p = Parse(report);
  EXPECT_EQ(p.Number("GpuMemcpy ", "Calls:"), 0);
  EXPECT_EQ(p.Number("GpuMemcpySync", "Calls:"), 0);
  EXPECT_GE(p.LineOf("No copies in the steady-state runs."), 0);
  for (const TableRow& row : p.events) EXPECT_EQ(row.depth, 0) << row.name();
}

TEST(ReportTest, CpuStateHasNoDeviceColumns) {
  const Profiled run = ProfileCrop(false, ProfilerState::kCPU);
  const ParsedReport p = Parse(FormatReport(run.profile, SortKey::kDefault));
  EXPECT_GE(p.LineOf("Place: CPU"), 0);
  EXPECT_THAT(p.columns,
              ElementsAre("Event", "Calls", "Total", "Min.", "Max.", "Ave.", "Ratio.", "Bytes"));
}

// The concurrent run of concurrency_testutil.h, one warm-up and two steady.
Profile ProfileConcurrentRuns() {
  FakeClock clock;
  QueueDevice gpu(GPUPlace(0));
  CHECK(StartProfiler({ProfilerState::kAll, 1}).ok());
  for (int run = 0; run < 3; ++run) FeedConcurrentRun(&gpu, 1000 * run);
  auto profile = CollectProfile();
  CHECK(profile.ok()) << profile.status();
  return *std::move(profile);
}

TEST(ReportTest, ConcurrencySectionHasBusyOverlapAndWaitPerStep) {
  const std::string report = FormatReport(ProfileConcurrentRuns(), SortKey::kDefault);
  const ParsedReport p = Parse(report);
  const int title = p.LineOf("-------------------------        Concurrency");
  ASSERT_GT(title, p.LineOf("GpuMemcpySync")) << report;
  EXPECT_EQ(p.LineOf("Median per steady-state step over 2 steps (each figure its own median); "
                     "step time: 0.1"),
            title + 2)
      << report;
  struct Figure {
    const char* label;
    double ms, percent;
  };
  for (const Figure& f :
       {Figure{"Host busy ", 0.045, 45}, Figure{"Host waiting for devices", 0.01, 10},
        Figure{"Busy gpu:0", 0.06, 60}, Figure{"Overlap host and gpu:0", 0.03, 30},
        Figure{"Idle gpu:0 waiting for host", 0.015, 15},
        Figure{"Overlap host and any device", 0.03, 30}}) {
    SCOPED_TRACE(f.label);
    EXPECT_GT(p.LineOf(f.label), title);
    EXPECT_NEAR(p.Number(f.label, "Total:"), f.ms, 1e-9);
    EXPECT_NEAR(p.Number(f.label, "Ratio:"), f.percent, 1e-6);
  }
  EXPECT_GT(p.LineOf("Most waited for: gpu:0 idled 10 us per step waiting for host op sum (#3)"),
            title)
      << report;
  // The copy sum made on its worker is listed under sum; sum's row excludes it.
  int sum = -1;
  for (size_t i = 0; i < p.events.size(); ++i) {
    if (p.events[i].name() == "sum") sum = static_cast<int>(i);
  }
  ASSERT_GE(sum, 0) << report;
  EXPECT_NEAR(p.events[sum]["Total"], 2 * 0.030, 1e-9);
  ASSERT_LT(sum + 1, static_cast<int>(p.events.size()));
  EXPECT_EQ(p.events[sum + 1].depth, 1);
  EXPECT_EQ(p.events[sum + 1].name(), "GpuMemcpySync:GPU->CPU");
  // Waits are no Event Summary rows.
  for (const TableRow& row : p.events) EXPECT_NE(row.name(), "end of run");
}

TEST(ReportTest, ConcurrencyWithoutDeviceTime) {
  const Profiled run = ProfileCrop(/*slice_on_cpu=*/true, ProfilerState::kCPU);
  const std::string report = FormatReport(run.profile, SortKey::kTotal);
  const ParsedReport p = Parse(report);
  EXPECT_GE(p.LineOf("Median per steady-state step over 5 steps"), 0) << report;
  const int busy_sim = p.LineOf("Busy sim:0 ");
  ASSERT_GE(busy_sim, 0) << report;
  EXPECT_THAT(p.lines[busy_sim], ::testing::EndsWith(" -  (no device time measured)"));
  EXPECT_LT(p.LineOf("Overlap host and any device"), 0);
  EXPECT_LT(p.LineOf("Most waited for:"), 0);
  // slice runs on the host: busy time within the step.
  const double busy = p.Number("Host busy", "Total:");
  EXPECT_GT(busy, 0);
  EXPECT_LE(busy, p.Number("Step time", "Max:"));
}

TEST(ReportTest, ConcurrencyOfAHandMadeProfileIsComputed) {
  Profile profile = ProfileConcurrentRuns();
  profile.concurrency = Concurrency();
  const ParsedReport p = Parse(FormatReport(profile, SortKey::kDefault));
  EXPECT_NEAR(p.Number("Overlap host and gpu:0", "Total:"), 0.03, 1e-9);
}

TEST(ReportTest, GraphSectionCountsLaunchesPerSteadyStep) {
  Profile profile = ProfileConcurrentRuns();
  EXPECT_EQ(Parse(FormatReport(profile, SortKey::kDefault)).LineOf("Graph capture"), -1);
  int steady = 0;
  for (ProfileRun& run : profile.runs) {
    if (!profile.IsSteady(run)) continue;
    run.stats.graph_launches = 2 + steady % 2;  // 2, 3, 2, 3, ...
    run.stats.ungraphed_device_steps = 1;
    run.stats.captured = steady == 0;
    ++steady;
  }
  ASSERT_GE(steady, 2);
  const ParsedReport p = Parse(FormatReport(profile, SortKey::kDefault));
  const double mean = (2.0 * ((steady + 1) / 2) + 3.0 * (steady / 2)) / steady;
  EXPECT_GE(p.LineOf(absl::StrCat("Per steady-state step, mean over ", steady,
                                  " steps: ", absl::StrFormat("%.6g", mean),
                                  " graph launches, 1 device steps outside graphs; steps that "
                                  "captured: 1")),
            0);
}

TEST(ReportTest, AllWarmupSaysSo) {
  const Profiled run = ProfileCrop(false, ProfilerState::kAll, /*runs=*/1, /*warmup=*/1);
  const ParsedReport p = Parse(FormatReport(run.profile, SortKey::kTotal));
  EXPECT_GE(p.LineOf("Steady state: 0 runs (warm-up runs excluded: 1)"), 0);
  EXPECT_GE(p.LineOf("Note! Every profiled run was a warm-up run"), 0);
  EXPECT_GE(p.LineOf("No steady-state runs."), 0);
  EXPECT_TRUE(p.events.empty());
}

}  // namespace
}  // namespace profiler
}  // namespace tandem
