// How fast Prepare plans a large program: a 10,000-op training program (a
// deep MLP: fc + relu per layer, backward, SGD) placed by the rules, by the
// auto pass with the analytical cost model and with a warm (measured) cache,
// with a budget that holds every parameter and with one that forces half of
// them onto the CPU; and the memory estimate alone. The goal is
// planning within 1 s at 10,000 ops.
//
//   bazel run -c opt //benchmarks:planning_benchmark
//   TANDEM_BENCH_PLANNING_LAYERS=100 planning_benchmark   (a smaller program)
#include <cstdlib>
#include <optional>
#include <string>

#include "benchmark/benchmark.h"
#include "framework/autoplace/auto_placement.h"
#include "framework/backward/optimizer.h"
#include "framework/device/device_registry.h"
#include "framework/runtime/executor.h"
#include "glog/logging.h"

namespace tandem {
namespace {

// sim:0 (registered by the sim backend's static initialisers, so looked up late).
Place Sim0() { return Place(*DeviceType::FromName("sim"), 0); }

int64_t Layers() {
  const char* env = std::getenv("TANDEM_BENCH_PLANNING_LAYERS");
  return env == nullptr ? 1667 : std::max<int64_t>(1, std::atoll(env));  // 10,005 ops
}

// fc (matmul + bias) and relu per layer; with their gradients, gradient sums
// and SGD updates about 10 ops per layer.
struct DeepMlp {
  ProgramBuilder builder;
  std::string loss;
  int ops = 0;
  int64_t parameter_bytes = 0;

  explicit DeepMlp(int64_t layers) {
    Var x = builder.Data("x", DataType::kFloat32, Shape({32, 64}));
    for (int64_t l = 0; l < layers; ++l) x = builder.Relu(builder.Fc(x, 64));
    Var mean = builder.Mean(x);
    loss = mean.name;
    const absl::Status minimized = SGD(0.01).Minimize(&builder, mean);
    CHECK(minimized.ok()) << minimized;
    ops = static_cast<int>(builder.main_program().block().ops().size());
    parameter_bytes = layers * (64 * 64 + 64) * 4;
  }
};

// Prepares the MLP's plan per iteration; `auto_placer` null: the rules alone.
void Plan(benchmark::State& state, std::optional<AutoPlacerOptions> auto_placer,
          int64_t budget_percent) {
  DeepMlp mlp(Layers());
  ExecutorOptions options;
  if (auto_placer.has_value()) {
    if (budget_percent > 0) auto_placer->budget_bytes = mlp.parameter_bytes * budget_percent / 100;
    options.placement_planner = MakeAutoPlacer(*auto_placer);
  }
  Executor exe(Sim0(), options);
  Scope scope;
  if (absl::Status s = exe.Run(mlp.builder.startup_program(), &scope).status(); !s.ok()) {
    state.SkipWithError(std::string(s.message()).c_str());
    return;
  }
  // Untimed: the cost model measures what the timed runs then find cached.
  if (absl::Status s = exe.Prepare(mlp.builder.main_program(), scope, {"x"}, {mlp.loss}).status();
      !s.ok()) {
    state.SkipWithError(std::string(s.message()).c_str());
    return;
  }
  int on_cpu = 0;
  for (auto _ : state) {
    absl::StatusOr<std::unique_ptr<tandem::Plan>> plan =
        exe.Prepare(mlp.builder.main_program(), scope, {"x"}, {mlp.loss});
    if (!plan.ok()) {
      state.SkipWithError(std::string(plan.status().message()).c_str());
      return;
    }
    on_cpu = 0;
    for (const Place& p : (*plan)->placed().places) on_cpu += p.is_host();
  }
  state.counters["ops"] = mlp.ops;
  state.counters["ops_on_cpu"] = on_cpu;
}

AutoPlacerOptions Auto(bool measure) {
  AutoPlacerOptions o;
  o.measure_costs = measure;
  o.cost_cache_dir = "";  // measured costs stay in the process (warm after the first plan)
  return o;
}

void BM_PlaceByRules(benchmark::State& state) { Plan(state, std::nullopt, 0); }
void BM_AutoAnalytical(benchmark::State& state) { Plan(state, Auto(false), 0); }
void BM_AutoMeasuredWarm(benchmark::State& state) { Plan(state, Auto(true), 0); }
void BM_AutoAnalyticalHalfBudget(benchmark::State& state) { Plan(state, Auto(false), 50); }

BENCHMARK(BM_PlaceByRules)->Name("planning/10000_ops/rules")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AutoAnalytical)
    ->Name("planning/10000_ops/auto_analytical")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AutoMeasuredWarm)
    ->Name("planning/10000_ops/auto_measured_warm_cache")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AutoAnalyticalHalfBudget)
    ->Name("planning/10000_ops/auto_analytical_half_the_parameters_fit")
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tandem

BENCHMARK_MAIN();
