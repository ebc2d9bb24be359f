// The cost of ExecutorOptions::check_numerics: one MLP training step with
// the NaN/Inf check off and on, on cpu and on gpu:0 when there is one (other
// places are skipped).
//
//   tandem_benchmark --benchmark_filter=check_numerics
//   TANDEM_BENCH_PLACES=cpu tandem_benchmark --benchmark_filter=check_numerics_cpu
//
// Rows, per place (B is TANDEM_BENCH_NUMERICS_BATCH, default 512):
//   check_numerics_<place>/mlp4x512_b<B>/off           the default executor
//   check_numerics_<place>/mlp4x512_b<B>/off_in_order  in_order, no check
//   check_numerics_<place>/mlp4x512_b<B>/on            check_numerics
// check_numerics runs the ops one at a time in program order (as in_order
// does) and reads every floating output after its op, so "on" minus
// "off_in_order" is the check itself and "on" minus "off" what a user pays.
// The model: 4 fc layers of width 512 with bias, relu between them, loss
// mean((out - y)^2), SGD lr 0.01; x and y are persistable on the place, so
// a step copies nothing; every output is finite (the check never fires).
// Counter checked_values: floating output elements per step.
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "benchmarks/bench_util.h"
#include "framework/backward/optimizer.h"

namespace tandem {
namespace {

constexpr int64_t kWidth = 512;
constexpr int kLayers = 4;

enum class Mode { kOff, kOffInOrder, kOn };

ExecutorOptions OptionsFor(Mode mode) {
  ExecutorOptions options;
  options.in_order = mode == Mode::kOffInOrder;
  options.check_numerics = mode == Mode::kOn;
  return options;
}

// Floating elements the ops of `program` write per run (their declared shapes).
int64_t FloatingOutputElements(const Program& program) {
  int64_t n = 0;
  for (const OpDesc& op : program.block().ops()) {
    for (const auto& [arg, vars] : op.outputs) {
      for (const std::string& v : vars) {
        const VarDesc* d = program.block().FindVar(v);
        absl::StatusOr<int64_t> elements = d->shape.NumElements();
        if (IsFloating(d->dtype) && elements.ok()) n += *elements;
      }
    }
  }
  return n;
}

void BM_CheckNumericsStep(benchmark::State& state, Place place, int64_t batch, Mode mode) {
  bench::Prepared p(place, OptionsFor(mode));
  ProgramBuilder& b = p.builder;
  Var h =
      b.CreatePersistableConstant("numerics_x", DataType::kFloat32, Shape({batch, kWidth}), 0.5);
  Var y =
      b.CreatePersistableConstant("numerics_y", DataType::kFloat32, Shape({batch, kWidth}), 0.25);
  for (int layer = 0; layer < kLayers; ++layer) {
    h = b.Fc(h, kWidth, /*in_num_col_dims=*/1, /*with_bias=*/true,
             absl::StrCat("numerics_fc", layer));
    if (layer + 1 < kLayers) h = b.Relu(h);
  }
  Var loss = b.Mean(b.SquareErrorCost(h, y));
  SGD sgd(/*learning_rate=*/0.01);
  if (absl::Status s = sgd.Minimize(&b, loss); !s.ok()) return bench::Fail(state, s);
  if (!b.status().ok()) return bench::Fail(state, b.status());
  if (absl::Status s = p.exe.Run(b.startup_program(), &p.scope).status(); !s.ok()) {
    return bench::Fail(state, s);
  }
  auto plan = p.exe.Prepare(b.main_program(), p.scope, {}, {loss.name});
  if (!plan.ok()) return bench::Fail(state, plan.status());
  RunStats stats;
  for (auto _ : state) {
    absl::StatusOr<std::vector<Tensor>> r = p.exe.Run(plan->get(), &p.scope, {}, &stats);
    if (!r.ok()) return bench::Fail(state, r.status());
  }
  state.counters["checked_values"] =
      static_cast<double>(mode == Mode::kOn ? FloatingOutputElements(b.main_program()) : 0);
  bench::ReportCopies(state, stats);
}

void RegisterCheckNumericsBenchmarks() {
  const int64_t batch = bench::EnvInt("TANDEM_BENCH_NUMERICS_BATCH", 512);
  for (const Place& place : bench::BenchPlaces()) {
    if (!place.is_host() && place.type() != DeviceType::GPU()) continue;
    const std::string name = absl::StrCat("check_numerics_", place.is_host() ? "cpu" : "gpu",
                                          "/mlp4x", kWidth, "_b", batch, "/");
    for (const auto& [suffix, mode] : {std::pair<const char*, Mode>{"off", Mode::kOff},
                                       {"off_in_order", Mode::kOffInOrder},
                                       {"on", Mode::kOn}}) {
      benchmark::RegisterBenchmark((name + suffix).c_str(), BM_CheckNumericsStep, place, batch,
                                   mode)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
  }
}
TANDEM_BENCHMARK_REGISTRAR(RegisterCheckNumericsBenchmarks);

}  // namespace
}  // namespace tandem
