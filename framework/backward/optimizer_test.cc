// The optimizers' Minimize on a program of test ops: the learning rate, the
// state each optimizer creates and how the startup program initialises it,
// the update ops, and the checks. The update schemas registered here stand
// in for ops/optimizer (framework/ links no real op schemas); only their
// argument lists and one hyper-parameter check matter.
#include "framework/backward/optimizer.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

absl::Status ParamOutLikeParam(InferShapeContext* ctx) {
  ASSIGN_OR_RETURN(TensorMeta param, ctx->Input("Param"));
  ASSIGN_OR_RETURN(TensorMeta grad, ctx->Input("Grad"));
  if (!(grad.shape == param.shape)) return ctx->Error("Grad and Param differ in shape");
  ctx->SetOutput("ParamOut", param);
  return absl::OkStatus();
}

REGISTER_OP("sgd")
    .Input("Param")
    .Input("Grad")
    .Input("LearningRate")
    .Output("ParamOut")
    .SetInferShape(ParamOutLikeParam);

REGISTER_OP("momentum")
    .Input("Param")
    .Input("Grad")
    .Input("LearningRate")
    .Input("Velocity")
    .Output("ParamOut")
    .Output("VelocityOut")
    .Attr<double>("mu", 0.9)
    .Attr<bool>("use_nesterov", false)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(double mu, ctx->Attr<double>("mu"));
      if (!(mu >= 0)) return ctx->Error(absl::StrCat("mu must be >= 0, got ", mu));
      return ParamOutLikeParam(ctx);
    });

REGISTER_OP("adam")
    .Input("Param")
    .Input("Grad")
    .Input("LearningRate")
    .Input("Moment1")
    .Input("Moment2")
    .Input("Beta1Pow")
    .Input("Beta2Pow")
    .Output("ParamOut")
    .Output("Moment1Out")
    .Output("Moment2Out")
    .Output("Beta1PowOut")
    .Output("Beta2PowOut")
    .Attr<double>("beta1", 0.9)
    .Attr<double>("beta2", 0.999)
    .Attr<double>("epsilon", 1e-8)
    .Attr<double>("weight_decay", 0.0)
    .Attr<bool>("decoupled_weight_decay", true)
    .SetInferShape(ParamOutLikeParam);

// Out = mean(X * W), W broadcast along X's rows; each gradient has its
// input's shape.
REGISTER_OP("opt_scaled_mean")
    .Input("X")
    .Input("W")
    .Output("Out")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
      ctx->SetOutput("Out", {x.dtype, Shape({1})});
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      OpDesc g;
      g.type = "opt_scaled_mean_grad";
      g.inputs = {{"X", fwd.inputs.at("X")}, {"W", fwd.inputs.at("W")}};
      g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
      for (const char* arg : {"X", "W"}) {
        if (ctx.Wants(fwd.Input(arg))) g.outputs[GradVarName(arg)] = {GradVarName(fwd.Input(arg))};
      }
      return std::vector<OpDesc>{g};
    });
REGISTER_OP("opt_scaled_mean_grad")
    .Input("X")
    .Input("W")
    .Input("Out@GRAD")
    .OptionalOutput("X@GRAD")
    .OptionalOutput("W@GRAD")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      for (const char* arg : {"X", "W"}) {
        ASSIGN_OR_RETURN(TensorMeta meta, ctx->Input(arg));
        ctx->SetOutput(GradVarName(arg), meta);
      }
      return absl::OkStatus();
    });

// A builder with loss = mean(x * w) + mean(x * b), parameters "w" and "b"
// of shape [3], built under device_guard("cpu").
struct Model {
  ProgramBuilder b;
  Var loss;
  Model() {
    auto guard = b.device_guard("cpu");
    Var x = b.Data("x", DataType::kFloat32, Shape({4, 3}));
    Var w = b.CreateParameter("w", DataType::kFloat32, Shape({3}));
    Var bias = b.CreateParameter("b", DataType::kFloat32, Shape({3}));
    Var lw = b.AppendOp("opt_scaled_mean", {{"X", {x}}, {"W", {w}}}, {}, {"Out"})["Out"][0];
    loss = b.AppendOp("opt_scaled_mean", {{"X", {lw}}, {"W", {bias}}}, {}, {"Out"})["Out"][0];
  }
  const Block& main() { return b.main_program().block(); }
  const Block& startup() { return b.startup_program().block(); }
  // The startup op initialising `var`; nullptr if none.
  const OpDesc* Init(const std::string& var) {
    for (const OpDesc& op : startup().ops()) {
      if (op.Output("Out") == var) return &op;
    }
    return nullptr;
  }
  // The update ops, in program order.
  std::vector<const OpDesc*> Updates() {
    std::vector<const OpDesc*> ops;
    for (const OpDesc& op : main().ops()) {
      if (op.role == OpRole::kOptimize) ops.push_back(&op);
    }
    return ops;
  }
};

double Value(const OpDesc& fill) { return std::get<double>(fill.attrs.at("value")); }

TEST(SGD, LearningRateIsAHostConstantAndEachParameterGetsOneUpdate) {
  Model m;
  SGD sgd(0.25);
  ASSERT_OK(sgd.Minimize(&m.b, m.loss));

  EXPECT_EQ(sgd.learning_rate_var(), "learning_rate_0.tmp_0");
  const VarDesc* lr = m.main().FindVar(sgd.learning_rate_var());
  ASSERT_NE(lr, nullptr);
  EXPECT_TRUE(lr->persistable);
  EXPECT_FALSE(lr->is_parameter);
  EXPECT_EQ(lr->shape, Shape({1}));
  const OpDesc* init = m.Init(sgd.learning_rate_var());
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(init->type, "fill_constant");
  EXPECT_EQ(Value(*init), 0.25);
  // Outside the caller's device_guard: the placer's host-state rule places it.
  EXPECT_EQ(init->op_device, "");
  EXPECT_EQ(init->origin, (OpOrigin{OpOrigin::Kind::kHostState, -1, ""}));

  std::vector<const OpDesc*> updates = m.Updates();
  ASSERT_EQ(updates.size(), 2u);
  for (const OpDesc* op : updates) {
    const std::string param = op->Input("Param");
    EXPECT_EQ(op->type, "sgd");
    EXPECT_EQ(op->Input("Grad"), param + "@GRAD");
    EXPECT_EQ(op->Input("LearningRate"), sgd.learning_rate_var());
    EXPECT_EQ(op->Output("ParamOut"), param);  // in place
    EXPECT_EQ(op->origin, (OpOrigin{OpOrigin::Kind::kUpdateOf, -1, param}));
    EXPECT_EQ(op->op_device, "");
  }
  // In the order the program reads the parameters (w, then b), so that a
  // pipelined next step's forward finds its first weights updated first.
  EXPECT_EQ(updates[0]->Input("Param"), "w");
  EXPECT_EQ(updates[1]->Input("Param"), "b");
  // The updates come after every backward op.
  EXPECT_EQ(m.main().ops().back().role, OpRole::kOptimize);
  EXPECT_EQ(m.main().ops()[m.main().ops().size() - 3].type, "opt_scaled_mean_grad");
  EXPECT_THAT(sgd.state_vars("w"), IsEmpty());
}

TEST(Momentum, VelocityIsZeroStateBesideItsParameter) {
  Model m;
  Momentum momentum(0.1, 0.75, /*use_nesterov=*/true);
  ASSERT_OK(momentum.Minimize(&m.b, m.loss));

  EXPECT_THAT(momentum.state_vars("w"), ElementsAre(Pair("velocity", "w_velocity_0.tmp_0")));
  EXPECT_THAT(momentum.state_vars("b"), ElementsAre(Pair("velocity", "b_velocity_0.tmp_0")));
  EXPECT_THAT(momentum.state_vars("nope"), IsEmpty());
  const VarDesc* v = m.main().FindVar("w_velocity_0.tmp_0");
  ASSERT_NE(v, nullptr);
  EXPECT_TRUE(v->persistable);
  EXPECT_EQ(v->shape, Shape({3}));
  const OpDesc* init = m.Init("w_velocity_0.tmp_0");
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(Value(*init), 0.0);
  EXPECT_EQ(init->origin, (OpOrigin{OpOrigin::Kind::kStateOf, -1, "w"}));
  EXPECT_EQ(init->op_device, "");

  std::vector<const OpDesc*> updates = m.Updates();
  ASSERT_EQ(updates.size(), 2u);
  const OpDesc& w_update = *updates[0];
  EXPECT_EQ(w_update.type, "momentum");
  EXPECT_EQ(w_update.Input("Velocity"), "w_velocity_0.tmp_0");
  EXPECT_EQ(w_update.Output("VelocityOut"), "w_velocity_0.tmp_0");
  EXPECT_EQ(std::get<double>(w_update.attrs.at("mu")), 0.75);
  EXPECT_EQ(std::get<bool>(w_update.attrs.at("use_nesterov")), true);
}

TEST(Adam, MomentsBesideTheParameterAndBetaPowersOnTheHost) {
  Model m;
  AdamOptions options;
  options.beta1 = 0.8;
  options.beta2 = 0.99;
  options.epsilon = 1e-6;
  options.weight_decay = 0.01;
  options.decoupled_weight_decay = false;
  Adam adam(1e-3, options);
  ASSERT_OK(adam.Minimize(&m.b, m.loss));

  const std::map<std::string, std::string>& state = adam.state_vars("w");
  EXPECT_THAT(state, ElementsAre(Pair("beta1_pow", "w_beta1_pow_0.tmp_0"),
                                 Pair("beta2_pow", "w_beta2_pow_0.tmp_0"),
                                 Pair("moment1", "w_moment1_0.tmp_0"),
                                 Pair("moment2", "w_moment2_0.tmp_0")));
  for (const char* slot : {"moment1", "moment2"}) {
    const OpDesc* init = m.Init(state.at(slot));
    ASSERT_NE(init, nullptr) << slot;
    EXPECT_EQ(Value(*init), 0.0);
    EXPECT_EQ(std::get<std::vector<int64_t>>(init->attrs.at("shape")), (std::vector<int64_t>{3}));
    EXPECT_EQ(init->origin, (OpOrigin{OpOrigin::Kind::kStateOf, -1, "w"}));
  }
  // beta^t starts at beta (t = 1 at the first step), a host scalar.
  const OpDesc* beta1_pow = m.Init(state.at("beta1_pow"));
  const OpDesc* beta2_pow = m.Init(state.at("beta2_pow"));
  ASSERT_NE(beta1_pow, nullptr);
  ASSERT_NE(beta2_pow, nullptr);
  EXPECT_DOUBLE_EQ(Value(*beta1_pow), 0.8);
  EXPECT_DOUBLE_EQ(Value(*beta2_pow), 0.99);
  EXPECT_EQ(std::get<std::vector<int64_t>>(beta1_pow->attrs.at("shape")),
            (std::vector<int64_t>{1}));
  EXPECT_EQ(beta1_pow->origin, (OpOrigin{OpOrigin::Kind::kHostState, -1, ""}));

  const OpDesc& w_update = *m.Updates()[0];
  EXPECT_EQ(w_update.type, "adam");
  EXPECT_EQ(w_update.Input("Moment2"), state.at("moment2"));
  EXPECT_EQ(w_update.Output("Beta1PowOut"), state.at("beta1_pow"));
  EXPECT_DOUBLE_EQ(std::get<double>(w_update.attrs.at("beta1")), 0.8);
  EXPECT_DOUBLE_EQ(std::get<double>(w_update.attrs.at("beta2")), 0.99);
  EXPECT_DOUBLE_EQ(std::get<double>(w_update.attrs.at("epsilon")), 1e-6);
  EXPECT_DOUBLE_EQ(std::get<double>(w_update.attrs.at("weight_decay")), 0.01);
  EXPECT_EQ(std::get<bool>(w_update.attrs.at("decoupled_weight_decay")), false);
}

TEST(Optimizer, LearningRateMustBeFiniteAndPositive) {
  for (double lr : {0.0, -0.5, std::nan(""), std::numeric_limits<double>::infinity()}) {
    Model m;
    const size_t ops_before = m.main().ops().size();
    EXPECT_THAT(
        SGD(lr).Minimize(&m.b, m.loss),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 HasSubstr(absl::StrCat("sgd: learning rate must be finite and > 0, got ", lr))));
    EXPECT_EQ(m.main().ops().size(), ops_before) << "lr " << lr;  // nothing appended
  }
}

TEST(Optimizer, HyperParametersAreCheckedByTheUpdateSchema) {
  Model m;
  EXPECT_THAT(Momentum(0.1, -0.5).Minimize(&m.b, m.loss),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("op 'momentum': mu must be >= 0, got -0.5")));
}

TEST(Optimizer, BuilderErrorIsReturned) {
  Model m;
  m.b.AppendOp("no_such_op", {}, {}, {"Out"});
  EXPECT_THAT(SGD(0.1).Minimize(&m.b, m.loss), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                        HasSubstr("the program has an error")));
}

}  // namespace
}  // namespace tandem
