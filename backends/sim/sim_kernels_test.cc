// The sim kernels read only sim memory and stay under the memory limit.
// Their results (against float64 and against the cpu kernels) and their
// error messages are checked with every other place's in tests/conformance.
#include <string>
#include <utility>
#include <vector>

#include "backends/sim/sim_device.h"
#include "framework/device/device_registry.h"
#include "framework/kernel/eager.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::AllOf;

OpDesc Op(const std::string& type, AttrMap attrs = {}) {
  OpDesc op;
  op.type = type;
  op.attrs = std::move(attrs);
  return op;
}

// A host tensor of `shape` with deterministic values (k / 7 - 1.5).
template <typename T>
Variable Var(const Shape& shape, int seed) {
  std::vector<T> v(shape.num_elements());
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<T>(((i * 37 + seed * 11) % 23) / 7.0 - 1.5);
  return Variable(Tensor::FromVector<T>(shape, v));
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
