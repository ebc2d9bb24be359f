// The MLP training-step and SGEMM rows of tandem_benchmark (the goal: the
// 4 x Linear(1024) MLP training step at batch 4096 at >= 95% of cuBLAS SGEMM
// throughput, and at least PyTorch's).
//
//   TANDEM_BENCH_PLACES=gpu:0 tandem_benchmark --benchmark_filter='mlp|sgemm'
//   TANDEM_BENCH_MLP_BATCH=64 TANDEM_BENCH_PLACES=cpu tandem_benchmark --benchmark_filter=mlp_cpu
//
// Rows, per place (the GPU's names have no place suffix: they are the names
// benchmarks/peers/torch_bench.py prints; B is TANDEM_BENCH_MLP_BATCH,
// default 4096):
//   mlp[_<place>]/4x1024_b<B>_step     us per training step, counter tflops
//   sgemm[_<place>]/<B>x1024x1024      us per `mul` op, counter tflops
//   mlp[_<place>]_bf16/4x1024_b<B>_step
//                                      the same step with ApplyAmp(bfloat16):
//                                      fc in bfloat16, float32 master weights
//                                      (the peers: PyTorch's autocast, JAX
//                                      with bfloat16 products)
//   sgemm[_<place>]_bf16/<B>x1024x1024 one bfloat16 `mul` op (float32 accumulation)
//   data_parallel/mlp_<type>x<N>/4x1024_b<B>_per_replica
//                                      us per DataParallel step of N replicas
//                                      on <type>:0..N-1 (N = 1, and 2 where
//                                      the type has 2 devices), each on its
//                                      own B rows; counter examples_per_s.
//                                      2-GPU scaling = its examples_per_s at
//                                      N = 2 over N = 1 (the goal: >= 1.9x)
// Both use real time (Google Benchmark appends "/real_time" to the names;
// compare.py drops it) and compare.py turns each tflops counter into a
// "<name minus _step>_tflops" row. The model is torch_bench.py's mlp(): 4
// fc layers of width 1024 with bias, relu between them (not after the
// last), loss mean((out - y)^2), plain SGD lr 0.01; one step does 3
// products of 2 * B * 1024 * 1024 flops per layer (the peer counts the
// first layer's unneeded input gradient too, and so do we: the same
// constant on both sides). As in the peer, x and y are random tensors
// already on the device (uploaded once before timing): a step copies
// nothing.
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "benchmarks/bench_util.h"
#include "framework/amp/amp.h"
#include "framework/backward/optimizer.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/parallel/data_parallel.h"
#include "framework/types/float16.h"

namespace tandem {
namespace {

using bench::Fail;
using bench::Prepared;
using bench::ReportCopies;

constexpr int64_t kWidth = 1024;
constexpr int kLayers = 4;

int64_t MlpBatch() { return bench::EnvInt("TANDEM_BENCH_MLP_BATCH", 4096); }

// A persistable [rows, kWidth] variable of `dtype` on the executor's place,
// created by the startup program; RunSteps fills it with FillRandom.
Var RandomInput(const std::string& name, int64_t rows, Prepared* p,
                DataType dtype = DataType::kFloat32) {
  return p->builder.CreatePersistableConstant(name, dtype, Shape({rows, kWidth}), 0);
}

// Overwrites the scope's tensor `name` (float32 or bfloat16) with normal(0,
// 1) values drawn from `seed` on the host (one copy to its place).
absl::Status FillRandom(const std::string& name, uint64_t seed, Scope* scope) {
  Variable* v = scope->Find(name);
  if (v == nullptr || !v->is_tensor()) {
    return absl::InternalError(absl::StrCat("mlp benchmark: variable '", name, "' is missing"));
  }
  Tensor* t = v->mutable_tensor();
  ASSIGN_OR_RETURN(Tensor host, Tensor::Allocate(CpuAllocator::Default(), t->dtype(), t->shape()));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < host.NumElements(); ++i) {
    if (t->dtype() == DataType::kBFloat16) {
      host.data<bfloat16>()[i] = bfloat16(normal(rng));
    } else {
      host.data<float>()[i] = normal(rng);
    }
  }
  if (t->place().is_host()) {
    std::memcpy(t->raw_data(), host.raw_data(), host.NumBytes());
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(Device * device, DeviceRegistry::Global().GetDevice(t->place()));
  return device->Copy(CopyKind::kHostToDevice, t->raw_data(), host.raw_data(), host.NumBytes());
}

// Runs `p`'s startup program, fills `inputs` with random values, prepares
// the main program (no feeds, no fetches) and times one run per iteration,
// pipelined as a trainer runs its steps: each iteration starts the next run
// (Executor::RunAsync) before waiting for the one before, so a run's launches
// overlap the device work of the run before it. The peers time the same way
// (back-to-back calls, one synchronisation per timed batch); a run waited for
// before the next starts adds the launch and completion latency (about 10 us
// on the H200) to every row.
void RunSteps(benchmark::State& state, Prepared* p, const std::vector<std::string>& inputs,
              double flops_per_run) {
  if (!p->builder.status().ok()) return Fail(state, p->builder.status());
  if (absl::Status s = p->exe.Run(p->builder.startup_program(), &p->scope).status(); !s.ok()) {
    return Fail(state, s);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (absl::Status s = FillRandom(inputs[i], i + 1, &p->scope); !s.ok()) return Fail(state, s);
  }
  auto plan = p->exe.Prepare(p->builder.main_program(), p->scope, {}, {});
  if (!plan.ok()) return Fail(state, plan.status());
  RunStats stats;
  std::optional<RunHandle> in_flight;
  auto step = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(RunHandle started, p->exe.RunAsync(plan->get(), &p->scope, {}));
    if (in_flight.has_value()) RETURN_IF_ERROR(in_flight->Wait(&stats).status());
    in_flight = std::move(started);
    return absl::OkStatus();
  };
  if (absl::Status s = bench::SettleSchedule(**plan, step); !s.ok()) return Fail(state, s);
  for (auto _ : state) {
    if (absl::Status s = step(); !s.ok()) return Fail(state, s);
  }
  if (in_flight.has_value()) {
    if (absl::Status s = in_flight->Wait(&stats).status(); !s.ok()) return Fail(state, s);
  }
  state.counters["tflops"] =
      benchmark::Counter(flops_per_run * 1e-12, benchmark::Counter::kIsIterationInvariantRate);
  ReportCopies(state, stats);
}

// The MLP of the file comment on input x and target y, with its SGD step;
// its forward rewritten by ApplyAmp when `amp` is given.
absl::Status BuildMlpStep(Var x, Var y, ProgramBuilder* b,
                          std::optional<DataType> amp = std::nullopt) {
  Var h = x;
  for (int layer = 0; layer < kLayers; ++layer) {
    h = b->Fc(h, kWidth, /*in_num_col_dims=*/1, /*with_bias=*/true, absl::StrCat("mlp_fc", layer));
    if (layer + 1 < kLayers) h = b->Relu(h);
  }
  Var loss = b->Mean(b->SquareErrorCost(h, y));
  if (amp.has_value()) RETURN_IF_ERROR(ApplyAmp(AmpOptions{*amp}, &b->main_program()).status());
  SGD sgd(/*learning_rate=*/0.01);
  return sgd.Minimize(b, loss);
}

// mlp[_<place>][_bf16]/4x1024_b<B>_step: one training step (see the file
// comment).
void BM_MlpStep(benchmark::State& state, Place place, int64_t batch, std::optional<DataType> amp) {
  Prepared p(place);
  ProgramBuilder& b = p.builder;
  if (absl::Status s =
          BuildMlpStep(RandomInput("mlp_x", batch, &p), RandomInput("mlp_y", batch, &p), &b, amp);
      !s.ok()) {
    return Fail(state, s);
  }
  RunSteps(state, &p, {"mlp_x", "mlp_y"}, 3.0 * 2 * batch * kWidth * kWidth * kLayers);
}

// sgemm[_<place>][_bf16]/<B>x1024x1024: one `mul` op of `dtype`, out = x * w.
void BM_Sgemm(benchmark::State& state, Place place, int64_t batch, DataType dtype) {
  Prepared p(place);
  Var x = RandomInput("sgemm_x", batch, &p, dtype);
  Var w = RandomInput("sgemm_w", kWidth, &p, dtype);
  p.builder.Mul(x, w);
  RunSteps(state, &p, {"sgemm_x", "sgemm_w"}, 2.0 * batch * kWidth * kWidth);
}

// data_parallel/mlp_<type>x<N>/...: the MLP step of BM_MlpStep replicated
// over `places` (DataParallel, gradients averaged in 25 MiB buckets), x and
// y persistable on every replica as in the one-device row: no feeds.
void BM_DataParallelMlpStep(benchmark::State& state, std::vector<Place> places, int64_t batch) {
  ProgramBuilder b;
  const Shape shape({batch, kWidth});
  if (absl::Status s =
          BuildMlpStep(b.CreatePersistableConstant("mlp_x", DataType::kFloat32, shape, 0),
                       b.CreatePersistableConstant("mlp_y", DataType::kFloat32, shape, 0), &b);
      !s.ok()) {
    return Fail(state, s);
  }
  DataParallelOptions o;
  o.places = places;
  o.executor = bench::WithFlags({});
  absl::StatusOr<std::unique_ptr<DataParallel>> dp =
      DataParallel::Create(b.main_program(), b.startup_program(), {}, {}, o);
  if (!dp.ok()) return Fail(state, dp.status());
  if (absl::Status s = (*dp)->Initialize(); !s.ok()) return Fail(state, s);
  for (int r = 0; r < (*dp)->local_ranks(); ++r) {
    for (uint64_t seed : {1, 2}) {
      const std::string name = seed == 1 ? "mlp_x" : "mlp_y";
      if (absl::Status s = FillRandom(name, seed + 2 * r, (*dp)->scope(r)); !s.ok()) {
        return Fail(state, s);
      }
    }
  }
  for (auto _ : state) {
    absl::StatusOr<std::vector<std::vector<Tensor>>> out = (*dp)->Step({});
    if (!out.ok()) return Fail(state, out.status());
  }
  state.counters["examples_per_s"] = benchmark::Counter(
      static_cast<double>(batch * places.size()), benchmark::Counter::kIsIterationInvariantRate);
}

void RegisterMlpBenchmarks() {
  const int64_t batch = MlpBatch();
  for (const Place& place : bench::BenchPlaces()) {
    const std::string p = place.is_host() ? "cpu" : place.type().name();
    const std::string suffix = p == "gpu" ? "" : absl::StrCat("_", p);
    for (const bool bf16 : {false, true}) {
      const std::string kind = absl::StrCat(suffix, bf16 ? "_bf16" : "");
      const std::optional<DataType> amp =
          bf16 ? std::optional<DataType>(DataType::kBFloat16) : std::nullopt;
      benchmark::RegisterBenchmark(absl::StrCat("mlp", kind, "/4x1024_b", batch, "_step").c_str(),
                                   BM_MlpStep, place, batch, amp)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
      benchmark::RegisterBenchmark(absl::StrCat("sgemm", kind, "/", batch, "x1024x1024").c_str(),
                                   BM_Sgemm, place, batch,
                                   bf16 ? DataType::kBFloat16 : DataType::kFloat32)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
    if (place.is_host()) continue;
    const int devices = DeviceRegistry::Global().DeviceCount(place.type());
    for (int n = 1; n <= std::min(devices, 2); ++n) {
      std::vector<Place> places;
      for (int i = 0; i < n; ++i) places.push_back(Place(place.type(), i));
      benchmark::RegisterBenchmark(
          absl::StrCat("data_parallel/mlp_", p, "x", n, "/4x1024_b", batch, "_per_replica").c_str(),
          BM_DataParallelMlpStep, places, batch)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
  }
}
TANDEM_BENCHMARK_REGISTRAR(RegisterMlpBenchmarks);

}  // namespace
}  // namespace tandem
