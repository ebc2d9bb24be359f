// Workload 2: shape -> slice -> crop_tensor, run --steps times with the
// slice on the default place (GPU 0 when present) and then under
// device_guard("cpu"). Prints host<->device copies per iteration and the
// median time per iteration for both placements; with --profile_steps=N,
// the profiler's report of the last N iterations for both (before and after
// the fix), with --advise the copy advisor's verdict, with --trace_out a
// Chrome trace of each. With --auto_place a third run builds the program
// without device_guard and lets the automatic placement choose (it puts the
// slice on the cpu by itself).
//
//   bazel run //examples/crop_profile -- --steps=1000
//   bazel run //examples/crop_profile -- --place=sim:0 --print_placement
//   bazel run //examples/crop_profile -- --place=sim:0 --auto_place --print_placement
//   bazel run //examples/crop_profile -- --profile_steps=100 --advise --steps=100
//       --trace_out=/tmp/crop.json   (writes /tmp/crop.before.json and /tmp/crop.after.json)
#include <cstdio>
#include <string>

#include "examples/common/example_util.h"
#include "framework/base/status_macros.h"
#include "framework/runtime/executor.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "models/crop/crop_model.h"
#include "profiler/advisor.h"
#include "profiler/chrome_trace.h"
#include "profiler/profiler.h"

DEFINE_int32(steps, 1000, "timed iterations per placement");
DEFINE_int32(warmup, 10, "untimed iterations first (left out of the profile too)");
DEFINE_string(place, "",
              "default place: gpu:N, sim:N or cpu (default: gpu:0 if present, else cpu)");
DEFINE_int32(profile_steps, 0,
             "print the profiler's report of the last N timed iterations for each placement "
             "(0: no report)");
DEFINE_string(profile_state, "All", "profiler state: CPU, GPU or All");
DEFINE_string(sort_key, "total", "report order: default, calls, total, max, min or ave");
DEFINE_string(trace_out, "",
              "write a Chrome trace per placement: FILE.json becomes FILE.before.json "
              "(slice on the device) and FILE.after.json (slice on the cpu)");
DEFINE_bool(advise, false, "print the copy advisor's verdict for each placement");

namespace tandem {
namespace {

bool Profiling() { return FLAGS_profile_steps > 0 || FLAGS_advise || !FLAGS_trace_out.empty(); }

// The runs the profile leaves out: the untimed --warmup ones and, with
// --profile_steps=N, the timed ones before the last N (all are recorded; the
// report, the advice and the before/after step times cover the rest).
int ProfileWarmupRuns() {
  const int reported = FLAGS_profile_steps > 0 && FLAGS_profile_steps < FLAGS_steps
                           ? FLAGS_profile_steps
                           : FLAGS_steps;
  return FLAGS_warmup + FLAGS_steps - reported;
}

// "/tmp/crop.json" -> "/tmp/crop.before.json".
std::string TracePath(const std::string& path, const std::string& tag) {
  const size_t dot = path.rfind('.');
  const size_t slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) {
    return path + "." + tag + ".json";
  }
  return path.substr(0, dot) + "." + tag + path.substr(dot);
}

struct Outcome {
  int sync_copies = 0;  // per iteration
  double median_us = 0;
  double profiled_median_ms = 0;
  double profiled_p90_ms = 0;
  absl::Status trace_status;
};

// The slice on the default place, under device_guard("cpu"), or (auto)
// wherever the automatic placement puts it.
absl::StatusOr<Outcome> RunOne(const Place& place, bool slice_on_cpu, bool auto_place = false) {
  ProgramBuilder builder;
  ASSIGN_OR_RETURN(Var out, BuildCropModel(slice_on_cpu, &builder));
  ExecutorOptions exe_options = ExampleExecutorOptions();
  exe_options.placement_planner = auto_place ? ExampleAutoPlacer() : nullptr;
  Executor exe(place, exe_options);
  Scope scope;
  ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan,
                   exe.Prepare(builder.main_program(), scope, {}, {out.name}));
  RETURN_IF_ERROR(ReportPlacement(*plan));
  profiler::ProfilerOptions options;
  if (Profiling()) {
    ASSIGN_OR_RETURN(options.state, profiler::ParseProfilerState(FLAGS_profile_state));
    options.warmup_runs = ProfileWarmupRuns();
    RETURN_IF_ERROR(profiler::StartProfiler(options));
    RETURN_IF_ERROR(profiler::AttachPlan(*plan));
  }
  RunStats stats;
  std::vector<double> times;
  for (int i = 0; i < FLAGS_warmup + FLAGS_steps; ++i) {
    Stopwatch sw;
    ASSIGN_OR_RETURN(std::vector<Tensor> result, exe.Run(plan.get(), &scope, {}, &stats));
    if (i >= FLAGS_warmup) times.push_back(sw.Seconds() * 1e6);
    if (i + 1 == FLAGS_warmup) ResetPeakMemory(place);
    if (i == 0 && result[0].shape() != Shape({1, 3, 5, 5})) {
      return absl::InternalError("crop_tensor produced " + result[0].shape().ToString());
    }
  }
  Outcome outcome;
  outcome.sync_copies = stats.sync_copies;
  outcome.median_us = Median(times);
  std::string where = slice_on_cpu ? "cpu" : place.ToString();
  for (size_t i = 0; auto_place && i < plan->placed().table.size(); ++i) {
    if (plan->placed().program.block().ops()[i].type == "slice") {
      where = plan->placed().places[i].ToString() + " (auto)";
    }
  }
  std::printf(
      "slice on %-6s: %d H2D + %d D2H copies per iteration (%d sync), "
      "median %.1f us per iteration over %d iterations%s\n",
      where.c_str(), stats.copies_h2d, stats.copies_d2h, stats.sync_copies, outcome.median_us,
      FLAGS_steps, Profiling() ? " (profiled)" : "");
  if (auto_place) {
    std::printf("%s\n", EstimatedVersusMeasured(*plan, place, outcome.median_us).c_str());
  }
  if (!Profiling()) return outcome;

  ASSIGN_OR_RETURN(profiler::Profile profile, profiler::CollectProfile());
  const std::vector<double> steps = profile.SteadyStepMs();
  outcome.profiled_median_ms = profiler::Percentile(steps, 0.5);
  outcome.profiled_p90_ms = profiler::Percentile(steps, 0.9);
  if (FLAGS_profile_steps > 0) {
    ASSIGN_OR_RETURN(profiler::SortKey key, profiler::ParseSortKey(FLAGS_sort_key));
    std::printf("\n=== Profile: slice on %s ===\n%s\n", where.c_str(),
                profiler::FormatReport(profile, key).c_str());
  }
  if (FLAGS_advise) {
    std::printf("=== Advice: slice on %s ===\n%s\n", where.c_str(),
                profiler::FormatAdvice(profiler::Advise(profile, plan->placed())).c_str());
  }
  if (!FLAGS_trace_out.empty()) {
    const std::string path = TracePath(FLAGS_trace_out, auto_place     ? "auto"
                                                        : slice_on_cpu ? "after"
                                                                       : "before");
    // A trace that cannot be written does not stop the run; Main reports it.
    outcome.trace_status = profiler::WriteChromeTrace(profile, path);
    if (outcome.trace_status.ok()) std::printf("Chrome trace: %s\n", path.c_str());
  }
  return outcome;
}

absl::Status Main() {
  ASSIGN_OR_RETURN(Place place, ChooseDefaultPlace(FLAGS_place));
  RETURN_IF_ERROR(CheckPlacementFlags());
  if (FLAGS_steps <= 0 || FLAGS_warmup < 0 || FLAGS_profile_steps < 0) {
    return absl::InvalidArgumentError(
        "--steps must be > 0, --warmup >= 0 and --profile_steps >= 0");
  }
  if (Profiling()) {  // bad values fail before anything runs
    RETURN_IF_ERROR(profiler::ParseProfilerState(FLAGS_profile_state).status());
    RETURN_IF_ERROR(profiler::ParseSortKey(FLAGS_sort_key).status());
  }
  std::printf("workload 2 (shape -> slice -> crop_tensor) on %s, executor: %s\n",
              place.ToString().c_str(), ExecutorMode(ExampleExecutorOptions()).c_str());
  ASSIGN_OR_RETURN(Outcome before, RunOne(place, /*slice_on_cpu=*/false));
  ASSIGN_OR_RETURN(Outcome after, RunOne(place, /*slice_on_cpu=*/true));
  if (AutoPlaceRequested()) {
    ASSIGN_OR_RETURN(Outcome automatic, RunOne(place, /*slice_on_cpu=*/false, /*auto_place=*/true));
    std::printf(
        "auto placement: %d sync copies per iteration (device_guard(\"cpu\"): %d), median "
        "%.1f us per iteration (device_guard(\"cpu\"): %.1f us)\n",
        automatic.sync_copies, after.sync_copies, automatic.median_us, after.median_us);
    if (!automatic.trace_status.ok()) return automatic.trace_status;
  }
  if (Profiling()) {
    std::printf(
        "before -> after: sync copies per step %d -> %d; steady-state step time "
        "median %.4f -> %.4f ms, p90 %.4f -> %.4f ms (first %d runs excluded as warm-up)\n",
        before.sync_copies, after.sync_copies, before.profiled_median_ms, after.profiled_median_ms,
        before.profiled_p90_ms, after.profiled_p90_ms, ProfileWarmupRuns());
  }
  return before.trace_status.ok() ? after.trace_status : before.trace_status;
}

}  // namespace
}  // namespace tandem

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "crops a tensor to a shape computed on the device (shape -> slice -> crop_tensor), first\n"
      "  with the slice on the GPU (or --place), then with it under device_guard(\"cpu\"), and\n"
      "  prints the host<->device copies and the time per iteration of both; the profiler's\n"
      "  report and the copy advisor show which placement causes synchronous copies\n"
      "usage: crop_profile [--steps=1000] [--warmup=10] [--place=gpu:0|cpu|sim:0]\n"
      "  [--profile_steps=N] [--advise] [--trace_out=FILE.json] [--auto_place] ...\n"
      "--helpmatch=crop_profile lists this program's flags, --helpfull every flag (the\n"
      "  executor's and backends' too)");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  absl::Status s = tandem::Main();
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
