#include "ops/nn/shape_fns.h"

#include "framework/op/op_schema.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(LookupTableShape, IdsShapePlusDim) {
  const TensorMeta w{DataType::kFloat32, Shape({10, 4})};
  EXPECT_THAT(LookupTableShape("lookup_table", {DataType::kInt64, Shape({2, 3})}, w),
              IsOkAndHolds(Shape({2, 3, 4})));
  EXPECT_THAT(LookupTableShape("lookup_table", {DataType::kInt64, Shape()}, w),
              IsOkAndHolds(Shape({4})));
  EXPECT_THAT(LookupTableShape("lookup_table", {DataType::kInt64, Shape({-1})}, w),
              IsOkAndHolds(Shape({-1, 4})));
}

TEST(LookupTableShape, BadIdsOrTableIsInvalidArgument) {
  const TensorMeta ids{DataType::kInt64, Shape({2})};
  EXPECT_THAT(LookupTableShape("lookup_table", {DataType::kInt32, Shape({2})},
                               {DataType::kFloat32, Shape({10, 4})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'lookup_table': Ids must be int64, got int32"));
  EXPECT_THAT(LookupTableShape("lookup_table", ids, {DataType::kInt64, Shape({10, 4})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'lookup_table': W must be float32 or float64, got int64"));
  EXPECT_THAT(LookupTableShape("lookup_table", ids, {DataType::kFloat32, Shape({10})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'lookup_table': W must be a [rows, dim] table, got [10]"));
}

TEST(PaddingRow, MinusOneIsNoneOtherNegativesCountFromTheEnd) {
  EXPECT_THAT(PaddingRow("lookup_table", -1, 10), IsOkAndHolds(-1));
  EXPECT_THAT(PaddingRow("lookup_table", 0, 10), IsOkAndHolds(0));
  EXPECT_THAT(PaddingRow("lookup_table", 9, 10), IsOkAndHolds(9));
  EXPECT_THAT(PaddingRow("lookup_table", -2, 10), IsOkAndHolds(8));
  EXPECT_THAT(PaddingRow("lookup_table", -10, 10), IsOkAndHolds(0));
  EXPECT_THAT(PaddingRow("lookup_table", 10, 10),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'lookup_table': attribute 'padding_idx' 10 is out of range for "
                       "a table of 10 rows (need -1 for none, or -10 <= padding_idx < 10)"));
  EXPECT_THAT(PaddingRow("lookup_table", -11, 10),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("-11 is out of range")));
}

OpDesc Op(const std::string& type, std::map<std::string, std::vector<std::string>> inputs,
          std::map<std::string, std::vector<std::string>> outputs) {
  OpDesc op;
  op.type = type;
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  return op;
}

GradContext Wanting(std::vector<std::string> wanted) {
  return GradContext{std::move(wanted), [](const std::string&) { return std::nullopt; }};
}

TEST(LookupTableSchema, InferAndSparseGradientMeta) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* fwd, OpRegistry::Global().Find("lookup_table"));
  OpDesc op = Op("lookup_table", {{"Ids", {"ids"}}, {"W", {"w"}}}, {{"Out", {"emb"}}});
  op.attrs["is_sparse"] = true;
  ASSERT_OK(fwd->Validate(&op));
  const TensorMeta w{DataType::kFloat32, Shape({10, 4})};
  InferShapeContext ctx(op, {{"Ids", {{DataType::kInt64, Shape({3})}}}, {"W", {w}}});
  ASSERT_OK(fwd->infer_shape()(&ctx));
  EXPECT_EQ(ctx.outputs().at("Out")[0], (TensorMeta{DataType::kFloat32, Shape({3, 4})}));

  // Ids get no gradient; W's is SelectedRows when is_sparse.
  ASSERT_OK_AND_ASSIGN(std::vector<OpDesc> none, fwd->grad_maker()(op, Wanting({"ids"})));
  EXPECT_TRUE(none.empty());
  ASSERT_OK_AND_ASSIGN(std::vector<OpDesc> grads, fwd->grad_maker()(op, Wanting({"w"})));
  ASSERT_EQ(grads.size(), 1u);
  OpDesc& g = grads[0];
  EXPECT_EQ(g.type, "lookup_table_grad");
  EXPECT_EQ(g.Input("Out@GRAD"), "emb@GRAD");
  EXPECT_EQ(g.Output("W@GRAD"), "w@GRAD");
  ASSERT_OK_AND_ASSIGN(const OpSchema* bwd, OpRegistry::Global().Find(g.type));
  ASSERT_OK(bwd->Validate(&g));
  InferShapeContext gctx(g, {{"Ids", {{DataType::kInt64, Shape({3})}}},
                             {"W", {w}},
                             {"Out@GRAD", {{DataType::kFloat32, Shape({3, 4})}}}});
  ASSERT_OK(bwd->infer_shape()(&gctx));
  EXPECT_EQ(gctx.outputs().at("W@GRAD")[0],
            (TensorMeta{DataType::kFloat32, Shape({10, 4}), /*selected_rows=*/true}));

  InferShapeContext bad(g, {{"Ids", {{DataType::kInt64, Shape({3})}}},
                            {"W", {w}},
                            {"Out@GRAD", {{DataType::kFloat32, Shape({2, 4})}}}});
  EXPECT_THAT(bwd->infer_shape()(&bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'lookup_table_grad': Out@GRAD is float32[2, 4], expected "
                       "float32[3, 4]"));
}

TEST(LookupTableSchema, PaddingIdxCheckedAgainstTheTable) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* fwd, OpRegistry::Global().Find("lookup_table"));
  OpDesc op = Op("lookup_table", {{"Ids", {"ids"}}, {"W", {"w"}}}, {{"Out", {"emb"}}});
  op.attrs["padding_idx"] = int64_t{12};
  ASSERT_OK(fwd->Validate(&op));
  InferShapeContext ctx(op, {{"Ids", {{DataType::kInt64, Shape({3})}}},
                             {"W", {{DataType::kFloat32, Shape({10, 4})}}}});
  EXPECT_THAT(fwd->infer_shape()(&ctx),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'padding_idx' 12")));
}

TEST(L2NormalizeSchema, AxisCheckedAndGradientReadsOut) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* fwd, OpRegistry::Global().Find("l2_normalize"));
  OpDesc op = Op("l2_normalize", {{"X", {"x"}}}, {{"Out", {"y"}}});
  op.attrs["axis"] = int64_t{2};
  ASSERT_OK(fwd->Validate(&op));
  InferShapeContext ctx(op, {{"X", {{DataType::kFloat64, Shape({2, 3})}}}});
  EXPECT_THAT(fwd->infer_shape()(&ctx),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'l2_normalize': axis 2 is out of range for X [2, 3] "
                       "(need -2 <= axis < 2)"));

  ASSERT_OK_AND_ASSIGN(std::vector<OpDesc> grads, fwd->grad_maker()(op, Wanting({"x"})));
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type, "l2_normalize_grad");
  EXPECT_EQ(grads[0].Input("X"), "x");
  EXPECT_EQ(grads[0].Input("Out"), "y");
  EXPECT_EQ(grads[0].Input("Out@GRAD"), "y@GRAD");
  EXPECT_EQ(grads[0].Output("X@GRAD"), "x@GRAD");
  EXPECT_EQ(std::get<int64_t>(grads[0].attrs.at("axis")), 2);
}

}  // namespace
}  // namespace tandem
