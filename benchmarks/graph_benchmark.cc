// Graph-capture rows of tandem_benchmark: dispatch/<device>_graph is the
// per-op cost of the dispatch row's chain of 100 tiny scale ops ([1]
// float32) when the executor captured the step once and replays it as one
// graph launch per run (ExecutorOptions::capture_graphs). Registered for
// gpu places only (the devices that can capture); a row whose plan did not
// replay fails with the executor's reason rather than report an eager time.
// Any other row replays too with --cuda_graph (bench_util.h).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "benchmarks/bench_util.h"
#include "framework/device/device_registry.h"
#include "framework/runtime/executor.h"

namespace tandem {
namespace {

void BM_DispatchGraph(benchmark::State& state, Place place) {
  constexpr int kOps = 100;
  ExecutorOptions options;
  options.capture_graphs = true;
  bench::Prepared p(place, options);
  Var h = p.builder.CreatePersistableConstant("x", DataType::kFloat32, Shape({1}), 1.0);
  for (int i = 0; i < kOps; ++i) h = p.builder.Scale(h, 1.0);
  if (absl::Status s = p.exe.Run(p.builder.startup_program(), &p.scope).status(); !s.ok()) {
    return bench::Fail(state, s);
  }
  auto plan = p.exe.Prepare(p.builder.main_program(), p.scope, {}, {});
  if (!plan.ok()) return bench::Fail(state, plan.status());
  RunStats stats;
  for (int warm = 0; warm < 2; ++warm) {  // eager warm-up, then the capture
    absl::StatusOr<std::vector<Tensor>> out = p.exe.Run(plan->get(), &p.scope, {}, &stats);
    if (!out.ok()) return bench::Fail(state, out.status());
  }
  if (!stats.replayed) {
    return bench::Fail(state, absl::FailedPreconditionError(absl::StrCat(
                                  "not captured: ", (*plan)->graph_fallback_reason())));
  }
  for (auto _ : state) {
    absl::StatusOr<std::vector<Tensor>> out = p.exe.Run(plan->get(), &p.scope, {}, &stats);
    if (!out.ok()) return bench::Fail(state, out.status());
  }
  state.counters["ops_per_iter"] = kOps;
  state.counters["us_per_op"] = benchmark::Counter(
      kOps, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  bench::ReportCopies(state, stats);
}

void RegisterGraphBenchmarks() {
  for (const Place& place : bench::BenchPlaces()) {
    if (place.type() != DeviceType::GPU()) continue;
    benchmark::RegisterBenchmark(absl::StrCat("dispatch/", place.type().name(), "_graph").c_str(),
                                 BM_DispatchGraph, place)
        ->Unit(benchmark::kMicrosecond);
  }
}
TANDEM_BENCHMARK_REGISTRAR(RegisterGraphBenchmarks);

}  // namespace
}  // namespace tandem
