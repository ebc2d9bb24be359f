#include "ops/optimizer/shape_fns.h"

#include <limits>

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
                       "'w' is float32[5, 3]; they must have the same dtype and shape (or a "
                       "dense bfloat16 or float16 Grad of a float32 Param)"));
  // A float32 parameter's dense 16-bit gradient (mixed precision); not sparse,
  // and not of a float64 parameter.
  EXPECT_OK(CheckSgdArgs(SgdOp(), param, {DataType::kBFloat16, Shape({5, 3})}, kLr));
  EXPECT_OK(CheckSgdArgs(SgdOp(), param, {DataType::kFloat16, Shape({5, 3})}, kLr));
  EXPECT_THAT(CheckSgdArgs(SgdOp(), param, {DataType::kBFloat16, Shape({5, 3}), true}, kLr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Grad 'w@GRAD' is bfloat16[5, 3] (SelectedRows)")));
  EXPECT_THAT(CheckSgdArgs(SgdOp(), {DataType::kFloat64, Shape({5, 3})},
                           {DataType::kBFloat16, Shape({5, 3})}, kLr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Grad 'w@GRAD' is bfloat16[5, 3] but Param 'w' is float64")));
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

// An adam op with `attrs`, the others defaulted by its schema.
OpDesc AdamOp(AttrMap attrs = {}) {
  OpDesc op;
  op.type = "adam";
  op.inputs = {{"Param", {"w"}},      {"Grad", {"w@GRAD"}},  {"LearningRate", {"lr"}},
               {"Moment1", {"w_m1"}}, {"Moment2", {"w_m2"}}, {"Beta1Pow", {"w_b1"}},
               {"Beta2Pow", {"w_b2"}}};
  op.outputs = {{"ParamOut", {"w"}},
                {"Moment1Out", {"w_m1"}},
                {"Moment2Out", {"w_m2"}},
                {"Beta1PowOut", {"w_b1"}},
                {"Beta2PowOut", {"w_b2"}}};
  op.attrs = std::move(attrs);
  absl::Status s = OpRegistry::Global().Find("adam").value()->Validate(&op);  // fills defaults
  EXPECT_OK(s);
  return op;
}

TEST(MomentumSchema, VelocityLikeParamAndMuChecked) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* momentum, OpRegistry::Global().Find("momentum"));
  OpDesc op;
  op.type = "momentum";
  op.inputs = {
      {"Param", {"w"}}, {"Grad", {"w@GRAD"}}, {"Velocity", {"v"}}, {"LearningRate", {"lr"}}};
  op.outputs = {{"ParamOut", {"w"}}, {"VelocityOut", {"v"}}};
  ASSERT_OK(momentum->Validate(&op));
  ASSERT_OK_AND_ASSIGN(MomentumAttrs attrs, GetMomentumAttrs(op));
  EXPECT_EQ(attrs.mu, 0.9);
  EXPECT_FALSE(attrs.use_nesterov);
  const TensorMeta param{DataType::kFloat32, Shape({5, 3})};
  InferShapeContext ctx(op, {{"Param", {param}},
                             {"Grad", {{DataType::kFloat32, Shape({5, 3}), true}}},
                             {"Velocity", {param}},
                             {"LearningRate", {kLr}}});
  ASSERT_OK(momentum->infer_shape()(&ctx));
  EXPECT_EQ(ctx.outputs().at("VelocityOut")[0], param);
  EXPECT_FALSE(momentum->grad_maker());

  EXPECT_THAT(CheckMomentumArgs(op, param, param, {DataType::kFloat32, Shape({5})}, kLr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'momentum': Velocity 'v' is float32[5] but Param 'w' is float32[5, "
                       "3]; it must be dense with Param's dtype and shape"));
  op.attrs["mu"] = -0.5;
  EXPECT_THAT(GetMomentumAttrs(op),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'momentum': attribute 'mu' must be finite and >= 0, got -0.5"));
}

TEST(AdamSchema, StateLikeParamBetaPowsScalarsAttrsInRange) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* adam, OpRegistry::Global().Find("adam"));
  OpDesc op = AdamOp();
  ASSERT_OK_AND_ASSIGN(AdamAttrs attrs, GetAdamAttrs(op));
  EXPECT_EQ(attrs.beta1, 0.9);
  EXPECT_EQ(attrs.beta2, 0.999);
  EXPECT_EQ(attrs.epsilon, 1e-8);
  EXPECT_EQ(attrs.weight_decay, 0);
  EXPECT_TRUE(attrs.decoupled_weight_decay);
  const TensorMeta param{DataType::kFloat64, Shape({4, 2})};
  const TensorMeta pow{DataType::kFloat64, Shape({1})};
  AdamMetas m{param, param, kLr, param, param, pow, pow};
  InferShapeContext ctx(op, {{"Param", {param}},
                             {"Grad", {param}},
                             {"LearningRate", {kLr}},
                             {"Moment1", {param}},
                             {"Moment2", {param}},
                             {"Beta1Pow", {pow}},
                             {"Beta2Pow", {pow}}});
  ASSERT_OK(adam->infer_shape()(&ctx));
  EXPECT_EQ(ctx.outputs().at("Moment2Out")[0], param);
  EXPECT_EQ(ctx.outputs().at("Beta2PowOut")[0], pow);
  EXPECT_OK(CheckAdamArgs(op, m));

  m.beta2_pow = {DataType::kFloat32, Shape({1})};
  EXPECT_THAT(CheckAdamArgs(op, m),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'adam': Beta2Pow 'w_b2' must be float64 (Param's dtype) with one "
                       "element, got float32[1]"));
  m.beta2_pow = pow;
  m.moment1 = {DataType::kFloat64, Shape({4, 2}), true};
  EXPECT_THAT(CheckAdamArgs(op, m),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Moment1 'w_m1' is float64[4, 2] (SelectedRows)")));

  EXPECT_THAT(GetAdamAttrs(AdamOp({{"beta1", 1.0}})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'adam': attribute 'beta1' must be in [0, 1), got 1"));
  EXPECT_THAT(GetAdamAttrs(AdamOp({{"beta2", -0.1}})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'beta2' must be in [0, 1)")));
  EXPECT_THAT(GetAdamAttrs(AdamOp({{"epsilon", -1e-8}})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'epsilon' must be finite and >= 0, got -1e-08")));
  EXPECT_THAT(GetAdamAttrs(AdamOp({{"weight_decay", std::numeric_limits<double>::infinity()}})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'weight_decay' must be finite and >= 0, got inf")));
}

}  // namespace
}  // namespace tandem
