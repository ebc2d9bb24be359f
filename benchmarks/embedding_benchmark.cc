// The CPU sparse-embedding rows of tandem_benchmark (the goal: CPU sparse
// embedding lookup + SGD, 150-d, 16 cores >= 40 M rows/s), all on a
// [TANDEM_BENCH_ROWS (default 1000000), 150] float32 table on the CPU with
// 65536 random ids per iteration unless named otherwise, reported as
// rows_per_s (ids per second):
//
//   embedding_cpu/sparse_lookup_sgd_150d  the goal's kernels alone, run by
//       the Executor: lookup_table (the gather), lookup_table_grad with
//       is_sparse (the SelectedRows gradient) of a gradient fed as data, and
//       sgd with that sparse gradient (the row update).
//   embedding_cpu/sparse_lookup_sgd_150d_b4096  the same with 4096 ids, the
//       batch of workload 1 (examples/embedding_offload --batch_size=4096
//       --is_sparse, whose table has 10M rows: TANDEM_BENCH_ROWS=10000000),
//       where each kernel's fork and join weigh more.
//   embedding_cpu/full_step_150d  a whole training step of the embedding
//       workload on the CPU: the above plus l2_normalize, square_error_cost,
//       mean and their gradients.
//
//   bazel run -c opt //benchmarks:tandem_benchmark -- --benchmark_filter=embedding_cpu
//
// Threads: OpenMP's (OMP_NUM_THREADS; default every CPU of the process).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "benchmarks/bench_util.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/program/program.h"
#include "framework/runtime/executor.h"
#include "models/embedding/embedding_model.h"

namespace tandem {
namespace {

using bench::EnvInt;
using bench::Fail;
using bench::Prepared;

constexpr int64_t kBatch = 65536;
constexpr int64_t kDim = 150;

// `batch` ids drawn uniformly from [0, rows) (about 3% repeats for 65536
// ids of 1M rows).
Tensor RandomIds(int64_t rows, int64_t batch, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Tensor ids = *Tensor::Allocate(CpuAllocator::Default(), DataType::kInt64, {batch});
  for (int64_t j = 0; j < batch; ++j) ids.data<int64_t>()[j] = rng() % rows;
  return ids;
}

// A [batch, kDim] gradient of values uniform in [-1, 1).
Tensor RandomGrad(int64_t batch, uint64_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  Tensor g = *Tensor::Allocate(CpuAllocator::Default(), DataType::kFloat32, {batch, kDim});
  for (int64_t i = 0; i < g.NumElements(); ++i) g.data<float>()[i] = u(rng);
  return g;
}

// Runs `plan` once per benchmark iteration and reports rows_per_s: `batch`
// ids per second of wall time (a rate counter would divide by the main
// thread's CPU time, which misses time spent waiting for other threads).
void RunAndReportRows(benchmark::State& state, Prepared& p, Plan* plan, const FeedMap& feeds,
                      int64_t batch) {
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    absl::StatusOr<std::vector<Tensor>> r = p.exe.Run(plan, &p.scope, feeds);
    if (!r.ok()) return Fail(state, r.status());
  }
  const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - start;
  state.counters["rows_per_s"] =
      static_cast<double>(batch * state.iterations()) / std::max(wall.count(), 1e-9);
}

// embedding_cpu/sparse_lookup_sgd_150d(_b4096) (see the header comment),
// `batch` ids. The program: emb = lookup_table(ids, emb_w); emb_w@GRAD =
// lookup_table_grad(ids, emb_w, emb_grad) (is_sparse); sgd(emb_w,
// emb_w@GRAD, lr 0.001). ids and emb_grad are fed; the same ones every
// iteration, so every iteration does the same work.
void BM_SparseLookupSgd(benchmark::State& state, int64_t batch) {
  const int64_t rows = EnvInt("TANDEM_BENCH_ROWS", 1000000);
  Prepared p(CPUPlace());
  ProgramBuilder& b = p.builder;
  const Var ids = b.Data("ids", DataType::kInt64, Shape({batch}));
  const Var dout = b.Data("emb_grad", DataType::kFloat32, Shape({batch, kDim}));
  const Var table = b.CreateParameter("emb_w", DataType::kFloat32, Shape({rows, kDim}),
                                      Initializer::Uniform(-0.05, 0.05, /*seed=*/7));
  const Var lr = b.CreatePersistableConstant("lr", DataType::kFloat32, Shape({1}), 0.001);
  b.LookupTable(ids, table, /*is_sparse=*/true);
  const AttrMap attrs = {{"is_sparse", true}, {"padding_idx", int64_t{-1}}};
  const Var grad =
      b.AppendOp("lookup_table_grad", {{"Ids", {ids}}, {"W", {table}}, {"Out@GRAD", {dout}}}, attrs,
                 {"W@GRAD"}, {{"W@GRAD", "emb_w@GRAD"}})["W@GRAD"][0];
  if (!b.status().ok()) return Fail(state, b.status());
  b.main_program().block().FindVar(grad.name)->kind = VarKind::kSelectedRows;
  // Appended directly, as optimizers do: ParamOut rebinds the parameter.
  OpDesc sgd;
  sgd.type = "sgd";
  sgd.inputs = {{"Param", {table.name}}, {"Grad", {grad.name}}, {"LearningRate", {lr.name}}};
  sgd.outputs = {{"ParamOut", {table.name}}};
  sgd.role = OpRole::kOptimize;
  b.main_program().block().AppendOp(sgd);
  if (absl::Status s = p.exe.Run(b.startup_program(), &p.scope).status(); !s.ok()) {
    return Fail(state, s);
  }
  auto plan = p.exe.Prepare(b.main_program(), p.scope, {ids.name, dout.name}, {});
  if (!plan.ok()) return Fail(state, plan.status());
  const FeedMap feeds = {{ids.name, RandomIds(rows, batch, 3)}, {dout.name, RandomGrad(batch, 4)}};
  RunAndReportRows(state, p, plan->get(), feeds, batch);
}

// embedding_cpu/full_step_150d: the embedding workload's whole training
// step (BuildEmbeddingModel, sparse gradient) with every op on the CPU.
void BM_FullStep(benchmark::State& state) {
  Prepared p(CPUPlace());
  EmbeddingConfig config;
  config.rows = EnvInt("TANDEM_BENCH_ROWS", 1000000);
  config.batch = kBatch;
  config.table_on_cpu = true;
  config.is_sparse = true;
  EmbeddingModel m;
  auto plan = bench::PrepareEmbeddingWorkload(config, &p, &m);
  if (!plan.ok()) return Fail(state, plan.status());
  const FeedMap feeds = {{m.ids.name, RandomIds(config.rows, kBatch, 2)}};
  RunAndReportRows(state, p, plan->get(), feeds, kBatch);
}

void RegisterEmbeddingBenchmarks() {
  benchmark::RegisterBenchmark("embedding_cpu/sparse_lookup_sgd_150d", BM_SparseLookupSgd, kBatch)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("embedding_cpu/sparse_lookup_sgd_150d_b4096", BM_SparseLookupSgd,
                               int64_t{4096})
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("embedding_cpu/full_step_150d", BM_FullStep)
      ->Unit(benchmark::kMillisecond);
}
TANDEM_BENCHMARK_REGISTRAR(RegisterEmbeddingBenchmarks);

}  // namespace
}  // namespace tandem
