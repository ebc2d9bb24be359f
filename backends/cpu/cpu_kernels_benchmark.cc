// Throughput of cpu kernels through RunOpEager (so per-op overhead, output
// allocation included, is counted; it is negligible beyond tiny sizes).
// Times are wall-clock: the kernels run on several threads.
//
//   bazel run //backends/cpu:cpu_kernels_benchmark -- --benchmark_filter=Matmul
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "framework/kernel/eager.h"
#include "framework/tensor/selected_rows.h"
#include "framework/tensor/tensor.h"
#include "framework/types/float16.h"

namespace tandem {
namespace {

template <typename T>
Variable Filled(const Shape& shape) {
  return Variable(Tensor::FromVector<T>(shape, std::vector<T>(shape.num_elements(), T(1))));
}

// An adam op with its in-place outputs bound, not the optional 16-bit
// working copy (ParamCastOut).
OpDesc AdamOp() {
  OpDesc op;
  op.type = "adam";
  for (const char* arg : {"ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut"}) {
    op.outputs[arg] = {std::string(arg) + "_0"};
  }
  return op;
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

// elementwise_add_grad of [rows, 768] + [rows, 768] (a residual add, of
// GPT's bfloat16 activations too): both gradients are Out@GRAD itself;
// bytes read and written per second.
template <typename T>
void BM_AddGradSameShape(benchmark::State& state) {
  const int64_t rows = state.range(0);
  OpDesc op;
  op.type = "elementwise_add_grad";
  RunOrSkip(state, op,
            {{"X", {Filled<T>({rows, 768})}},
             {"Y", {Filled<T>({rows, 768})}},
             {"Out@GRAD", {Filled<T>({rows, 768})}}});
  state.SetBytesProcessed(state.iterations() * 3 * rows * 768 * sizeof(T));
}
BENCHMARK_TEMPLATE(BM_AddGradSameShape, float)->Arg(64)->Arg(4096)->Arg(16384)->UseRealTime();
BENCHMARK_TEMPLATE(BM_AddGradSameShape, bfloat16)->Arg(4096)->Arg(16384)->UseRealTime();

// The host ops of a 16-bit GPT layer that compute through float32 scratch
// (backends/common/low_precision.h), on [rows, 768] bfloat16 activations:
// the bias add ([rows, 768] + [768]), gelu and its gradient; bytes of the
// 16-bit tensors read and written per second.
void BM_Bf16BiasAdd(benchmark::State& state) {
  const int64_t rows = state.range(0);
  OpDesc op;
  op.type = "elementwise_add";
  RunOrSkip(state, op, {{"X", {Filled<bfloat16>({rows, 768})}}, {"Y", {Filled<bfloat16>({768})}}});
  state.SetBytesProcessed(state.iterations() * 2 * rows * 768 * sizeof(bfloat16));
}
BENCHMARK(BM_Bf16BiasAdd)->Arg(64)->Arg(4096)->UseRealTime();

void BM_Bf16Gelu(benchmark::State& state) {
  const int64_t rows = state.range(0);
  OpDesc op;
  op.type = "gelu";
  RunOrSkip(state, op, {{"X", {Filled<bfloat16>({rows, 768})}}});
  state.SetBytesProcessed(state.iterations() * 2 * rows * 768 * sizeof(bfloat16));
}
BENCHMARK(BM_Bf16Gelu)->Arg(64)->Arg(4096)->UseRealTime();

void BM_Bf16GeluGrad(benchmark::State& state) {
  const int64_t rows = state.range(0);
  OpDesc op;
  op.type = "gelu_grad";
  RunOrSkip(
      state, op,
      {{"X", {Filled<bfloat16>({rows, 768})}}, {"Out@GRAD", {Filled<bfloat16>({rows, 768})}}});
  state.SetBytesProcessed(state.iterations() * 3 * rows * 768 * sizeof(bfloat16));
}
BENCHMARK(BM_Bf16GeluGrad)->Arg(64)->Arg(4096)->UseRealTime();

// self_attention of the GPT example's `--size=small` layer (batch 8, seq
// 256, 6 heads of 64 columns, causal) in float32, forward (Arg 0) or its
// gradient (Arg 1): the host's share of a CPU GPT step.
void BM_SelfAttention(benchmark::State& state) {
  const int64_t batch = 8, seq = 256, width = 384;
  OpDesc op;
  op.type = "self_attention";
  op.attrs = {{"num_heads", int64_t{6}}, {"causal", true}};
  const Variable qkv = Filled<float>({batch, seq, 3 * width});
  if (state.range(0) == 0) {
    RunOrSkip(state, op, {{"QKV", {qkv}}});
    return;
  }
  absl::StatusOr<EagerOutputs> fwd = RunOpEager(op, CPUPlace(), {{"QKV", {qkv}}});
  if (!fwd.ok()) {
    state.SkipWithError(fwd.status().ToString().c_str());
    return;
  }
  OpDesc grad = op;
  grad.type = "self_attention_grad";
  RunOrSkip(state, grad,
            {{"QKV", {qkv}},
             {"Out", {fwd->at("Out")[0]}},
             {"Lse", {fwd->at("Lse")[0]}},
             {"Out@GRAD", {Filled<float>({batch, seq, width})}}});
}
BENCHMARK(BM_SelfAttention)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

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
BENCHMARK_TEMPLATE(BM_Matmul, bfloat16)->Arg(64)->Arg(256)->Arg(1024)->UseRealTime();

// A batch-64 layer's product x[64, k] * W[k, n] in float32 (the
// fashion_mnist MLP's layers), where the thread count matters most:
// GFLOP/s. OMP_NUM_THREADS=N caps the team, to compare.
void BM_MatmulBatch64(benchmark::State& state) {
  const int64_t k = state.range(0), n = state.range(1);
  OpDesc op;
  op.type = "matmul";
  RunOrSkip(state, op, {{"X", {Filled<float>({64, k})}}, {"Y", {Filled<float>({k, n})}}});
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * 64 * k * n * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MatmulBatch64)->Args({784, 256})->Args({256, 128})->Args({128, 10})->UseRealTime();

// uniform_random of n float32 values (the embedding table's initialiser:
// 1.5 G values for 10M x 150).
void BM_UniformRandom(benchmark::State& state) {
  const int64_t n = state.range(0);
  OpDesc op;
  op.type = "uniform_random";
  op.attrs = {{"shape", std::vector<int64_t>{n}}, {"seed", int64_t{7}}};
  RunOrSkip(state, op, {});
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_UniformRandom)->Arg(1 << 16)->Arg(1 << 26)->UseRealTime();

// A [rows, 150] float32 table made by uniform_random (no host staging).
Variable Table(int64_t rows) {
  OpDesc op;
  op.type = "uniform_random";
  op.attrs = {{"shape", std::vector<int64_t>{rows, 150}}, {"min", -0.05}, {"max", 0.05}};
  absl::StatusOr<EagerOutputs> out = RunOpEager(op, CPUPlace(), {});
  CHECK(out.ok()) << out.status();
  return out->at("Out")[0];
}

// `batch` ids into `rows` rows: distinct pseudo-random ones (Arg 1 = 0) or
// all the same row (Arg 1 = 1, the embedding-offload workload's fill_constant ids).
std::vector<int64_t> Ids(int64_t rows, int64_t batch, bool same) {
  std::vector<int64_t> ids(batch);
  for (int64_t i = 0; i < batch; ++i) ids[i] = same ? 128 : (i * 2654435761) % rows;
  return ids;
}

// sgd of a [rows, 150] table with a SelectedRows gradient of `batch` rows
// (the embedding workload on the CPU: 10M rows, batch 4096): bytes of
// updated rows read and written per second.
void BM_SgdSparse(benchmark::State& state) {
  const int64_t rows = state.range(0), batch = 4096, dim = 150;
  OpDesc op;
  op.type = "sgd";
  const Variable grad(SelectedRows(rows, Ids(rows, batch, state.range(1) != 0),
                                   Filled<float>({batch, dim}).tensor()));
  RunOrSkip(state, op,
            {{"Param", {Table(rows)}},
             {"Grad", {grad}},
             {"LearningRate", {Variable(Tensor::FromVector<float>({1}, {1e-3f}))}}});
  state.SetBytesProcessed(state.iterations() * 3 * batch * dim * sizeof(float));
}
BENCHMARK(BM_SgdSparse)->Args({10'000'000, 0})->Args({10'000'000, 1})->UseRealTime();

// lookup_table of `batch` rows of a [rows, 150] table, and its sparse
// gradient.
void BM_LookupTable(benchmark::State& state) {
  const int64_t rows = state.range(0), batch = 4096;
  OpDesc op;
  op.type = "lookup_table";
  RunOrSkip(state, op,
            {{"Ids", {Variable(Tensor::FromVector<int64_t>({batch}, Ids(rows, batch, false)))}},
             {"W", {Table(rows)}}});
  state.SetBytesProcessed(state.iterations() * 2 * batch * 150 * sizeof(float));
}
BENCHMARK(BM_LookupTable)->Arg(10'000'000)->UseRealTime();

// adam of a [rows, width] parameter: dense (Arg 2 = 0: every element, e.g.
// fashion_mnist's first layer, 784 x 256) or with a SelectedRows gradient
// of Arg 2 distinct pseudo-random rows (the ctr model's tables: 1M x 16,
// batch 512). Items: elements updated per second.
void BM_Adam(benchmark::State& state) {
  const int64_t rows = state.range(0), width = state.range(1), batch = state.range(2);
  const OpDesc op = AdamOp();
  const Variable grad = batch == 0 ? Filled<float>({rows, width})
                                   : Variable(SelectedRows(rows, Ids(rows, batch, false),
                                                           Filled<float>({batch, width}).tensor()));
  RunOrSkip(state, op,
            {{"Param", {Filled<float>({rows, width})}},
             {"Grad", {grad}},
             {"Moment1", {Filled<float>({rows, width})}},
             {"Moment2", {Filled<float>({rows, width})}},
             {"Beta1Pow", {Variable(Tensor::FromVector<float>({1}, {0.9f}))}},
             {"Beta2Pow", {Variable(Tensor::FromVector<float>({1}, {0.999f}))}},
             {"LearningRate", {Variable(Tensor::FromVector<float>({1}, {1e-3f}))}}});
  state.SetItemsProcessed(state.iterations() * (batch == 0 ? rows : batch) * width);
}
BENCHMARK(BM_Adam)->Args({784, 256, 0})->Args({1'000'000, 16, 512})->UseRealTime();

// The host side of the GPT example's optimizer offload, per parameter
// element, against the host's memory bandwidth (BM_HostMemcpy: 8 bytes an
// element, read and written): adam of n dense float32 elements with the
// clip factor (GradScale) bound, 28 bytes an element (Param, Grad and the
// two moments read; Param and the moments written); the cast of a weight to
// bfloat16 (6 bytes) and of its bfloat16 gradient back (6 bytes);
// squared_l2_norm (4 bytes, 2 of bfloat16). Arg: n (111,719 x 768 = 85.8 M, GPT-2 shape's
// parameter count over bytes, as the example has it).
void BM_HostMemcpy(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<float> from(n, 1.0f), to(n);
  for (auto _ : state) {
    std::memcpy(to.data(), from.data(), n * sizeof(float));
    benchmark::DoNotOptimize(to.data());
  }
  state.SetBytesProcessed(state.iterations() * 2 * n * sizeof(float));
}

void BM_AdamClipped(benchmark::State& state) {
  const int64_t n = state.range(0);
  const OpDesc op = AdamOp();
  RunOrSkip(state, op,
            {{"Param", {Filled<float>({n})}},
             {"Grad", {Filled<float>({n})}},
             {"Moment1", {Filled<float>({n})}},
             {"Moment2", {Filled<float>({n})}},
             {"Beta1Pow", {Variable(Tensor::FromVector<float>({1}, {0.9f}))}},
             {"Beta2Pow", {Variable(Tensor::FromVector<float>({1}, {0.999f}))}},
             {"LearningRate", {Variable(Tensor::FromVector<float>({1}, {1e-3f}))}},
             {"GradScale", {Variable(Tensor::FromVector<float>({1}, {0.5f}))}}});
  state.SetBytesProcessed(state.iterations() * 28 * n);
}

template <DataType kFrom, DataType kTo, typename From>
void BM_Cast(benchmark::State& state) {
  const int64_t n = state.range(0);
  OpDesc op;
  op.type = "cast";
  op.attrs["out_dtype"] = kTo;
  RunOrSkip(state, op, {{"X", {Filled<From>({n})}}});
  state.SetBytesProcessed(state.iterations() * n * (SizeOf(kFrom) + SizeOf(kTo)));
}

// float32, or bfloat16 as the offloaded GPT's gradients come down.
template <typename T>
void BM_SquaredL2Norm(benchmark::State& state) {
  const int64_t n = state.range(0);
  OpDesc op;
  op.type = "squared_l2_norm";
  RunOrSkip(state, op, {{"X", {Filled<T>({n})}}});
  state.SetBytesProcessed(state.iterations() * n * sizeof(T));
}

constexpr int64_t kGptParameters = 111'719 * 768;
BENCHMARK(BM_HostMemcpy)->Arg(kGptParameters)->UseRealTime();
BENCHMARK(BM_AdamClipped)->Arg(kGptParameters)->UseRealTime();
BENCHMARK(BM_Cast<DataType::kFloat32, DataType::kBFloat16, float>)
    ->Arg(kGptParameters)
    ->UseRealTime();
BENCHMARK(BM_Cast<DataType::kBFloat16, DataType::kFloat32, bfloat16>)
    ->Arg(kGptParameters)
    ->UseRealTime();
BENCHMARK(BM_SquaredL2Norm<float>)->Arg(kGptParameters)->UseRealTime();
BENCHMARK(BM_SquaredL2Norm<bfloat16>)->Arg(kGptParameters)->UseRealTime();

}  // namespace
}  // namespace tandem
