#include "ops/loss/shape_fns.h"

#include "framework/op/op_schema.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(SquareErrorCostMeta, SameDtypeAndShape) {
  EXPECT_THAT(SquareErrorCostMeta("square_error_cost", {DataType::kFloat32, Shape({2, 3})},
                                  {DataType::kFloat32, Shape({2, 3})}),
              IsOkAndHolds(TensorMeta{DataType::kFloat32, Shape({2, 3})}));
  // An unknown dim matches and takes the known one.
  EXPECT_THAT(SquareErrorCostMeta("square_error_cost", {DataType::kFloat64, Shape({-1, 3})},
                                  {DataType::kFloat64, Shape({4, 3})}),
              IsOkAndHolds(TensorMeta{DataType::kFloat64, Shape({4, 3})}));
  EXPECT_THAT(SquareErrorCostMeta("square_error_cost", {DataType::kFloat32, Shape({2, 3})},
                                  {DataType::kFloat32, Shape({3, 2})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'square_error_cost': X is float32[2, 3] but Y is float32[3, 2]; "
                       "they must have the same dtype and shape"));
  EXPECT_THAT(SquareErrorCostMeta("square_error_cost", {DataType::kFloat32, Shape({3})},
                                  {DataType::kFloat64, Shape({3})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("X is float32[3] but Y is float64[3]")));
  EXPECT_THAT(SquareErrorCostMeta("square_error_cost", {DataType::kInt32, Shape({3})},
                                  {DataType::kInt32, Shape({3})}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("X must be float32")));
}

TEST(MeanMeta, OneElementOutAndEmptyX) {
  EXPECT_THAT(MeanMeta("mean", {DataType::kFloat64, Shape({2, 3})}),
              IsOkAndHolds(TensorMeta{DataType::kFloat64, Shape({1})}));
  EXPECT_THAT(MeanMeta("mean", {DataType::kFloat32, Shape()}),
              IsOkAndHolds(TensorMeta{DataType::kFloat32, Shape({1})}));
  EXPECT_THAT(MeanMeta("mean", {DataType::kFloat32, Shape({-1, 3})}),
              IsOkAndHolds(TensorMeta{DataType::kFloat32, Shape({1})}));
  EXPECT_THAT(MeanMeta("mean", {DataType::kFloat32, Shape({2, 0})}),
              StatusIs(absl::StatusCode::kInvalidArgument, "op 'mean': X is empty"));
}

TEST(LossSchemas, GradMakers) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* sec, OpRegistry::Global().Find("square_error_cost"));
  OpDesc op;
  op.type = "square_error_cost";
  op.inputs = {{"X", {"pred"}}, {"Y", {"label"}}};
  op.outputs = {{"Out", {"cost"}}};
  ASSERT_OK(sec->Validate(&op));
  GradContext only_x{{"pred"}, [](const std::string&) { return std::nullopt; }};
  ASSERT_OK_AND_ASSIGN(std::vector<OpDesc> grads, sec->grad_maker()(op, only_x));
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type, "square_error_cost_grad");
  EXPECT_EQ(grads[0].Output("X@GRAD"), "pred@GRAD");
  EXPECT_EQ(grads[0].outputs.count("Y@GRAD"), 0u);

  ASSERT_OK_AND_ASSIGN(const OpSchema* mean, OpRegistry::Global().Find("mean"));
  OpDesc m;
  m.type = "mean";
  m.inputs = {{"X", {"cost"}}};
  m.outputs = {{"Out", {"loss"}}};
  ASSERT_OK(mean->Validate(&m));
  GradContext cost{{"cost"}, [](const std::string&) { return std::nullopt; }};
  ASSERT_OK_AND_ASSIGN(grads, mean->grad_maker()(m, cost));
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type, "mean_grad");
  EXPECT_EQ(grads[0].Input("Out@GRAD"), "loss@GRAD");
  ASSERT_OK_AND_ASSIGN(const OpSchema* mean_grad, OpRegistry::Global().Find("mean_grad"));
  InferShapeContext ctx(grads[0], {{"X", {{DataType::kFloat32, Shape({4, 2})}}},
                                   {"Out@GRAD", {{DataType::kFloat32, Shape({2})}}}});
  EXPECT_THAT(mean_grad->infer_shape()(&ctx),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'mean_grad': Out@GRAD is float32[2], expected float32[1]"));
}

TEST(ClassRowsShape, LabelIsInt64WithOrWithoutTheLastDim) {
  const TensorMeta logits{DataType::kFloat32, Shape({2, 3, 5})};
  for (const Shape& label : {Shape({2, 3, 1}), Shape({2, 3}), Shape({-1, 3, 1})}) {
    ASSERT_OK_AND_ASSIGN(ClassRows r, ClassRowsShape("softmax_with_cross_entropy", "Logits", logits,
                                                     {DataType::kInt64, label}));
    EXPECT_EQ(r.rows, 6);
    EXPECT_EQ(r.classes, 5);
    EXPECT_EQ(r.per_row, Shape({2, 3, 1}));
  }
  ASSERT_OK_AND_ASSIGN(ClassRows r,
                       ClassRowsShape("accuracy", "Out", {DataType::kFloat64, Shape({-1, 10})},
                                      {DataType::kInt64, Shape({-1, 1})}));
  EXPECT_EQ(r.rows, -1);
  EXPECT_EQ(r.per_row, Shape({-1, 1}));
  EXPECT_THAT(ClassRowsShape("accuracy", "Out", {DataType::kFloat32, Shape({4, 10})},
                             {DataType::kInt64, Shape({4, 2})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'accuracy': Label must be int64[4, 1] or int64[4] for Out [4, 10], "
                       "got int64[4, 2]"));
  EXPECT_THAT(ClassRowsShape("accuracy", "Out", {DataType::kInt32, Shape({4, 10})},
                             {DataType::kInt64, Shape({4, 1})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'accuracy': Out must be float32 or float64, got int32"));
  EXPECT_THAT(ClassRowsShape("accuracy", "Out", {DataType::kFloat32, Shape()},
                             {DataType::kInt64, Shape({1})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'accuracy': Out must have a class dim, got a 0-d tensor"));
}

}  // namespace
}  // namespace tandem
