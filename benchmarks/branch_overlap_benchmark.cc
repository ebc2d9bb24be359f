// overlap/cpu_<device>_branches[_in_order]: does the executor run a CPU
// branch and a device branch of one step at the same time? (The goal: host
// steps on host workers while device steps run on their streams.)
//
// One program, two independent branches of about equal cost: under
// device_guard("cpu") a chain of `mul` ops [64, 512] x [512, 512] (the CPU
// branch, built first; 33.5 MFLOP each, so the cpu backend gives each at
// most 8 threads and leaves cores to the thread driving the device), on the
// default place a chain of `mul` ops [4096, 1024] x [1024, 1024] on gpu,
// [256, 256] x [256, 256] on sim (the device branch); each ends in a
// reduce_sum and both sums are fetched.
// Weights are 1/K and inputs 1, so every product stays 1.
//
// Before the first row of a place runs, the CPU branch length is calibrated
// so that a plan of the CPU branch alone takes as long as a plan of the
// device branch alone (the length is then kept for every row and repetition
// of that place). Each row then times both branches alone again (median of 5
// runs) and runs the two-branch step. Counters: cpu_branch_us and
// device_branch_us (each alone), longer_branch_us, ratio = step time /
// longer branch (1: perfect overlap; 2: the branches serialise) and the
// chain lengths. The CPU branch comes first in program order, so an in-order
// executor finishes it before it launches the device branch: the _in_order
// rows (ExecutorOptions::in_order) show about 2, concurrent ones should show
// <= 1.15. On sim, device work runs synchronously on the thread that
// launches it, so the overlap there also depends on free host cores.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "benchmarks/bench_util.h"
#include "framework/base/status_macros.h"

namespace tandem {
namespace {

using bench::Fail;
using bench::Prepared;

// A chain of `length` mul ops [rows, k] x [k, k], on the cpu or on the
// executor's default place.
struct Branch {
  int64_t rows = 0, k = 0;
  int length = 0;
  bool on_cpu = false;
};

Branch CpuBranch(int length) { return {64, 512, length, true}; }

Branch DeviceBranch(const Place& place) {
  if (place.type() == DeviceType::GPU()) return {4096, 1024, 16, false};
  return {256, 256, 8, false};
}

// Appends `br` to p->builder (variables named after `prefix`); returns the
// sum of its last product.
Var BuildBranch(const std::string& prefix, const Branch& br, Prepared* p) {
  ProgramBuilder& b = p->builder;
  auto guard = b.device_guard(br.on_cpu ? "cpu" : "");
  Var h =
      b.CreatePersistableConstant(prefix + "_x", DataType::kFloat32, Shape({br.rows, br.k}), 1.0);
  Var w = b.CreatePersistableConstant(prefix + "_w", DataType::kFloat32, Shape({br.k, br.k}),
                                      1.0 / br.k);
  for (int i = 0; i < br.length; ++i) h = b.Mul(h, w);
  return b.ReduceSum(h);
}

// A program of `branches` (in that order) prepared on `place`, every
// branch's sum fetched.
struct BranchPlan {
  std::unique_ptr<Prepared> p;
  std::unique_ptr<Plan> plan;
};

absl::StatusOr<BranchPlan> PrepareBranches(const Place& place, const ExecutorOptions& options,
                                           const std::vector<Branch>& branches) {
  BranchPlan bp;
  bp.p = std::make_unique<Prepared>(place, options);
  std::vector<std::string> fetches;
  for (size_t i = 0; i < branches.size(); ++i) {
    fetches.push_back(BuildBranch(absl::StrCat("branch", i), branches[i], bp.p.get()).name);
  }
  RETURN_IF_ERROR(bp.p->builder.status());
  RETURN_IF_ERROR(bp.p->exe.Run(bp.p->builder.startup_program(), &bp.p->scope).status());
  ASSIGN_OR_RETURN(bp.plan,
                   bp.p->exe.Prepare(bp.p->builder.main_program(), bp.p->scope, {}, fetches));
  return bp;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Median seconds of one run of `bp` over 5 runs, after 2 warm-up runs.
absl::StatusOr<double> MedianRunSeconds(BranchPlan* bp) {
  std::vector<double> times;
  for (int i = 0; i < 7; ++i) {
    const auto start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(bp->p->exe.Run(bp->plan.get(), &bp->p->scope).status());
    if (i >= 2) times.push_back(SecondsSince(start));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Median seconds of a plan of `br` alone.
absl::StatusOr<double> TimeAlone(const Place& place, const ExecutorOptions& options,
                                 const Branch& br) {
  ASSIGN_OR_RETURN(BranchPlan bp, PrepareBranches(place, options, {br}));
  return MedianRunSeconds(&bp);
}

// The CPU branch length whose plan alone takes as long as the device
// branch's alone on `place`: a 4-op probe, then up to 3 corrections until
// within 5%. Calibrated once per place (not thread-safe, as registration).
absl::StatusOr<int> CalibratedCpuLength(const Place& place) {
  static auto* lengths = new std::map<std::string, int>();
  if (auto it = lengths->find(place.ToString()); it != lengths->end()) return it->second;
  const ExecutorOptions options;
  ASSIGN_OR_RETURN(const double device_s, TimeAlone(place, options, DeviceBranch(place)));
  int length = 4;
  ASSIGN_OR_RETURN(double cpu_s, TimeAlone(place, options, CpuBranch(length)));
  for (int round = 0; round < 3 && std::abs(cpu_s / device_s - 1) > 0.05; ++round) {
    const int next = std::clamp(static_cast<int>(std::lround(length * device_s / cpu_s)), 1, 1000);
    if (next == length) break;
    length = next;
    ASSIGN_OR_RETURN(cpu_s, TimeAlone(place, options, CpuBranch(length)));
  }
  (*lengths)[place.ToString()] = length;
  return length;
}

void BM_CpuDeviceBranches(benchmark::State& state, Place place, bool in_order) {
  ExecutorOptions options;
  options.in_order = in_order;
  absl::StatusOr<int> length = CalibratedCpuLength(place);
  if (!length.ok()) return Fail(state, length.status());
  const Branch cpu = CpuBranch(*length), device = DeviceBranch(place);
  absl::StatusOr<double> cpu_s = TimeAlone(place, options, cpu);
  if (!cpu_s.ok()) return Fail(state, cpu_s.status());
  absl::StatusOr<double> device_s = TimeAlone(place, options, device);
  if (!device_s.ok()) return Fail(state, device_s.status());
  absl::StatusOr<BranchPlan> both = PrepareBranches(place, options, {cpu, device});
  if (!both.ok()) return Fail(state, both.status());
  if (absl::StatusOr<double> warm = MedianRunSeconds(&*both); !warm.ok()) {
    return Fail(state, warm.status());
  }
  if (absl::Status s = bench::SettleSchedule(
          *both->plan,
          [&] { return both->p->exe.Run(both->plan.get(), &both->p->scope).status(); });
      !s.ok()) {
    return Fail(state, s);
  }

  RunStats stats;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    absl::Status s = both->p->exe.Run(both->plan.get(), &both->p->scope, {}, &stats).status();
    if (!s.ok()) return Fail(state, s);
  }
  const double step_s = SecondsSince(start) / static_cast<double>(state.iterations());
  const double longer_s = std::max(*cpu_s, *device_s);
  state.counters["cpu_branch_us"] = *cpu_s * 1e6;
  state.counters["device_branch_us"] = *device_s * 1e6;
  state.counters["longer_branch_us"] = longer_s * 1e6;
  state.counters["ratio"] = step_s / longer_s;
  state.counters["cpu_muls"] = cpu.length;
  state.counters["device_muls"] = device.length;
  bench::ReportCopies(state, stats);
}

void RegisterBranchOverlapBenchmarks() {
  for (const Place& place : bench::BenchPlaces()) {
    if (place.is_host()) continue;
    const std::string name = absl::StrCat("overlap/cpu_", place.type().name(), "_branches");
    for (bool in_order : {false, true}) {
      benchmark::RegisterBenchmark((name + (in_order ? "_in_order" : "")).c_str(),
                                   BM_CpuDeviceBranches, place, in_order)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
  }
}
TANDEM_BENCHMARK_REGISTRAR(RegisterBranchOverlapBenchmarks);

}  // namespace
}  // namespace tandem
