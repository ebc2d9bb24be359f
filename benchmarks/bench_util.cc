#include "benchmarks/bench_util.h"

#include <cstdlib>
#include <string>

#include "absl/strings/str_split.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "gflags/gflags.h"
#include "profiler/profiler.h"

DEFINE_bool(cuda_graph, false,
            "Capture each benchmark's steady-state step as a device graph and replay it "
            "(ExecutorOptions::capture_graphs).");
DEFINE_bool(in_order, false,
            "Run every row's executor in-order (ExecutorOptions::in_order: steps one at a time "
            "in program order on the calling thread) instead of concurrently (host steps on host "
            "workers while device steps run on their streams). Rows named *_in_order are "
            "in-order either way.");
DEFINE_bool(fuse_patterns, false,
            "Fuse known op patterns at Prepare in every row (ExecutorOptions::fuse_patterns).");
DEFINE_bool(profile, false,
            "Profile every row that runs (one row: --benchmark_filter) and print the profiler's "
            "report, sorted by total time, at the end; the rows' times then include the spans.");
DEFINE_string(trace_out, "", "With --profile: also write the Chrome trace to this file.");

namespace tandem {
namespace bench {

namespace {
std::vector<Registrar>& Registrars() {
  static auto* registrars = new std::vector<Registrar>();
  return *registrars;
}
}  // namespace

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v == nullptr ? fallback : std::atoll(v);
}

std::vector<Place> BenchPlaces() {
  const char* env = std::getenv("TANDEM_BENCH_PLACES");
  std::vector<Place> places;
  for (absl::string_view s : absl::StrSplit(env ? env : "gpu:0,sim:0,cpu", ',')) {
    absl::StatusOr<Place> p = ParsePlace(s);
    if (p.ok() && DeviceRegistry::Global().GetDevice(*p).ok()) places.push_back(*p);
  }
  return places;
}

ExecutorOptions WithFlags(ExecutorOptions options) {
  options.capture_graphs |= FLAGS_cuda_graph;
  options.in_order |= FLAGS_in_order;
  options.fuse_patterns |= FLAGS_fuse_patterns;
  return options;
}

void AddExecutorContext() {
  benchmark::AddCustomContext("executor", FLAGS_in_order ? "in-order" : "concurrent");
  benchmark::AddCustomContext("cuda_graph", FLAGS_cuda_graph ? "true" : "false");
}

absl::Status SettleSchedule(const Plan& plan, const std::function<absl::Status()>& step) {
  if (FLAGS_in_order || FLAGS_cuda_graph) return absl::OkStatus();
  const int most = ScheduleTrial(WithFlags({}).schedule_trial).MaxTrialRuns();
  for (int i = 0; i < most && plan.schedule_choice().empty(); ++i) RETURN_IF_ERROR(step());
  return absl::OkStatus();
}

absl::Status StartProfilingIfAsked() {
  if (!FLAGS_profile) {
    if (!FLAGS_trace_out.empty()) return absl::InvalidArgumentError("--trace_out needs --profile");
    return absl::OkStatus();
  }
  return profiler::StartProfiler("All", /*warmup_runs=*/1);
}

absl::Status StopProfilingIfAsked() {
  if (!FLAGS_profile) return absl::OkStatus();
  return profiler::StopProfiler("total", FLAGS_trace_out);
}

void Fail(benchmark::State& state, const absl::Status& s) {
  state.SkipWithError(s.ToString().c_str());
}

void ReportCopies(benchmark::State& state, const RunStats& stats) {
  state.counters["h2d_per_iter"] = stats.copies_h2d;
  state.counters["d2h_per_iter"] = stats.copies_d2h;
  state.counters["sync_copies_per_iter"] = stats.sync_copies;
}

absl::StatusOr<std::unique_ptr<Plan>> PrepareEmbeddingWorkload(const EmbeddingConfig& config,
                                                               Prepared* p, EmbeddingModel* model) {
  ASSIGN_OR_RETURN(*model, BuildEmbeddingModel(config, &p->builder));
  RETURN_IF_ERROR(p->exe.Run(p->builder.startup_program(), &p->scope).status());
  return p->exe.Prepare(p->builder.main_program(), p->scope, {model->ids.name}, {});
}

bool AddRegistrar(Registrar registrar) {
  Registrars().push_back(registrar);
  return true;
}

void RegisterAll() {
  for (Registrar r : Registrars()) r();
}

}  // namespace bench
}  // namespace tandem
