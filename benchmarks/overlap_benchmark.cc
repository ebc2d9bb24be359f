// copy/<place>_H2D_pinned_overlap_sgemm: does a large pinned host->device
// copy on the device's copy stream overlap with compute on its compute
// stream? (The goal: pinned copies >= 50 GB/s, overlapped with compute on
// another stream.)
//
// Per iteration: a 256 MiB copy is queued on copy_stream(), then K runs of
// a prepared [4096, 1024] x [1024, 1024] float32 `mul` plan execute on the
// compute stream (each run ends synchronised), then the copy is awaited. K
// is calibrated so the compute alone takes about as long as the copy alone.
// Counters: copy_us and compute_us (each alone), GBps (copy bytes over the
// iteration's time) and overlap_pct = 100 * (copy + compute - both) /
// min(copy, compute): 100 when the shorter one hides entirely under the
// longer, 0 when they serialise.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "benchmarks/bench_util.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"

namespace tandem {
namespace {

using bench::Fail;
using bench::Prepared;

constexpr size_t kCopyBytes = size_t{256} << 20;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

void BM_CopyOverlapsCompute(benchmark::State& state, Place place) {
  absl::StatusOr<Device*> dev = DeviceRegistry::Global().GetDevice(place);
  if (!dev.ok()) return Fail(state, dev.status());
  Device* d = *dev;
  auto host = Buffer::Allocate(d->host_allocator(), kCopyBytes);
  auto device = Buffer::Allocate(d->allocator(), kCopyBytes);
  if (!host.ok()) return Fail(state, host.status());
  if (!device.ok()) return Fail(state, device.status());
  std::memset((*host)->data(), 1, kCopyBytes);

  Prepared p(place);
  Var x = p.builder.CreatePersistableConstant("overlap_x", DataType::kFloat32, Shape({4096, 1024}),
                                              0.5);
  Var w = p.builder.CreatePersistableConstant("overlap_w", DataType::kFloat32, Shape({1024, 1024}),
                                              0.25);
  p.builder.Mul(x, w);
  if (!p.builder.status().ok()) return Fail(state, p.builder.status());
  if (absl::Status s = p.exe.Run(p.builder.startup_program(), &p.scope).status(); !s.ok()) {
    return Fail(state, s);
  }
  auto plan = p.exe.Prepare(p.builder.main_program(), p.scope, {}, {});
  if (!plan.ok()) return Fail(state, plan.status());

  Stream* copies = d->copy_stream();
  auto copy = [&]() {
    return d->CopyAsync(CopyKind::kHostToDevice, (*device)->data(), (*host)->data(), kCopyBytes,
                        copies);
  };
  auto compute = [&](int runs) -> absl::Status {
    for (int i = 0; i < runs; ++i) RETURN_IF_ERROR(p.exe.Run(plan->get(), &p.scope).status());
    return absl::OkStatus();
  };
  // Warm up both, then time each alone (best of 3).
  double copy_s = 1e9, run_s = 1e9;
  for (int i = 0; i < 4; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    absl::Status s = copy();
    if (s.ok()) s = d->SynchronizeStream(copies);
    if (!s.ok()) return Fail(state, s);
    if (i > 0) copy_s = std::min(copy_s, Seconds(t0));
    t0 = std::chrono::steady_clock::now();
    if (s = compute(1); !s.ok()) return Fail(state, s);
    if (i > 0) run_s = std::min(run_s, Seconds(t0));
  }
  const int runs = std::max(1, static_cast<int>(copy_s / run_s + 0.5));
  double compute_s = 1e9;
  for (int i = 0; i < 3; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    if (absl::Status s = compute(runs); !s.ok()) return Fail(state, s);
    compute_s = std::min(compute_s, Seconds(t0));
  }

  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    absl::Status s = copy();
    if (s.ok()) s = compute(runs);
    if (s.ok()) s = d->SynchronizeStream(copies);
    if (!s.ok()) return Fail(state, s);
  }
  const double both_s = Seconds(start) / static_cast<double>(state.iterations());
  state.counters["overlap_pct"] = 100 * (copy_s + compute_s - both_s) / std::min(copy_s, compute_s);
  state.counters["copy_us"] = copy_s * 1e6;
  state.counters["compute_us"] = compute_s * 1e6;
  state.counters["compute_runs"] = runs;
  state.counters["GBps"] = static_cast<double>(kCopyBytes) * 1e-9 / both_s;
}

void RegisterOverlapBenchmarks() {
  for (const Place& place : bench::BenchPlaces()) {
    if (place.is_host()) continue;
    const std::string p = place.type().name();
    benchmark::RegisterBenchmark(absl::StrCat("copy/", p, "_H2D_pinned_overlap_sgemm").c_str(),
                                 BM_CopyOverlapsCompute, place)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
}
TANDEM_BENCHMARK_REGISTRAR(RegisterOverlapBenchmarks);

}  // namespace
}  // namespace tandem
