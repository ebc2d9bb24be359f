// The sim kernels: registered when //backends/sim is linked, conformant
// (backends/common/math_kernel_conformance.h, kernel_conformance.h) on sim:0
// and sim:1, equal to the cpu kernels, reading only sim memory, and under
// the memory limit.
#include <map>
#include <string>
#include <vector>

#include "backends/common/kernel_conformance.h"
#include "backends/common/layer_ops_conformance.h"
#include "backends/common/math_kernel_conformance.h"
#include "backends/common/model_ops_conformance.h"
#include "backends/sim/sim_device.h"
#include "framework/device/device_registry.h"
#include "framework/runtime/eager.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using conformance::Op;
using ::testing::AllOf;

template <typename T>
Variable Var(const Shape& shape, int seed) {
  return conformance::Var<T>(shape, conformance::Values<T>(shape.num_elements(), seed));
}

INSTANTIATE_TEST_SUITE_P(Sim, MathKernelConformance, ::testing::Values(SimPlace(0), SimPlace(1)),
                         PlaceTestName);
INSTANTIATE_TEST_SUITE_P(Sim, KernelConformance, ::testing::Values(SimPlace(0), SimPlace(1)),
                         PlaceTestName);
INSTANTIATE_TEST_SUITE_P(Sim, ModelOpsConformance, ::testing::Values(SimPlace(0), SimPlace(1)),
                         PlaceTestName);
INSTANTIATE_TEST_SUITE_P(Sim, LayerOpsConformance, ::testing::Values(SimPlace(0), SimPlace(1)),
                         PlaceTestName);

// Every output of `op` on `place`, on the host.
std::map<std::string, Tensor> RunOnHost(const OpDesc& op, const Place& place,
                                        const EagerInputs& inputs) {
  absl::StatusOr<EagerOutputs> out = RunOpEager(op, place, inputs);
  CHECK(out.ok()) << out.status();
  std::map<std::string, Tensor> host;
  for (const auto& [arg, vars] : *out) {
    absl::StatusOr<Tensor> t = CopyTensorTo(vars[0].tensor(), CPUPlace());
    CHECK(t.ok()) << t.status();
    host.emplace(arg, *std::move(t));
  }
  return host;
}

template <typename T>
void ExpectSame(const Tensor& sim, const Tensor& cpu, bool exact) {
  const std::vector<T> s = sim.ToVector<T>(), c = cpu.ToVector<T>();
  ASSERT_EQ(s.size(), c.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (exact) {
      ASSERT_EQ(s[i], c[i]) << i;
    } else {
      ASSERT_NEAR(s[i], c[i], 1e-5 * (1 + std::abs(c[i]))) << i;
    }
  }
}

TEST(SimKernels, EveryOpMatchesTheCpuResult) {
  struct Case {
    OpDesc op;
    EagerInputs inputs;
    bool exact;  // float32 matmul on cpu is oneDNN's: same to rounding only
  };
  const std::vector<Case> cases = {
      {Op("fill_constant", {{"shape", std::vector<int64_t>{3, 5}}, {"value", 1.25}}), {}, true},
      {Op("elementwise_add"),
       {{"X", {Var<float>({37, 29}, 1)}}, {"Y", {Var<float>({29}, 2)}}},
       true},
      {Op("elementwise_add_grad", {{"axis", int64_t{0}}}),
       {{"X", {Var<double>({37, 29}, 1)}},
        {"Y", {Var<double>({37}, 2)}},
        {"Out@GRAD", {Var<double>({37, 29}, 3)}}},
       true},
      {Op("matmul", {{"alpha", 0.7}, {"transpose_Y", true}}),
       {{"X", {Var<float>({2, 17, 33}, 1)}}, {"Y", {Var<float>({9, 33}, 2)}}},
       false},
      {Op("matmul_grad", {{"transpose_X", true}}),
       {{"X", {Var<double>({33, 17}, 1)}},
        {"Y", {Var<double>({2, 33, 9}, 2)}},
        {"Out@GRAD", {Var<double>({2, 17, 9}, 3)}}},
       true},
      {Op("scale", {{"scale", 2.5}, {"bias", 1.0}}), {{"X", {Var<int32_t>({40}, 1)}}}, true},
      {Op("cast", {{"out_dtype", DataType::kInt64}}), {{"X", {Var<float>({6, 7}, 1)}}}, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op.type);
    const auto sim = RunOnHost(c.op, SimPlace(0), c.inputs);
    const auto cpu = RunOnHost(c.op, CPUPlace(), c.inputs);
    ASSERT_EQ(sim.size(), cpu.size());
    for (const auto& [arg, s] : sim) {
      SCOPED_TRACE(arg);
      const Tensor& t = cpu.at(arg);
      ASSERT_EQ(s.dtype(), t.dtype());
      ASSERT_EQ(s.shape(), t.shape());
      DispatchDataType(t.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        ExpectSame<T>(s, t, c.exact);
      });
    }
  }
}

TEST(SimKernels, InputsAreCopiedOnceAndCountedOutputsStayOnSim) {
  ASSERT_OK(ResetSimCopyCounters(SimPlace(0)));
  EagerStats stats;
  ASSERT_OK_AND_ASSIGN(
      EagerOutputs out,
      RunOpEager(Op("elementwise_add"), SimPlace(0),
                 {{"X", {Var<float>({2, 3}, 1)}}, {"Y", {Var<float>({3}, 2)}}}, &stats));
  EXPECT_EQ(stats.copies_h2d, 2);
  ASSERT_OK_AND_ASSIGN(SimCopyCounters c, GetSimCopyCounters(SimPlace(0)));
  EXPECT_EQ(c.ToString(), "H2D sync 2 (36 bytes)");  // 24 + 12 bytes

  const Tensor& result = out.at("Out")[0].tensor();
  EXPECT_EQ(result.place(), SimPlace(0));
  ASSERT_OK_AND_ASSIGN(Device * device, DeviceRegistry::Global().GetDevice(SimPlace(0)));
  EXPECT_TRUE(
      static_cast<SimDevice*>(device)->sim_allocator()->Owns(result.raw_data(), result.NumBytes()));
  // Inputs already on sim:0 are not copied again.
  ASSERT_OK(RunOpEager(Op("scale"), SimPlace(0), {{"X", {out.at("Out")[0]}}}, &stats).status());
  EXPECT_EQ(stats.copies_h2d, 2);
  ASSERT_OK_AND_ASSIGN(c, GetSimCopyCounters(SimPlace(0)));
  EXPECT_EQ(c.TotalCopies(), 2);
}

TEST(SimKernels, MemoryLimitIsResourceExhaustedNamingOpAndBytes) {
  ASSERT_OK_AND_ASSIGN(Device * device, DeviceRegistry::Global().GetDevice(SimPlace(0)));
  device->allocator()->SetBytesLimit(1024);
  const int64_t in_use = device->allocator()->GetStats().bytes_in_use;
  EXPECT_THAT(
      RunOpEager(Op("fill_constant", {{"shape", std::vector<int64_t>{1024}}}), SimPlace(0), {}),
      StatusIs(absl::StatusCode::kResourceExhausted,
               AllOf(HasSubstr("op 'fill_constant' output 'Out'"), HasSubstr("float32[1024]"),
                     HasSubstr(absl::StrCat("out of memory on sim:0: requested 4096 bytes "
                                            "(4.0 KiB), in use ",
                                            HumanBytes(in_use), ", limit 1024 bytes (1.0 KiB)")),
                     HasSubstr("device_guard(\"cpu\")"))));
  device->allocator()->SetBytesLimit(0);
}

}  // namespace
}  // namespace tandem
