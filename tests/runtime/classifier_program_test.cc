// Programs built from the model ops (fc, relu, softmax_with_cross_entropy,
// accuracy, the elementwise and reduction ops): what the builder methods
// append, their errors, and a classifier that trains with SGD on the cpu
// and on sim:0 to the same result.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "framework/backward/backward.h"
#include "framework/backward/optimizer.h"
#include "framework/base/status_macros.h"
#include "framework/program/program_builder.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

const VarDesc& Desc(ProgramBuilder& b, const Var& v) {
  const VarDesc* d = b.main_program().block().FindVar(v.name);
  CHECK(d != nullptr) << v.name;
  return *d;
}

const OpDesc& LastOp(ProgramBuilder& b) { return b.main_program().block().ops().back(); }

TEST(ModelOpsBuilder, FcCreatesXavierWeightsAndZeroBias) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({-1, 2, 3}));
  Var h = b.Fc(x, 8);
  ASSERT_OK(b.status());
  EXPECT_EQ(h.name, "fc_0.tmp_0");
  EXPECT_EQ(Desc(b, h).shape, Shape({-1, 8}));
  EXPECT_EQ(LastOp(b).type, "fc");
  EXPECT_EQ(LastOp(b).Input("W"), "fc_0.w_0");
  EXPECT_EQ(LastOp(b).Input("Bias"), "fc_0.b_0");
  EXPECT_EQ(Desc(b, {"fc_0.w_0"}).shape, Shape({6, 8}));
  EXPECT_TRUE(Desc(b, {"fc_0.w_0"}).is_parameter);
  const std::vector<OpDesc>& init = b.startup_program().block().ops();
  ASSERT_EQ(init.size(), 2u);
  EXPECT_EQ(init[0].type, "uniform_random");  // Xavier: sqrt(6 / (6 + 8))
  EXPECT_DOUBLE_EQ(std::get<double>(init[0].attrs.at("max")), std::sqrt(6.0 / 14));
  EXPECT_EQ(init[1].type, "fill_constant");
  EXPECT_EQ(std::get<double>(init[1].attrs.at("value")), 0.0);

  // Named, rows from two dims, no bias.
  Var y = b.Fc(x, 4, /*in_num_col_dims=*/2, /*with_bias=*/false, "head");
  ASSERT_OK(b.status());
  EXPECT_EQ(y.name, "head.tmp_0");
  EXPECT_EQ(Desc(b, y).shape, Shape({-1, 2, 4}));
  EXPECT_EQ(Desc(b, {"head.w_0"}).shape, Shape({3, 4}));
  EXPECT_EQ(LastOp(b).inputs.count("Bias"), 0u);
}

TEST(ModelOpsBuilder, FcErrorsNameTheInputAndProblem) {
  const std::vector<std::pair<Shape, std::string>> bad = {
      {Shape({-1, -1}), "needs known dims from in_num_col_dims 1 on to size W"},
      {Shape({4}), "has rank 1 but in_num_col_dims is 1"},
  };
  for (const auto& [shape, message] : bad) {
    ProgramBuilder b;
    EXPECT_FALSE(b.Fc(b.Data("x", DataType::kFloat32, shape), 3).valid());
    EXPECT_THAT(b.status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("Fc: input 'x' " + shape.ToString() + " " + message)));
  }
  ProgramBuilder b;
  b.Fc(b.Data("ids", DataType::kInt64, Shape({2, 3})), 3);
  EXPECT_THAT(b.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("must be float32 or float64, got int64")));
}

TEST(ModelOpsBuilder, EveryMethodAppendsItsOpWithInferredShapes) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat64, Shape({-1, 3}));
  Var row = b.Data("row", DataType::kFloat64, Shape({3}));
  struct Expect {
    Var out;
    std::string op;
    Shape shape;
  };
  const std::vector<Expect> expected = {
      {b.ElementwiseSub(x, row), "elementwise_sub", Shape({-1, 3})},
      {b.ElementwiseMul(x, row), "elementwise_mul", Shape({-1, 3})},
      {b.ElementwiseDiv(row, x), "elementwise_div", Shape({-1, 3})},
      {b.Relu(x), "relu", Shape({-1, 3})},
      {b.Sigmoid(x), "sigmoid", Shape({-1, 3})},
      {b.Tanh(x), "tanh", Shape({-1, 3})},
      {b.Softmax(x, 0), "softmax", Shape({-1, 3})},
      {b.ReduceSum(x, {-1}), "reduce_sum", Shape({-1})},
      {b.ReduceMean(x, {0}, /*keep_dim=*/true), "reduce_mean", Shape({1, 3})},
      {b.ReduceMean(x), "reduce_mean", Shape({1})},
      {b.Mul(x, b.Data("w", DataType::kFloat64, Shape({3, 2, 2})), 1, 1), "mul", Shape({-1, 2, 2})},
  };
  ASSERT_OK(b.status());
  const std::vector<OpDesc>& ops = b.main_program().block().ops();
  ASSERT_EQ(ops.size(), expected.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    SCOPED_TRACE(expected[i].op);
    EXPECT_EQ(ops[i].type, expected[i].op);
    EXPECT_EQ(ops[i].Output("Out"), expected[i].out.name);
    EXPECT_EQ(Desc(b, expected[i].out).shape, expected[i].shape);
    EXPECT_EQ(Desc(b, expected[i].out).dtype, DataType::kFloat64);
  }
  EXPECT_EQ(std::get<int64_t>(ops[6].attrs.at("axis")), 0);
  EXPECT_TRUE(std::get<bool>(ops[8].attrs.at("keep_dim")));
}

TEST(ModelOpsBuilder, CrossEntropyAndAccuracyOutputsAreStopGradient) {
  ProgramBuilder b;
  Var logits = b.Data("logits", DataType::kFloat32, Shape({-1, 10}));
  Var label = b.Data("label", DataType::kInt64, Shape({-1, 1}));
  Var softmax, correct, total;
  Var loss = b.SoftmaxWithCrossEntropy(logits, label, /*ignore_index=*/3, &softmax);
  Var acc = b.Accuracy(softmax, label, /*k=*/5, &correct, &total);
  ASSERT_OK(b.status());
  EXPECT_EQ(Desc(b, loss).shape, Shape({-1, 1}));
  EXPECT_EQ(Desc(b, softmax).shape, Shape({-1, 10}));
  EXPECT_TRUE(Desc(b, softmax).stop_gradient);
  EXPECT_FALSE(Desc(b, loss).stop_gradient);
  EXPECT_EQ(std::get<int64_t>(b.main_program().block().ops()[0].attrs.at("ignore_index")), 3);
  EXPECT_EQ(Desc(b, acc).dtype, DataType::kFloat32);
  EXPECT_EQ(Desc(b, acc).shape, Shape({1}));
  EXPECT_EQ(Desc(b, correct).dtype, DataType::kInt64);
  EXPECT_EQ(Desc(b, total).shape, Shape({1}));
  for (const Var& v : {acc, correct, total}) EXPECT_TRUE(Desc(b, v).stop_gradient);
  EXPECT_EQ(std::get<int64_t>(LastOp(b).attrs.at("k")), 5);

  ProgramBuilder c;
  EXPECT_FALSE(c.SoftmaxWithCrossEntropy(c.Data("logits", DataType::kFloat32, Shape({4, 10})),
                                         c.Data("label", DataType::kInt32, Shape({4, 1})))
                   .valid());
  EXPECT_THAT(c.status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'softmax_with_cross_entropy': Label must be int64[4, 1] or int64[4] "
                       "for Logits [4, 10], got int32[4, 1]"));
}

// Three well-separated classes in 4-d: class c = i % 3 centred at 2 * e_c,
// with deterministic noise in [-0.5, 0.5).
void MakeData(int n, Tensor* x, Tensor* label) {
  std::vector<double> xs, ls;
  uint64_t state = 12345;
  for (int i = 0; i < n; ++i) {
    for (int d = 0; d < 4; ++d) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const double noise = static_cast<double>(state >> 11) * 0x1.0p-53 - 0.5;
      xs.push_back((d == i % 3 ? 2.0 : 0.0) + noise);
    }
    ls.push_back(i % 3);
  }
  *x = MakeTensor(DataType::kFloat32, Shape({n, 4}), xs);
  *label = MakeTensor(DataType::kInt64, Shape({n, 1}), ls);
}

// Trains fc(16) -> relu -> fc(3) -> softmax_with_cross_entropy -> mean
// with SGD for `steps` full-batch steps on `place`; returns per step
// {loss, accuracy}.
absl::StatusOr<std::vector<std::pair<double, double>>> Train(const Place& place, int steps) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({-1, 4}));
  Var label = b.Data("label", DataType::kInt64, Shape({-1, 1}));
  Var hidden = b.Relu(b.Fc(x, 16));
  Var logits = b.Fc(hidden, 3);
  Var softmax;
  Var loss = b.ReduceMean(b.SoftmaxWithCrossEntropy(logits, label, -100, &softmax));
  Var acc = b.Accuracy(softmax, label);
  RETURN_IF_ERROR(SGD(0.5).Minimize(&b, loss));
  Executor exe(place);
  Scope scope;
  RETURN_IF_ERROR(exe.Run(b.startup_program(), &scope).status());
  ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan,
                   exe.Prepare(b.main_program(), scope, {"x", "label"}, {loss.name, acc.name}));
  Tensor xt, lt;
  MakeData(96, &xt, &lt);
  std::vector<std::pair<double, double>> history;
  for (int step = 0; step < steps; ++step) {
    ASSIGN_OR_RETURN(std::vector<Tensor> out,
                     exe.Run(plan.get(), &scope, {{"x", xt}, {"label", lt}}));
    history.push_back({ToDoubles(out[0])[0], ToDoubles(out[1])[0]});
  }
  return history;
}

TEST(ModelOpsTraining, ClassifierLearnsOnCpuAndSimAlike) {
  ASSERT_OK_AND_ASSIGN(const auto cpu, Train(CPUPlace(), 60));
  ASSERT_OK_AND_ASSIGN(const auto sim, Train(*ParsePlace("sim:0"), 60));
  EXPECT_NEAR(cpu.front().first, std::log(3.0), 0.5);  // about chance at the start
  EXPECT_LT(cpu.back().first, 0.1 * cpu.front().first);
  EXPECT_EQ(cpu.back().second, 1.0);
  ASSERT_EQ(cpu.size(), sim.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    // Same bits in, float32 GEMMs that differ only in rounding order.
    EXPECT_NEAR(cpu[i].first, sim[i].first, 1e-4 * (1 + cpu[i].first)) << "step " << i;
  }
  EXPECT_EQ(sim.back().second, 1.0);
}

}  // namespace
}  // namespace tandem
