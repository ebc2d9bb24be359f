#include "ops/math/shape_fns.h"

#include "framework/op/op_schema.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::AllOf;

TEST(BroadcastShapes, NumpyAndAxisAlignment) {
  EXPECT_THAT(BroadcastShapes("add", Shape({2, 3}), Shape({3})), IsOkAndHolds(Shape({2, 3})));
  EXPECT_THAT(BroadcastShapes("add", Shape({4, 1, 5}), Shape({3, 1})),
              IsOkAndHolds(Shape({4, 3, 5})));
  EXPECT_THAT(BroadcastShapes("add", Shape(), Shape({2})), IsOkAndHolds(Shape({2})));
  EXPECT_THAT(BroadcastShapes("add", Shape({2, 3, 4}), Shape({3}), 1),
              IsOkAndHolds(Shape({2, 3, 4})));
  EXPECT_THAT(BroadcastShapes("add", Shape({0, 3}), Shape({1, 3})), IsOkAndHolds(Shape({0, 3})));
}

TEST(BroadcastShapes, MismatchNamesOpShapesAndDim) {
  EXPECT_THAT(BroadcastShapes("elementwise_add", Shape({2, 3}), Shape({4})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'elementwise_add': X [2, 3] and Y [4] cannot be broadcast "
                       "(dim -1: 3 vs 4)"));
  EXPECT_THAT(BroadcastShapes("elementwise_add", Shape({2, 3}), Shape({3}), 5),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("axis 5 is out of range")));
}

TEST(MatmulShape, PlainBatchedAndTransposed) {
  ASSERT_OK_AND_ASSIGN(MatmulDims d, MatmulShape("matmul", Shape({2, 3}), Shape({3, 5}), false, false));
  EXPECT_EQ(d.out, Shape({2, 5}));
  ASSERT_OK_AND_ASSIGN(d, MatmulShape("matmul", Shape({4, 3, 2}), Shape({5, 3}), true, true));
  EXPECT_EQ(d.out, Shape({4, 2, 5}));
  EXPECT_EQ(d.batch, 4);
  EXPECT_TRUE(d.x_batched);
  EXPECT_FALSE(d.y_batched);
  EXPECT_THAT(MatmulShape("matmul", Shape({2, 3}), Shape({4, 5}), false, false),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("inner dims differ"), HasSubstr("K=3"), HasSubstr("K=4"))));
  EXPECT_THAT(MatmulShape("matmul", Shape({3}), Shape({3, 5}), false, false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank >= 2")));
  EXPECT_THAT(MatmulShape("matmul", Shape({2, 2, 3}), Shape({3, 3, 5}), false, false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("batch dims")));
}

TEST(CheckFloating, AcceptsOnlyFloat32AndFloat64) {
  EXPECT_OK(CheckFloating("mean", "X", DataType::kFloat32));
  EXPECT_OK(CheckFloating("mean", "X", DataType::kFloat64));
  EXPECT_THAT(CheckFloating("mean", "X", DataType::kInt32),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'mean': X must be float32 or float64, got int32"));
}

TEST(CheckArgMeta, NamesOpArgumentAndBothMetas) {
  EXPECT_OK(CheckArgMeta("mean_grad", "Out@GRAD", DataType::kFloat32, Shape({1}),
                         DataType::kFloat32, Shape({1})));
  EXPECT_THAT(CheckArgMeta("mean_grad", "Out@GRAD", DataType::kFloat64, Shape({2}),
                           DataType::kFloat32, Shape({1})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'mean_grad': Out@GRAD is float64[2], expected float32[1]"));
}

TEST(NormalizeAxis, NegativeCountsFromTheEnd) {
  EXPECT_THAT(NormalizeAxis("l2_normalize", "X", Shape({2, 3}), -1), IsOkAndHolds(1));
  EXPECT_THAT(NormalizeAxis("l2_normalize", "X", Shape({2, 3}), -2), IsOkAndHolds(0));
  EXPECT_THAT(NormalizeAxis("l2_normalize", "X", Shape({2, 3}), 1), IsOkAndHolds(1));
  EXPECT_THAT(NormalizeAxis("l2_normalize", "X", Shape({2, 3}), 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'l2_normalize': axis 2 is out of range for X [2, 3] "
                       "(need -2 <= axis < 2)"));
  EXPECT_THAT(NormalizeAxis("slice", "Input", Shape(), -1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("need 0 <= axis < 0")));
}

OpDesc Op(const std::string& type) {
  OpDesc op;
  op.type = type;
  return op;
}

TEST(MathSchemas, DtypeMismatchAndBadShapeAttr) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* add, OpRegistry::Global().Find("elementwise_add"));
  OpDesc op = Op("elementwise_add");
  op.inputs = {{"X", {"a"}}, {"Y", {"b"}}};
  op.outputs = {{"Out", {"c"}}};
  ASSERT_OK(add->Validate(&op));
  InferShapeContext ctx(op, {{"X", {{DataType::kFloat32, Shape({2})}}},
                             {"Y", {{DataType::kFloat64, Shape({2})}}}});
  EXPECT_THAT(add->infer_shape()(&ctx),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'elementwise_add': X is float32 but Y is float64; cast one of them"));

  ASSERT_OK_AND_ASSIGN(const OpSchema* fill, OpRegistry::Global().Find("fill_constant"));
  OpDesc f = Op("fill_constant");
  f.outputs = {{"Out", {"o"}}};
  f.attrs["shape"] = std::vector<int64_t>{int64_t{1} << 40, int64_t{1} << 40};
  ASSERT_OK(fill->Validate(&f));
  InferShapeContext fctx(f, {});
  EXPECT_THAT(fill->infer_shape()(&fctx),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("op 'fill_constant': attribute 'shape'"),
                             HasSubstr("overflows"))));
}

TEST(MathSchemas, GradMakers) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* mm, OpRegistry::Global().Find("matmul"));
  OpDesc op = Op("matmul");
  op.inputs = {{"X", {"x"}}, {"Y", {"w"}}};
  op.outputs = {{"Out", {"o"}}};
  ASSERT_OK(mm->Validate(&op));
  GradContext gctx{{"w"}, [](const std::string&) { return std::nullopt; }};
  ASSERT_OK_AND_ASSIGN(std::vector<OpDesc> grads, mm->grad_maker()(op, gctx));
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type, "matmul_grad");
  EXPECT_EQ(grads[0].Input("Out@GRAD"), "o@GRAD");
  EXPECT_EQ(grads[0].Output("Y@GRAD"), "w@GRAD");
  EXPECT_EQ(grads[0].outputs.count("X@GRAD"), 0u);  // not wanted
}

}  // namespace
}  // namespace tandem
