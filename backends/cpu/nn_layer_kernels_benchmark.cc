// conv2d and pool2d on the cpu: the registered kernels (oneDNN for float32
// conv2d) against the portable im2col + GEMM / window loops of
// backends/common run with CpuPolicy, on the layer shapes of a small CNN.
// Each benchmark keeps one kernel instance, as a plan does, so cached
// oneDNN primitives are reused. Times are wall-clock (several threads).
//
//   OMP_NUM_THREADS=1 bazel run -c opt //backends/cpu:nn_layer_kernels_benchmark
//
// Results on the development machine (one thread; registered / portable):
// conv2d 0.60 / 3.14, 5.07 / 11.5 and 10.9 / 14.5 ms; conv2d_grad 7.6 /
// 2.2 (both gradients of the 1-channel layer), 0.53 / 1.29 (its filter
// gradient alone), 10.8 / 21.8 and 20.5 / 32.9 ms; max pool 0.27 / 1.07,
// its gradient 1.06 / 3.20, avg gradient 0.47 / 4.06 ms.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/common/nn_layer_kernels.h"
#include "backends/cpu/cpu_policy.h"
#include "benchmark/benchmark.h"
#include "framework/device/device_registry.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/op/op_schema.h"

namespace tandem {
namespace {

Variable Filled(const Shape& shape) {
  std::vector<float> v(shape.num_elements());
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 17) * 0.125f - 1.f;
  return Variable(Tensor::FromVector<float>(shape, v));
}

// Runs `kernel` (the registered one if null) on `op` with `inputs` for every
// benchmark iteration; outputs are the op's declared outputs.
void Run(benchmark::State& state, OpDesc op, std::map<std::string, std::vector<Variable>> inputs,
         std::unique_ptr<OpKernel> kernel) {
  const OpSchema* schema = OpRegistry::Global().Find(op.type).value();
  for (auto& [arg, vars] : inputs) op.inputs[arg] = {arg};
  if (op.outputs.empty()) {
    for (const auto& out : schema->outputs()) op.outputs[out.name] = {out.name};
  }
  absl::Status s = schema->Validate(&op);
  const KernelRegistration* reg =
      KernelRegistry::Global()
          .FindForOp(op, DeviceType::CPU(), [](const std::string&) { return DataType::kFloat32; })
          .value();
  if (kernel == nullptr) kernel = reg->Create(op).value();
  if (s.ok()) s = kernel->Init(op);
  Device* device = DeviceRegistry::Global().GetDevice(CPUPlace()).value();
  std::map<std::string, std::vector<Variable>> outputs;
  ArgVars in, out;
  for (auto& [arg, vars] : inputs) in.emplace_back(arg, std::vector<Variable*>{&vars[0]});
  for (const auto& [arg, names] : op.outputs) {
    outputs[arg].resize(1);
    out.emplace_back(arg, std::vector<Variable*>{&outputs[arg][0]});
  }
  KernelContext ctx(op, reg->def, device, device->compute_stream(), in, out);
  for (auto _ : state) {
    if (s.ok()) s = kernel->Compute(&ctx);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
}

struct ConvShape {
  Shape input, filter;
  int64_t pad;
};
// A Fashion-MNIST CNN's two layers, then a wider 3x3 layer.
const ConvShape kConvShapes[] = {
    {Shape({64, 1, 28, 28}), Shape({32, 1, 5, 5}), 2},
    {Shape({64, 32, 14, 14}), Shape({64, 32, 5, 5}), 2},
    {Shape({32, 64, 28, 28}), Shape({64, 64, 3, 3}), 1},
};

OpDesc ConvOp(const std::string& type, int64_t pad) {
  OpDesc op;
  op.type = type;
  op.attrs["paddings"] = std::vector<int64_t>{pad, pad};
  return op;
}

void SetFlops(benchmark::State& state, const ConvShape& c, int passes) {
  const int64_t out_plane = c.input.dim(2) * c.input.dim(3);  // stride 1, same padding
  const double flops = 2.0 * c.input.dim(0) * out_plane * c.filter.num_elements() * passes;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

// range(0): shape index; range(1): 1 = registered (oneDNN), 0 = portable.
void BM_Conv2D(benchmark::State& state) {
  const ConvShape& c = kConvShapes[state.range(0)];
  Run(state, ConvOp("conv2d", c.pad),
      {{"Input", {Filled(c.input)}}, {"Filter", {Filled(c.filter)}}},
      state.range(1) ? nullptr : std::make_unique<Conv2DKernel<CpuPolicy>>());
  SetFlops(state, c, 1);
}
BENCHMARK(BM_Conv2D)
    ->ArgsProduct({{0, 1, 2}, {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// range(2): 1 = both gradients, 0 = Filter@GRAD only (a first layer's case).
void BM_Conv2DGrad(benchmark::State& state) {
  const ConvShape& c = kConvShapes[state.range(0)];
  const Shape out({c.input.dim(0), c.filter.dim(0), c.input.dim(2), c.input.dim(3)});
  OpDesc op = ConvOp("conv2d_grad", c.pad);
  if (state.range(2) == 0) op.outputs["Filter@GRAD"] = {"Filter@GRAD"};
  Run(state, op,
      {{"Input", {Filled(c.input)}},
       {"Filter", {Filled(c.filter)}},
       {"Output@GRAD", {Filled(out)}}},
      state.range(1) ? nullptr : std::make_unique<Conv2DGradKernel<CpuPolicy>>());
  SetFlops(state, c, 1 + state.range(2));
}
BENCHMARK(BM_Conv2DGrad)
    ->ArgsProduct({{0, 1, 2}, {0, 1}, {1, 0}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

OpDesc PoolOp(const std::string& type, bool max) {
  OpDesc op;
  op.type = type;
  op.attrs = {{"pooling_type", std::string(max ? "max" : "avg")},
              {"ksize", std::vector<int64_t>{2, 2}},
              {"strides", std::vector<int64_t>{2, 2}}};
  return op;
}

const Shape kPoolInput({64, 32, 28, 28});

// range(0): 1 max, 0 avg; range(1): 1 registered (oneDNN), 0 portable.
void BM_Pool2D(benchmark::State& state) {
  Run(state, PoolOp("pool2d", state.range(0)), {{"X", {Filled(kPoolInput)}}},
      state.range(1) ? nullptr : std::make_unique<Pool2DKernel<CpuPolicy>>());
  state.SetBytesProcessed(state.iterations() * kPoolInput.num_elements() * 5 / 4 * 4);
}
BENCHMARK(BM_Pool2D)->ArgsProduct({{1, 0}, {0, 1}})->UseRealTime();

void BM_Pool2DGrad(benchmark::State& state) {
  const Shape out({64, 32, 14, 14});
  Run(state, PoolOp("pool2d_grad", state.range(0)),
      {{"X", {Filled(kPoolInput)}}, {"Out", {Filled(out)}}, {"Out@GRAD", {Filled(out)}}},
      state.range(1) ? nullptr : std::make_unique<Pool2DGradKernel<CpuPolicy>>());
  state.SetBytesProcessed(state.iterations() * kPoolInput.num_elements() * 6 / 4 * 4);
}
BENCHMARK(BM_Pool2DGrad)->ArgsProduct({{1, 0}, {0, 1}})->UseRealTime();

}  // namespace
}  // namespace tandem
