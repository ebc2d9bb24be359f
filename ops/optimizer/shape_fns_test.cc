#include "ops/optimizer/shape_fns.h"

#include "framework/op/op_schema.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

OpDesc SgdOp() {
  OpDesc op;
  op.type = "sgd";
  op.inputs = {{"Param", {"w"}}, {"Grad", {"w@GRAD"}}, {"LearningRate", {"lr"}}};
  op.outputs = {{"ParamOut", {"w"}}};
  return op;
}

const TensorMeta kLr{DataType::kFloat32, Shape({1})};

TEST(CheckSgdArgs, DenseAndSparseGradients) {
  const TensorMeta param{DataType::kFloat32, Shape({5, 3})};
  EXPECT_OK(CheckSgdArgs(SgdOp(), param, {DataType::kFloat32, Shape({5, 3})}, kLr));
  EXPECT_OK(CheckSgdArgs(SgdOp(), param, {DataType::kFloat32, Shape({5, 3}), true}, kLr));
  EXPECT_OK(CheckSgdArgs(SgdOp(), {DataType::kFloat64, Shape({-1, 3})},
                         {DataType::kFloat64, Shape({5, 3})}, kLr));
  EXPECT_THAT(CheckSgdArgs(SgdOp(), param, {DataType::kFloat32, Shape({4, 3}), true}, kLr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'sgd': Grad 'w@GRAD' is float32[4, 3] (SelectedRows) but Param "
                       "'w' is float32[5, 3]; they must have the same dtype and shape"));
  EXPECT_THAT(CheckSgdArgs(SgdOp(), param, {DataType::kFloat64, Shape({5, 3})}, kLr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Grad 'w@GRAD' is float64[5, 3] but Param 'w' is float32")));
  EXPECT_THAT(
      CheckSgdArgs(SgdOp(), {DataType::kInt32, Shape({5})}, {DataType::kInt32, Shape({5})}, kLr),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "op 'sgd': Param must be float32 or float64, got int32"));
}

TEST(CheckSgdArgs, LearningRateIsOneFloat32) {
  const TensorMeta param{DataType::kFloat64, Shape({2})};
  EXPECT_OK(CheckSgdArgs(SgdOp(), param, param, {DataType::kFloat32, Shape()}));
  EXPECT_THAT(CheckSgdArgs(SgdOp(), param, param, {DataType::kFloat64, Shape({1})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'sgd': LearningRate 'lr' must be float32 with one element, got "
                       "float64[1]"));
  EXPECT_THAT(CheckSgdArgs(SgdOp(), param, param, {DataType::kFloat32, Shape({2})}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got float32[2]")));
}

TEST(SgdSchema, ParamOutIsDenseParamAndThereIsNoGradient) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* sgd, OpRegistry::Global().Find("sgd"));
  OpDesc op = SgdOp();
  ASSERT_OK(sgd->Validate(&op));
  InferShapeContext ctx(op, {{"Param", {{DataType::kFloat32, Shape({5, 3})}}},
                             {"Grad", {{DataType::kFloat32, Shape({5, 3}), true}}},
                             {"LearningRate", {kLr}}});
  ASSERT_OK(sgd->infer_shape()(&ctx));
  EXPECT_EQ(ctx.outputs().at("ParamOut")[0], (TensorMeta{DataType::kFloat32, Shape({5, 3})}));
  EXPECT_FALSE(sgd->grad_maker());
}

}  // namespace
}  // namespace tandem
