// Throughput of cpu kernels through RunOpEager (so per-op overhead, output
// allocation included, is counted; it is negligible beyond tiny sizes).
// Times are wall-clock: the kernels run on several threads.
//
//   bazel run //backends/cpu:cpu_kernels_benchmark -- --benchmark_filter=Matmul
#include <cstdint>
#include <vector>

#include "benchmark/benchmark.h"
#include "framework/runtime/eager.h"
#include "framework/tensor/tensor.h"

namespace tandem {
namespace {

template <typename T>
Variable Filled(const Shape& shape) {
  return Variable(Tensor::FromVector<T>(shape, std::vector<T>(shape.num_elements(), T(1))));
}

void RunOrSkip(benchmark::State& state, const OpDesc& op, const EagerInputs& inputs) {
  for (auto _ : state) {
    absl::StatusOr<EagerOutputs> out = RunOpEager(op, CPUPlace(), inputs);
    if (!out.ok()) {
      state.SkipWithError(out.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(out);
  }
}

// elementwise_add of [n] + [n] float32: bytes moved per second.
void BM_AddSameShape(benchmark::State& state) {
  const int64_t n = state.range(0);
  OpDesc op;
  op.type = "elementwise_add";
  RunOrSkip(state, op, {{"X", {Filled<float>({n})}}, {"Y", {Filled<float>({n})}}});
  state.SetBytesProcessed(state.iterations() * 3 * n * sizeof(float));
}
BENCHMARK(BM_AddSameShape)->Arg(1)->Arg(1 << 12)->Arg(1 << 16)->Arg(1 << 22)->UseRealTime();

// elementwise_add_grad of [rows, 512] + [512]: Y@GRAD is a column sum.
void BM_AddGradRowBroadcast(benchmark::State& state) {
  const int64_t rows = state.range(0);
  OpDesc op;
  op.type = "elementwise_add_grad";
  RunOrSkip(state, op,
            {{"X", {Filled<float>({rows, 512})}},
             {"Y", {Filled<float>({512})}},
             {"Out@GRAD", {Filled<float>({rows, 512})}}});
  state.SetBytesProcessed(state.iterations() * 2 * rows * 512 * sizeof(float));
}
BENCHMARK(BM_AddGradRowBroadcast)->Arg(64)->Arg(4096)->UseRealTime();

// Square matmul of size n: FLOP/s reported as items (2 n^3 per op).
template <typename T>
void BM_Matmul(benchmark::State& state) {
  const int64_t n = state.range(0);
  OpDesc op;
  op.type = "matmul";
  RunOrSkip(state, op, {{"X", {Filled<T>({n, n})}}, {"Y", {Filled<T>({n, n})}}});
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * n * n * n * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK_TEMPLATE(BM_Matmul, float)->Arg(64)->Arg(256)->Arg(1024)->UseRealTime();
BENCHMARK_TEMPLATE(BM_Matmul, double)->Arg(64)->Arg(256)->Arg(1024)->UseRealTime();

}  // namespace
}  // namespace tandem
