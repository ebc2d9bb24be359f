// Collective rows of tandem_benchmark: collective/<type>_allreduce_<n>MiB
// times one all-reduce bucket of n MiB (a c_allreduce_sum of one rank,
// ring_id -1, in place on a persistable float32 tensor: single-rank NCCL on
// gpu, the host communicator on sim and cpu) against a device copy of the
// same size (scale by 1: n MiB read, n MiB written) in the same loop, each
// a run of its own one-op plan, so both pay the same executor cost per run.
// The row's time is the all-reduce run's; counters: copy_us (the copy run),
// added_us (all-reduce minus copy: what the collective adds per bucket;
// the target is <= 10 us on the H200) and bytes.
//
// collective/<type>2_allreduce_<n>MiB (64 and 256 MiB, where the type has
// two devices: gpu:0 + gpu:1 through NCCL, sim:0 + sim:1 through the host
// group): one c_allreduce_sum of n MiB averaged over two ranks, in place,
// each rank's one-op plan run by its executor on a thread of its own (kept
// for the whole row); the row's time is from starting both runs to both
// having returned. Counters: algbw_GBps (n MiB / time) and busbw_GBps
// (algbw * 2 (ranks - 1) / ranks, NCCL's bus bandwidth: equal for two
// ranks), the figure compared with torch.distributed's on two GPUs (the
// goal: >= 90% of it).
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "benchmarks/bench_util.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "framework/parallel/collective_group.h"
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
  if (absl::Status s = allreduce.block().AddVar(*p.builder.main_program().block().FindVar(x.name));
      !s.ok()) {
    return bench::Fail(state, s);
  }
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

// One rank of BM_TwoRankAllReduce: its executor, scope and one-op plan.
struct Rank {
  explicit Rank(Place place) : exe(place, bench::WithFlags({})) {}
  Executor exe;
  Scope scope;
  std::unique_ptr<Plan> plan;
  absl::Status status;
};

absl::Status PrepareRank(const CollectiveGroup& group, int rank, int64_t n, Rank* r) {
  ProgramBuilder b;
  Var x = b.CreatePersistableConstant("bucket", DataType::kFloat32, Shape({n}), 1.0 + rank);
  RETURN_IF_ERROR(b.status());
  RETURN_IF_ERROR(r->exe.Run(b.startup_program(), &r->scope).status());
  Program allreduce;
  RETURN_IF_ERROR(allreduce.block().AddVar(*b.main_program().block().FindVar(x.name)));
  OpDesc op;
  op.type = "c_allreduce_sum";
  op.inputs["X"] = {x.name};
  op.outputs["Out"] = {x.name};
  op.attrs = {{"ring_id", group.id()},
              {"nranks", int64_t{group.size()}},
              {"rank", int64_t{rank}},
              {"scale", 1.0 / group.size()}};
  allreduce.block().AppendOp(op);
  ASSIGN_OR_RETURN(r->plan, r->exe.Prepare(allreduce, r->scope, {}, {}));
  return absl::OkStatus();
}

void BM_TwoRankAllReduce(benchmark::State& state, std::vector<Place> places, int64_t mib) {
  const int64_t n = mib * (1 << 20) / 4;
  std::shared_ptr<CollectiveGroup> group = CollectiveGroup::Create(places);
  std::vector<std::unique_ptr<Rank>> ranks;
  for (int r = 0; r < group->size(); ++r) {
    ranks.push_back(std::make_unique<Rank>(places[r]));
    if (absl::Status s = PrepareRank(*group, r, n, ranks[r].get()); !s.ok()) {
      return bench::Fail(state, s);
    }
  }
  // Each rank's thread runs its plan once per round (spinning between rounds).
  std::atomic<int64_t> round{0};
  std::atomic<int> finished{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (auto& rank : ranks) {
    threads.emplace_back([&, r = rank.get()] {
      for (int64_t seen = 0;;) {
        while (round.load(std::memory_order_acquire) == seen && !stop.load()) {
          std::this_thread::yield();
        }
        if (stop.load()) return;
        seen = round.load();
        absl::StatusOr<std::vector<Tensor>> out = r->exe.Run(r->plan.get(), &r->scope);
        if (!out.ok()) r->status = out.status();
        finished.fetch_add(1, std::memory_order_release);
      }
    });
  }
  auto one_round = [&] {
    const auto start = std::chrono::steady_clock::now();
    finished.store(0);
    round.fetch_add(1, std::memory_order_release);
    while (finished.load(std::memory_order_acquire) < static_cast<int>(ranks.size())) {
      std::this_thread::yield();
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  for (int warm = 0; warm < 3; ++warm) one_round();  // communicators, streams
  double seconds = 0;
  for (auto _ : state) {
    const double s = one_round();
    seconds += s;
    state.SetIterationTime(s);
  }
  stop.store(true);
  for (std::thread& t : threads) t.join();
  for (auto& rank : ranks) {
    if (!rank->status.ok()) return bench::Fail(state, rank->status);
  }
  const double per = seconds / static_cast<double>(state.iterations());
  const double bytes = static_cast<double>(n) * 4;
  const double nranks = static_cast<double>(ranks.size());
  state.counters["algbw_GBps"] = bytes / per * 1e-9;
  state.counters["busbw_GBps"] = bytes / per * 1e-9 * 2 * (nranks - 1) / nranks;
  state.counters["bytes"] = bytes;
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
    if (place.is_host() || DeviceRegistry::Global().DeviceCount(place.type()) < 2) continue;
    for (int64_t mib : {64, 256}) {
      benchmark::RegisterBenchmark(
          absl::StrCat("collective/", place.type().name(), "2_allreduce_", mib, "MiB").c_str(),
          BM_TwoRankAllReduce, std::vector<Place>{Place(place.type(), 0), Place(place.type(), 1)},
          mib)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}
TANDEM_BENCHMARK_REGISTRAR(RegisterCollectiveBenchmarks);

}  // namespace
}  // namespace tandem
