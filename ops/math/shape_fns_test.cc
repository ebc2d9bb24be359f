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

TEST(MathSchemas, ElementwiseGradOfDivReadsOut) {
  for (const std::string type : {"elementwise_sub", "elementwise_mul", "elementwise_div"}) {
    SCOPED_TRACE(type);
    ASSERT_OK_AND_ASSIGN(const OpSchema* s, OpRegistry::Global().Find(type));
    OpDesc op = Op(type);
    op.inputs = {{"X", {"x"}}, {"Y", {"y"}}};
    op.outputs = {{"Out", {"o"}}};
    ASSERT_OK(s->Validate(&op));
    GradContext gctx{{"x", "y"}, [](const std::string&) { return std::nullopt; }};
    ASSERT_OK_AND_ASSIGN(std::vector<OpDesc> grads, s->grad_maker()(op, gctx));
    ASSERT_EQ(grads.size(), 1u);
    EXPECT_EQ(grads[0].type, type + "_grad");
    EXPECT_EQ(grads[0].inputs.count("Out"), type == "elementwise_div" ? 1u : 0u);
    EXPECT_EQ(grads[0].Output("X@GRAD"), "x@GRAD");
    EXPECT_EQ(grads[0].Output("Y@GRAD"), "y@GRAD");
  }
}

TEST(FlatMatmulShape, FlattensEachSideAtItsNumColDims) {
  ASSERT_OK_AND_ASSIGN(FlatMatmulDims d,
                       FlatMatmulShape("mul", {"X", Shape({2, 3, 4}), 2, "x_num_col_dims"},
                                       {"Y", Shape({4, 5, 6}), 1, "y_num_col_dims"}));
  EXPECT_EQ(d.out, Shape({2, 3, 5, 6}));
  EXPECT_EQ(d.m, 6);
  EXPECT_EQ(d.k, 4);
  EXPECT_EQ(d.n, 30);
  // Unknown rows stay unknown; an unknown K takes Y's.
  ASSERT_OK_AND_ASSIGN(d, FlatMatmulShape("mul", {"X", Shape({-1, -1}), 1, "x_num_col_dims"},
                                          {"Y", Shape({7, 2}), 1, "y_num_col_dims"}));
  EXPECT_EQ(d.out, Shape({-1, 2}));
  EXPECT_EQ(d.m, -1);
  EXPECT_EQ(d.k, 7);
  EXPECT_THAT(FlatMatmulShape("mul", {"X", Shape({2, 3}), 1, "x_num_col_dims"},
                              {"Y", Shape({3, 4}), 2, "y_num_col_dims"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'mul': y_num_col_dims 2 is out of range for Y [3, 4] "
                       "(need 1 <= y_num_col_dims < 2)"));
}

TEST(FcShape, ChecksWAndBias) {
  const TensorMeta input{DataType::kFloat32, Shape({-1, 4})};
  const TensorMeta w{DataType::kFloat32, Shape({4, 3})};
  const TensorMeta bias{DataType::kFloat32, Shape({3})};
  ASSERT_OK_AND_ASSIGN(FlatMatmulDims d, FcShape("fc", input, 1, w, &bias));
  EXPECT_EQ(d.out, Shape({-1, 3}));
  EXPECT_OK(FcShape("fc", input, 1, w, nullptr).status());
  const TensorMeta bias64{DataType::kFloat64, Shape({3})};
  EXPECT_THAT(FcShape("fc", input, 1, w, &bias64),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'fc': Bias must be float32[3] to match W [4, 3], got float64[3]"));
  EXPECT_THAT(FcShape("fc", {DataType::kInt64, Shape({2, 4})}, 1, w, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'fc': Input must be float32 or float64, got int64"));
  EXPECT_THAT(FcShape("fc", input, 1, {DataType::kFloat32, Shape({2, 2, 3})}, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'fc': W must be a float32 [K, M] matrix, got float32[2, 2, 3]"));
}

TEST(ReduceShape, DimsKeepDimAllAndErrors) {
  ASSERT_OK_AND_ASSIGN(ReduceDims r,
                       ReduceShape("reduce_sum", Shape({2, 3, 4}), {-1, 0}, false, false));
  EXPECT_EQ(r.out, Shape({3}));
  EXPECT_EQ(r.kept, Shape({1, 3, 1}));
  EXPECT_EQ(r.count, 8);
  ASSERT_OK_AND_ASSIGN(r, ReduceShape("reduce_sum", Shape({2, 3}), {1}, true, false));
  EXPECT_EQ(r.out, Shape({2, 1}));
  // Empty dims and reduce_all reduce everything; nothing left gives [1].
  for (bool reduce_all : {false, true}) {
    ASSERT_OK_AND_ASSIGN(
        r, ReduceShape("reduce_sum", Shape({2, 3}),
                       reduce_all ? std::vector<int64_t>{0} : std::vector<int64_t>{}, false,
                       reduce_all));
    EXPECT_EQ(r.out, Shape({1}));
    EXPECT_EQ(r.count, 6);
  }
  ASSERT_OK_AND_ASSIGN(r, ReduceShape("reduce_sum", Shape({-1, 3}), {0}, false, false));
  EXPECT_EQ(r.out, Shape({3}));
  EXPECT_EQ(r.count, -1);
  EXPECT_THAT(ReduceShape("reduce_mean", Shape({2, 3}), {-3}, false, false),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'reduce_mean': dim -3 is out of range for X [2, 3] "
                       "(need -2 <= dim < 2)"));
  EXPECT_THAT(ReduceShape("reduce_mean", Shape({2, 3}), {0, -2}, false, false),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'reduce_mean': dim -2 of X [2, 3] is listed twice in dim"));
  ASSERT_OK_AND_ASSIGN(r, ReduceShape("reduce_mean", Shape({0, 3}), {0}, false, false));
  EXPECT_THAT(CheckMeanCount("reduce_mean", Shape({0, 3}), r),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'reduce_mean': X [0, 3] has no elements to average over dim"));
}

}  // namespace
}  // namespace tandem
