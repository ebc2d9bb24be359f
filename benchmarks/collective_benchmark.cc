// Collective rows of tandem_benchmark: collective/<type>_allreduce_<n>MiB
// times one all-reduce bucket of n MiB (a c_allreduce_sum of one rank,
// ring_id -1, in place on a persistable float32 tensor: single-rank NCCL on
// gpu, the host communicator on sim and cpu) against a device copy of the
// same size (scale by 1: n MiB read, n MiB written) in the same loop, each
// a run of its own one-op plan, so both pay the same executor cost per run.
// The row's time is the all-reduce run's; counters: copy_us (the copy run),
// added_us (all-reduce minus copy: what the collective adds per bucket;
// the target is <= 10 us on the H200) and bytes.
#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "benchmarks/bench_util.h"
#include "framework/runtime/executor.h"

namespace tandem {
namespace {

double RunUs(Executor& exe, Plan* plan, Scope* scope, absl::Status* status) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<Tensor>> out = exe.Run(plan, scope);
  if (!out.ok()) *status = out.status();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
      .count();
}

void BM_AllReduceBucket(benchmark::State& state, Place place, int64_t mib) {
  const int64_t n = mib * (1 << 20) / 4;
  bench::Prepared p(place);
  Var x = p.builder.CreatePersistableConstant("bucket", DataType::kFloat32, Shape({n}), 1.0);
  p.builder.Scale(x, 1.0);  // the copy: main program
  if (absl::Status s = p.exe.Run(p.builder.startup_program(), &p.scope).status(); !s.ok()) {
    return bench::Fail(state, s);
  }
  Program allreduce;
  allreduce.block().AddVar(*p.builder.main_program().block().FindVar(x.name));
  OpDesc op;
  op.type = "c_allreduce_sum";
  op.inputs["X"] = {x.name};
  op.outputs["Out"] = {x.name};
  op.attrs = {
      {"ring_id", int64_t{-1}}, {"nranks", int64_t{1}}, {"rank", int64_t{0}}, {"scale", 1.0}};
  allreduce.block().AppendOp(op);
  auto copy_plan = p.exe.Prepare(p.builder.main_program(), p.scope, {}, {});
  if (!copy_plan.ok()) return bench::Fail(state, copy_plan.status());
  auto reduce_plan = p.exe.Prepare(allreduce, p.scope, {}, {});
  if (!reduce_plan.ok()) return bench::Fail(state, reduce_plan.status());
  absl::Status status;
  for (int warm = 0; warm < 3; ++warm) {  // communicators, allocations
    RunUs(p.exe, copy_plan->get(), &p.scope, &status);
    RunUs(p.exe, reduce_plan->get(), &p.scope, &status);
  }
  if (!status.ok()) return bench::Fail(state, status);
  double copy_us = 0, reduce_us = 0;
  for (auto _ : state) {
    copy_us += RunUs(p.exe, copy_plan->get(), &p.scope, &status);
    const double us = RunUs(p.exe, reduce_plan->get(), &p.scope, &status);
    reduce_us += us;
    state.SetIterationTime(us * 1e-6);
    if (!status.ok()) return bench::Fail(state, status);
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["copy_us"] = copy_us / iters;
  state.counters["added_us"] = (reduce_us - copy_us) / iters;
  state.counters["bytes"] = static_cast<double>(n * 4);
}

void RegisterCollectiveBenchmarks() {
  for (const Place& place : bench::BenchPlaces()) {
    for (int64_t mib : {1, 25}) {
      benchmark::RegisterBenchmark(
          absl::StrCat("collective/", place.type().name(), "_allreduce_", mib, "MiB").c_str(),
          BM_AllReduceBucket, place, mib)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}
TANDEM_BENCHMARK_REGISTRAR(RegisterCollectiveBenchmarks);

}  // namespace
}  // namespace tandem
