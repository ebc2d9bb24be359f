// Profiler cost: per op and copy when enabled, none when disabled.
//
//   bazel run -c opt //profiler:profiler_benchmark
//
// BM_ObservedOp: one op's OnOpBegin + OnOpEnd through the installed
//   observer (sim:0: a start and an end timing event queued on its
//   compute stream), i.e. the per-op cost of profiling.
// BM_CropRun/<mode>: workload 2 (shape -> slice -> crop_tensor) on sim:0
//   (ops and copies per run: `steps`) with the profiler off (0), on in
//   CPU state (1) and on in All state (2); the difference per step is the
//   overhead seen by a real run.
// BM_RecordEvent/<on>: a user span, profiler off (0) or on (1).
// Collected events are discarded every kResetEvery iterations (untimed), so
// memory stays bounded.
#include "benchmark/benchmark.h"
#include "framework/device/device_registry.h"
#include "framework/runtime/execution_observer.h"
#include "glog/logging.h"
#include "profiler/crop_workload_testutil.h"
#include "profiler/profiler.h"

namespace tandem {
namespace profiler {
namespace {

constexpr int64_t kResetEvery = 1 << 16;

void MaybeReset(benchmark::State& state, int64_t i) {
  if (i % kResetEvery != kResetEvery - 1) return;
  state.PauseTiming();
  ResetProfiler();
  state.ResumeTiming();
}

void BM_ObservedOp(benchmark::State& state) {
  Place sim = *ParsePlace("sim:0");
  absl::StatusOr<Device*> device = DeviceRegistry::Global().GetDevice(sim);
  CHECK(device.ok()) << device.status();
  OpDesc op;
  op.type = "elementwise_add";
  op.outputs["Out"] = {"c"};
  OpEvent e;
  e.op = &op;
  e.place = sim;
  e.device = *device;
  e.stream = (*device)->compute_stream();
  CHECK(StartProfiler({ProfilerState::kAll, 0}).ok());
  ExecutionObserver* observer = GetExecutionObserver();
  observer->OnRunBegin();
  int64_t i = 0;
  for (auto _ : state) {
    observer->OnOpBegin(e);
    observer->OnOpEnd(e);
    MaybeReset(state, i++);
  }
  observer->OnRunEnd(RunStats());
  CHECK(CollectProfile().ok());
}
BENCHMARK(BM_ObservedOp);

void BM_CropRun(benchmark::State& state) {
  auto crop = CropWorkload::Create(*ParsePlace("sim:0"), /*slice_on_cpu=*/false);
  CHECK(crop.ok()) << crop.status();
  auto warm = (*crop)->Run(10);  // warms the allocators, folds constants
  CHECK(warm.ok()) << warm.status();
  const int steps_per_run = warm->back().ops + warm->back().copies();
  const int mode = static_cast<int>(state.range(0));
  if (mode > 0) {
    CHECK(StartProfiler({mode == 1 ? ProfilerState::kCPU : ProfilerState::kAll, 0}).ok());
  }
  int64_t i = 0;
  for (auto _ : state) {
    CHECK((*crop)->Run(1).ok());
    MaybeReset(state, i++);
  }
  if (mode > 0) CHECK(CollectProfile().ok());
  state.counters["per_step"] =
      benchmark::Counter(static_cast<double>(state.iterations() * steps_per_run),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["steps"] = steps_per_run;
}
BENCHMARK(BM_CropRun)->Arg(0)->Arg(1)->Arg(2);

void BM_RecordEvent(benchmark::State& state) {
  if (state.range(0) != 0) CHECK(StartProfiler({ProfilerState::kAll, 0}).ok());
  int64_t i = 0;
  for (auto _ : state) {
    RecordEvent span("train_step");
    MaybeReset(state, i++);
  }
  if (state.range(0) != 0) CHECK(CollectProfile().ok());
}
BENCHMARK(BM_RecordEvent)->Arg(0)->Arg(1);

}  // namespace
}  // namespace profiler
}  // namespace tandem
