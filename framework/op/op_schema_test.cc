#include "framework/op/op_schema.h"

#include "framework/base/status_macros.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

REGISTER_OP("schema_test_scale")
    .Doc("Out = scale * X")
    .Input("X")
    .OptionalInput("Bias")
    .Output("Out")
    .Attr<double>("scale", 1.0)
    .RequiredAttr("mode", AttrType::kString)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
      ctx->SetOutput("Out", x);
      return absl::OkStatus();
    });

OpDesc MakeOp() {
  OpDesc op;
  op.type = "schema_test_scale";
  op.inputs["X"] = {"x"};
  op.outputs["Out"] = {"y"};
  op.attrs["mode"] = std::string("fast");
  return op;
}

TEST(OpSchema, ValidateFillsDefaults) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* s, OpRegistry::Global().Find("schema_test_scale"));
  OpDesc op = MakeOp();
  ASSERT_OK(s->Validate(&op));
  EXPECT_THAT(GetAttr<double>(op.attrs, "scale", op.type), IsOkAndHolds(1.0));
  EXPECT_EQ(op.DebugString(),
            "schema_test_scale(X=[x]) -> (Out=[y]) {mode=\"fast\", scale=1}");
}

TEST(OpSchema, ValidateRejectsBadOps) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* s, OpRegistry::Global().Find("schema_test_scale"));
  OpDesc missing = MakeOp();
  missing.inputs.erase("X");
  EXPECT_THAT(s->Validate(&missing), StatusIs(absl::StatusCode::kInvalidArgument,
                                              "op 'schema_test_scale': missing input 'X'"));
  OpDesc unknown = MakeOp();
  unknown.inputs["Z"] = {"z"};
  EXPECT_THAT(s->Validate(&unknown),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown input 'Z'; expected one of: X, Bias")));
  OpDesc wrong_type = MakeOp();
  wrong_type.attrs["scale"] = std::string("big");
  EXPECT_THAT(s->Validate(&wrong_type),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("attribute 'scale' is string \"big\", expected float")));
  OpDesc no_required = MakeOp();
  no_required.attrs.clear();
  EXPECT_THAT(s->Validate(&no_required),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("missing required attribute 'mode' (string)")));
  OpDesc two = MakeOp();
  two.inputs["X"] = {"a", "b"};
  EXPECT_THAT(s->Validate(&two), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("takes one variable, got 2")));
}

TEST(OpSchema, InferShapeRuns) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* s, OpRegistry::Global().Find("schema_test_scale"));
  OpDesc op = MakeOp();
  InferShapeContext ctx(op, {{"X", {TensorMeta{DataType::kFloat64, Shape({2, 3})}}}});
  ASSERT_OK(s->infer_shape()(&ctx));
  EXPECT_EQ(ctx.outputs().at("Out")[0], (TensorMeta{DataType::kFloat64, Shape({2, 3})}));
  InferShapeContext empty(op, {});
  EXPECT_THAT(s->infer_shape()(&empty),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'schema_test_scale': input 'X' is missing"));
}

REGISTER_OP("schema_test_split")
    .Doc("Out[i] = X for every variable bound to Out")
    .Input("X")
    .DuplicableOutput("Out")
    .Output("Single")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
      for (size_t i = 0; i < ctx->op().outputs.at("Out").size(); ++i) {
        ctx->SetOutput("Out", x, static_cast<int>(i));
      }
      ctx->SetOutput("Single", x);
      return absl::OkStatus();
    });

TEST(OpSchema, DuplicableOutputTakesOneOrMoreVariables) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* s, OpRegistry::Global().Find("schema_test_split"));
  ASSERT_EQ(s->outputs().size(), 2u);
  EXPECT_TRUE(s->outputs()[0].duplicable);
  EXPECT_FALSE(s->outputs()[0].optional);
  EXPECT_FALSE(s->outputs()[1].duplicable);
  OpDesc op;
  op.type = "schema_test_split";
  op.inputs["X"] = {"x"};
  op.outputs["Out"] = {"a", "b", "c"};
  op.outputs["Single"] = {"s"};
  ASSERT_OK(s->Validate(&op));
  InferShapeContext ctx(op, {{"X", {TensorMeta{DataType::kInt64, Shape({4})}}}});
  ASSERT_OK(s->infer_shape()(&ctx));
  EXPECT_EQ(ctx.outputs().at("Out").size(), 3u);
  EXPECT_EQ(ctx.outputs().at("Out")[2], (TensorMeta{DataType::kInt64, Shape({4})}));

  op.outputs["Out"] = {"a"};
  EXPECT_OK(s->Validate(&op));
  op.outputs["Out"] = {};
  EXPECT_THAT(s->Validate(&op), StatusIs(absl::StatusCode::kInvalidArgument,
                                         "op 'schema_test_split': missing output 'Out'"));
  op.outputs["Out"] = {"a"};
  op.outputs["Single"] = {"s", "t"};
  EXPECT_THAT(s->Validate(&op),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'schema_test_split': output 'Single' takes one variable, got 2"));
}

TEST(OpRegistry, UnknownOpListsRegistered) {
  EXPECT_THAT(OpRegistry::Global().Find("nope"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("unknown op 'nope'; registered ops: schema_test_scale")));
}

TEST(OpRegistryDeathTest, DuplicateRegistrationCrashes) {
  EXPECT_DEATH(OpRegistry::Global().Register("schema_test_scale"), "registered twice");
}

}  // namespace
}  // namespace tandem
