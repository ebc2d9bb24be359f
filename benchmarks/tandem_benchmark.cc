// Tandem's benchmarks, one per row of the performance table (RESULTS.md), on
// every available place. Names are the metric names the peer scripts print
// (benchmarks/peers/*.py), so benchmarks/compare.py can put them side by
// side. This file has the two canonical workloads (docs/design.md: workload 1,
// embedding offload; workload 2, shape-op placement), dispatch, copies and main(); other
// rows live in their own files of the same binary (bench_util.h says how).
//
//   bazel run -c opt //benchmarks:tandem_benchmark -- --benchmark_filter=workload2
//   tandem_benchmark --benchmark_repetitions=5 --benchmark_format=json > ours.json
//                    (on the GPU machine; benchmarks/run_comparison.sh does this)
//
// Environment: TANDEM_BENCH_ROWS (default 1000000) sets the embedding table
// rows of workload 1, embedding offload (the H200 run uses 10000000); TANDEM_BENCH_PLACES
// (default "gpu:0,sim:0,cpu" filtered by what exists) picks the devices.
// Flags: --in_order runs every row's executor in-order (one step at a time,
// ExecutorOptions::in_order; default concurrent), --cuda_graph captures and
// replays every row's step (bench_util.h); the output's context says which
// ("executor: concurrent"). --profile profiles the rows run (one row:
// --benchmark_filter) and prints the profiler's report at the end,
// --trace_out=FILE.json also writes its Chrome trace. The concurrent mode's
// schedule trial (ExecutorOptions::schedule_trial) runs in every row, as
// in any program: its first ~100 iterations time both schedules.
// Every time is steady-state wall time per iteration, device work included
// (each iteration ends with the device synchronised); copies per iteration
// are reported as counters next to it.
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "benchmarks/bench_util.h"
#include "framework/autoplace/auto_placement.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/runtime/executor.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "models/crop/crop_model.h"
#include "models/embedding/embedding_model.h"

namespace tandem {
namespace {

using bench::EnvInt;
using bench::Fail;
using bench::Prepared;
using bench::ReportCopies;

// dispatch/<place>_us: per-op cost of a chain of 100 tiny scale ops
// ([1] float32), one run = 100 ops + one synchronisation.
void BM_Dispatch(benchmark::State& state, Place place) {
  constexpr int kOps = 100;
  Prepared p(place);
  Var x = p.builder.CreatePersistableConstant("x", DataType::kFloat32, Shape({1}), 1.0);
  Var h = x;
  for (int i = 0; i < kOps; ++i) h = p.builder.Scale(h, 1.0);
  if (absl::Status s = p.exe.Run(p.builder.startup_program(), &p.scope).status(); !s.ok()) {
    return Fail(state, s);
  }
  auto plan = p.exe.Prepare(p.builder.main_program(), p.scope, {}, {});
  if (!plan.ok()) return Fail(state, plan.status());
  if (absl::Status s =
          bench::SettleSchedule(**plan, [&] { return p.exe.Run(plan->get(), &p.scope).status(); });
      !s.ok()) {
    return Fail(state, s);
  }
  RunStats stats;
  for (auto _ : state) {
    absl::StatusOr<std::vector<Tensor>> out = p.exe.Run(plan->get(), &p.scope, {}, &stats);
    if (!out.ok()) return Fail(state, out.status());
  }
  state.counters["ops_per_iter"] = kOps;
  state.counters["us_per_op"] = benchmark::Counter(
      kOps, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  ReportCopies(state, stats);
}

// device_guard/<place>: one DeviceGuard of `place` (switch and restore)
// from the host's default current device, what running a kernel costs the
// executor beyond the kernel itself.
void BM_DeviceGuard(benchmark::State& state, Place place) {
  if (absl::Status s = DeviceRegistry::Global().GetDevice(place).status(); !s.ok()) {
    return Fail(state, s);
  }
  for (auto _ : state) {
    DeviceGuard guard(place);
    benchmark::DoNotOptimize(&guard);
  }
}

// copy/<dir>_<memory>_<bytes>: Device copies of one buffer.
void BM_Copy(benchmark::State& state, Place place, CopyKind kind, bool pinned, bool async) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  absl::StatusOr<Device*> dev = DeviceRegistry::Global().GetDevice(place);
  if (!dev.ok()) return Fail(state, dev.status());
  Allocator* host_alloc = pinned ? (*dev)->host_allocator() : CpuAllocator::Default();
  auto host = Buffer::Allocate(host_alloc, bytes);
  auto device = Buffer::Allocate((*dev)->allocator(), bytes);
  if (!host.ok() || !device.ok()) return Fail(state, absl::ResourceExhaustedError("buffers"));
  std::memset((*host)->data(), 1, bytes);
  void* dst = kind == CopyKind::kHostToDevice ? (*device)->data() : (*host)->data();
  const void* src = kind == CopyKind::kHostToDevice ? (*host)->data() : (*device)->data();
  for (auto _ : state) {
    absl::Status s = async ? (*dev)->CopyAsync(kind, dst, src, bytes, (*dev)->copy_stream())
                           : (*dev)->Copy(kind, dst, src, bytes);
    if (s.ok() && async) s = (*dev)->SynchronizeStream((*dev)->copy_stream());
    if (!s.ok()) return Fail(state, s);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}

// workload2/slice_<where>: shape -> slice -> crop_tensor per iteration;
// workload2/auto_<place>: no device_guard, the automatic placement decides
// (the goal: no copy, and no slower than device_guard("cpu")).
void BM_Workload2(benchmark::State& state, Place place, bool slice_on_cpu, bool auto_place) {
  ExecutorOptions options;
  if (auto_place) options.placement_planner = MakeAutoPlacer();
  Prepared p(place, options);
  absl::StatusOr<Var> out = BuildCropModel(slice_on_cpu, &p.builder);
  if (!out.ok()) return Fail(state, out.status());
  auto plan = p.exe.Prepare(p.builder.main_program(), p.scope, {}, {});
  if (!plan.ok()) return Fail(state, plan.status());
  RunStats stats;
  for (auto _ : state) {
    absl::StatusOr<std::vector<Tensor>> r = p.exe.Run(plan->get(), &p.scope, {}, &stats);
    if (!r.ok()) return Fail(state, r.status());
  }
  ReportCopies(state, stats);
}

// workload1/b<batch>/<table place>[_pipelined]: one training step
// (forward, backward, SGD with sparse rows) of the embedding workload,
// random ids, run as a loop that waits for each step does (Executor::Run).
// Pipelined: each iteration starts the next step
// (Executor::RunAsync) before waiting for the one before, as a training
// loop does; the table lookup of a step then runs during the step before
// (only the rows that step updates wait for its update).
void BM_Workload1(benchmark::State& state, Place place, int64_t batch, bool table_on_cpu,
                  bool pipelined) {
  Prepared p(place);
  EmbeddingConfig config;
  config.rows = EnvInt("TANDEM_BENCH_ROWS", 1000000);
  config.batch = batch;
  config.table_on_cpu = table_on_cpu;
  config.is_sparse = true;
  EmbeddingModel m;
  auto plan = bench::PrepareEmbeddingWorkload(config, &p, &m);
  if (!plan.ok()) return Fail(state, plan.status());
  std::mt19937_64 rng(1);
  std::vector<Tensor> id_batches;
  for (int i = 0; i < 16; ++i) {
    Tensor t = *Tensor::Allocate(CpuAllocator::Default(), DataType::kInt64, {batch});
    for (int64_t j = 0; j < batch; ++j) t.data<int64_t>()[j] = rng() % config.rows;
    id_batches.push_back(t);
  }
  RunStats stats;
  int i = 0;
  std::optional<RunHandle> in_flight;
  // One iteration: a run waited for, or (pipelined) a run started before
  // the one in flight is waited for.
  auto step = [&]() -> absl::Status {
    const FeedMap feeds = {{m.ids.name, id_batches[i++ % 16]}};
    if (!pipelined) return p.exe.Run(plan->get(), &p.scope, feeds, &stats).status();
    ASSIGN_OR_RETURN(RunHandle started, p.exe.RunAsync(plan->get(), &p.scope, feeds));
    if (in_flight.has_value()) RETURN_IF_ERROR(in_flight->Wait(&stats).status());
    in_flight = std::move(started);
    return absl::OkStatus();
  };
  if (absl::Status s = bench::SettleSchedule(**plan, step); !s.ok()) return Fail(state, s);
  for (auto _ : state) {
    if (absl::Status s = step(); !s.ok()) return Fail(state, s);
  }
  if (pipelined && in_flight.has_value()) {
    absl::StatusOr<std::vector<Tensor>> r = in_flight->Wait(&stats);
    if (!r.ok()) return Fail(state, r.status());
  }
  ReportCopies(state, stats);
}

// The canonical-workload, dispatch and copy rows.
void RegisterCoreBenchmarks() {
  for (const Place& place : bench::BenchPlaces()) {
    const std::string p = place.is_host() ? "cpu" : place.type().name();
    benchmark::RegisterBenchmark(absl::StrCat("dispatch/", p).c_str(), BM_Dispatch, place)
        ->Unit(benchmark::kMicrosecond);
    if (place.is_host()) continue;
    benchmark::RegisterBenchmark(absl::StrCat("device_guard/", p).c_str(), BM_DeviceGuard, place);
    benchmark::RegisterBenchmark(absl::StrCat("workload2/slice_", p).c_str(), BM_Workload2, place,
                                 false, false)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(absl::StrCat("workload2/slice_cpu_with_", p).c_str(), BM_Workload2,
                                 place, true, false)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(absl::StrCat("workload2/auto_", p).c_str(), BM_Workload2, place,
                                 false, true)
        ->Unit(benchmark::kMicrosecond);
    for (int64_t batch : {1, 4096}) {
      for (bool pipelined : {false, true}) {
        const char* suffix = pipelined ? "_pipelined" : "";
        benchmark::RegisterBenchmark(
            absl::StrCat("workload1/b", batch, "/table_cpu_rest_", p, suffix).c_str(), BM_Workload1,
            place, batch, true, pipelined)
            ->Unit(benchmark::kMicrosecond);
        benchmark::RegisterBenchmark(absl::StrCat("workload1/b", batch, "/all_", p, suffix).c_str(),
                                     BM_Workload1, place, batch, false, pipelined)
            ->Unit(benchmark::kMicrosecond);
      }
    }
    for (CopyKind kind : {CopyKind::kHostToDevice, CopyKind::kDeviceToHost}) {
      for (bool pinned : {true, false}) {
        for (bool async : {false, true}) {
          if (async && !pinned) continue;
          benchmark::RegisterBenchmark(
              absl::StrCat("copy/", p, "_", CopyKindName(kind), pinned ? "_pinned" : "_pageable",
                           async ? "_async" : "_sync")
                  .c_str(),
              BM_Copy, place, kind, pinned, async)
              ->RangeMultiplier(256)
              ->Range(16, 256 << 20)
              ->Unit(benchmark::kMicrosecond);
        }
      }
    }
  }
}
TANDEM_BENCHMARK_REGISTRAR(RegisterCoreBenchmarks);

// With --help: the binary's own flags and environment, before Google
// Benchmark prints its flags and exits.
void PrintHelpIfAsked(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg != "--help" && arg != "-help" && arg != "-h") continue;
    std::printf(
        "tandem_benchmark: Tandem's benchmark rows (benchmarks/RESULTS.md)\n"
        "environment: TANDEM_BENCH_PLACES (default gpu:0,sim:0,cpu: the places to run on),\n"
        "  TANDEM_BENCH_ROWS (default 1000000: embedding table rows of workload1 and\n"
        "  embedding_cpu), TANDEM_BENCH_MLP_BATCH (default 4096: batch of the mlp rows)\n"
        "flags:\n");
    for (const char* flag : {"in_order", "cuda_graph", "fuse_patterns", "profile", "trace_out"}) {
      gflags::CommandLineFlagInfo info;
      if (gflags::GetCommandLineFlagInfo(flag, &info)) {
        std::printf("%s\n", gflags::DescribeOneFlag(info).c_str());
      }
    }
    std::printf("and Google Benchmark's:\n");
    std::fflush(stdout);
    return;
  }
}

}  // namespace
}  // namespace tandem

int main(int argc, char** argv) {
  tandem::PrintHelpIfAsked(argc, argv);
  benchmark::Initialize(&argc, argv);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  tandem::bench::AddExecutorContext();
  tandem::bench::RegisterAll();
  if (absl::Status s = tandem::bench::StartProfilingIfAsked(); !s.ok()) {
    std::fprintf(stderr, "tandem_benchmark: %s\n", s.ToString().c_str());
    return 2;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (absl::Status s = tandem::bench::StopProfilingIfAsked(); !s.ok()) {
    std::fprintf(stderr, "tandem_benchmark: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
