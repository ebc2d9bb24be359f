#include "framework/kernel/kernel_registry.h"

#include <memory>
#include <string>
#include <utility>

#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::AllOf;

class NoopKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext*) override { return absl::OkStatus(); }
};

REGISTER_KERNEL(KernelDef("kr_test_op", "cpu").TypeConstraint("X", kFloatTypes), NoopKernel);
REGISTER_KERNEL(KernelDef("kr_test_op", "cpu").TypeConstraint("X", {DataType::kInt64}), NoopKernel);
REGISTER_KERNEL(
    KernelDef("kr_test_op", "gpu").TypeConstraint("X", {DataType::kFloat32}).HostMemory("Shape"),
    NoopKernel);

TEST(KernelRegistry, FindsByDeviceAndDtype) {
  auto dtype = [](DataType t) {
    return [t](absl::string_view) -> std::optional<DataType> { return t; };
  };
  ASSERT_OK_AND_ASSIGN(
      const KernelRegistration* k,
      KernelRegistry::Global().Find("kr_test_op", DeviceType::CPU(), dtype(DataType::kInt64)));
  EXPECT_EQ(k->def.DebugString(), "kr_test_op on cpu [X: int64]");
  ASSERT_OK_AND_ASSIGN(
      k, KernelRegistry::Global().Find("kr_test_op", DeviceType::GPU(), dtype(DataType::kFloat32)));
  EXPECT_TRUE(k->def.IsHostMemory("Shape"));
  EXPECT_FALSE(k->def.IsHostMemory("X"));
  EXPECT_OK(k->Create(OpDesc{}).status());
}

// Two bytes of scratch per element of X.
REGISTER_KERNEL(KernelDef("kr_scratch_op", "cpu")
                    .Scratch([](const OpDesc& op, const ArgMetas& in, const ArgMetas&) -> int64_t {
                      const TensorMeta* x = FirstMeta(in, "X");
                      return x == nullptr ? -1 : 2 * x->shape.num_elements();
                    }),
                NoopKernel);

// A row gather whose contract holds only without a "padding" attribute,
// and a row update.
REGISTER_KERNEL(KernelDef("kr_gather_op", "cpu")
                    .GathersRows("Table", "Ids", "Out",
                                 [](const OpDesc& op) { return op.attrs.count("padding") == 0; })
                    .SparseRowsFrom("Ids", "Out"),
                NoopKernel);
REGISTER_KERNEL(KernelDef("kr_update_op", "cpu").UpdatesRowsOf("Param", "Grad"), NoopKernel);

TEST(KernelRegistry, AKernelDeclaresItsRowContracts) {
  auto none = [](absl::string_view) -> std::optional<DataType> { return std::nullopt; };
  ASSERT_OK_AND_ASSIGN(const KernelRegistration* gather,
                       KernelRegistry::Global().Find("kr_gather_op", DeviceType::CPU(), none));
  ASSERT_OK_AND_ASSIGN(const KernelRegistration* update,
                       KernelRegistry::Global().Find("kr_update_op", DeviceType::CPU(), none));
  EXPECT_EQ(gather->def.DebugString(),
            "kr_gather_op on cpu GathersRows(Table, Ids -> Out) SparseRowsFrom(Ids -> Out)");
  EXPECT_EQ(update->def.DebugString(), "kr_update_op on cpu UpdatesRowsOf(Param, Grad)");
  OpDesc plain, padded;
  padded.attrs["padding"] = int64_t{0};
  const RowGatherContract* rows = gather->def.RowGather(plain);
  ASSERT_NE(rows, nullptr);
  EXPECT_EQ(rows->table, "Table");
  EXPECT_EQ(rows->ids, "Ids");
  EXPECT_EQ(rows->out, "Out");
  EXPECT_EQ(gather->def.RowGather(padded), nullptr);   // its predicate refuses the op
  ASSERT_NE(gather->def.SparseRows(padded), nullptr);  // no predicate: every op
  EXPECT_EQ(gather->def.SparseRows(padded)->ids, "Ids");
  EXPECT_EQ(gather->def.RowUpdate(), nullptr);
  ASSERT_NE(update->def.RowUpdate(), nullptr);
  EXPECT_EQ(update->def.RowUpdate()->param, "Param");
  EXPECT_EQ(update->def.RowUpdate()->grad, "Grad");
  EXPECT_EQ(update->def.RowGather(plain), nullptr);
  EXPECT_EQ(update->def.SparseRows(plain), nullptr);
}

TEST(KernelRegistry, AKernelDeclaresItsScratch) {
  auto none = [](absl::string_view) -> std::optional<DataType> { return std::nullopt; };
  ASSERT_OK_AND_ASSIGN(const KernelRegistration* k,
                       KernelRegistry::Global().Find("kr_scratch_op", DeviceType::CPU(), none));
  EXPECT_TRUE(k->def.declares_scratch());
  EXPECT_EQ(k->def.DebugString(), "kr_scratch_op on cpu Scratch");
  const ArgMetas in = {{"X", {{DataType::kFloat32, Shape({3, 5})}}}};
  EXPECT_EQ(k->def.ScratchBytes(OpDesc{}, in, {}), 30);
  EXPECT_EQ(k->def.ScratchBytes(OpDesc{}, {}, {}), -1);  // FirstMeta: no X
  EXPECT_EQ(FirstMeta(in, "X")->shape, Shape({3, 5}));
  EXPECT_EQ(FirstMeta({{"X", {}}}, "X"), nullptr);
  // Declared by none: no scratch.
  auto int64 = [](absl::string_view) -> std::optional<DataType> { return DataType::kInt64; };
  ASSERT_OK_AND_ASSIGN(k, KernelRegistry::Global().Find("kr_test_op", DeviceType::CPU(), int64));
  EXPECT_FALSE(k->def.declares_scratch());
  EXPECT_EQ(k->def.ScratchBytes(OpDesc{}, in, {}), 0);
}

// Wraps a kernel and fails: shows which factory made a kernel.
class FailingKernel : public OpKernel {
 public:
  explicit FailingKernel(std::unique_ptr<OpKernel> inner) : inner_(std::move(inner)) {}
  absl::Status Compute(KernelContext*) override { return absl::AbortedError("wrapped"); }

 private:
  std::unique_ptr<OpKernel> inner_;
};

REGISTER_KERNEL(KernelDef("kr_wrap_op", "kr_wrap_dev"), NoopKernel);
REGISTER_KERNEL(KernelDef("kr_wrap_op", "kr_other_dev"), NoopKernel);

TEST(KernelRegistry, WrapFactoriesReplacesOneDeviceTypesFactories) {
  KernelRegistry& registry = KernelRegistry::Global();
  const int wrapped = registry.WrapFactories("kr_wrap_dev", [](KernelFactory inner) {
    return KernelFactory([inner](const OpDesc& op) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
      absl::StatusOr<std::unique_ptr<OpKernel>> k = inner(op);
      if (!k.ok()) return k.status();
      return std::unique_ptr<OpKernel>(std::make_unique<FailingKernel>(*std::move(k)));
    });
  });
  EXPECT_EQ(wrapped, 1);
  auto any = [](absl::string_view) -> std::optional<DataType> { return DataType::kFloat32; };
  for (const char* device : {"kr_wrap_dev", "kr_other_dev"}) {
    ASSERT_OK_AND_ASSIGN(const KernelRegistration* k,
                         registry.Find("kr_wrap_op", DeviceType::Register(device, ""), any));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<OpKernel> kernel, k->Create(OpDesc{}));
    const bool is_wrapped = std::string(device) == "kr_wrap_dev";
    EXPECT_EQ(kernel->Compute(nullptr).code(),
              is_wrapped ? absl::StatusCode::kAborted : absl::StatusCode::kOk)
        << device;
  }
}

TEST(KernelRegistry, MissingKernelListsRegisteredOnes) {
  auto f64 = [](absl::string_view) -> std::optional<DataType> { return DataType::kFloat64; };
  EXPECT_THAT(KernelRegistry::Global().Find("kr_test_op", DeviceType::GPU(), f64),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("no kernel for op 'kr_test_op' on gpu with X=float64"),
                             HasSubstr("kr_test_op on cpu [X: float32, float64]"),
                             HasSubstr("kr_test_op on gpu [X: float32] HostMemory(Shape)"))));
  EXPECT_THAT(KernelRegistry::Global().Find("nope_op", DeviceType::CPU(), f64),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("'nope_op': none")));
}

TEST(KernelRegistry, FindForOpResolvesInputsAndAttrs) {
  OpDesc op;
  op.type = "kr_test_op";
  op.inputs["X"] = {"v"};
  auto var_dtype = [](const std::string& var) -> std::optional<DataType> {
    return var == "v" ? std::optional<DataType>(DataType::kInt64) : std::nullopt;
  };
  ASSERT_OK_AND_ASSIGN(const KernelRegistration* k,
                       KernelRegistry::Global().FindForOp(op, DeviceType::CPU(), var_dtype));
  EXPECT_EQ(k->def.type_constraints().at("X").count(DataType::kInt64), 1u);
  EXPECT_TRUE(KernelRegistry::Global().HasKernel("kr_test_op", DeviceType::GPU()));
  EXPECT_EQ(KernelRegistry::Global().KernelsFor("kr_test_op").size(), 3u);
}

TEST(KernelRegistryDeathTest, OverlappingDuplicateCrashes) {
  EXPECT_DEATH(KernelRegistry::Global().Register(
                   KernelDef("kr_test_op", "cpu").TypeConstraint("X", {DataType::kFloat64}),
                   MakeKernelFactory<NoopKernel>()),
               "duplicate kernel registration");
}

}  // namespace
}  // namespace tandem
