// Gradient clipping by global norm (Optimizer::EnableGradientClipping): one
// SGD step with clipping equals the unclipped step scaled by min(1, max_norm
// / (norm + 1e-6)), the norm computed in float64 from the unclipped run's
// gradients; a norm below max_norm changes nothing, bit for bit; on cpu,
// sim:0 and with the parameters on the host and the ops on sim:0. Sparse
// gradients are refused by name; offloaded, the norms run where the
// gradients are produced.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "framework/backward/optimizer.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;

const std::vector<std::string> kParams = {"l1.w_0", "l1.b_0", "l2.w_0", "l2.b_0"};

struct Step {
  std::map<std::string, std::vector<double>> before, after, grads;
  double global_norm = -1;
};

// One SGD step (lr 0.5) of a 5 -> 3 -> 1 tanh network on a fixed batch,
// clipped at `max_norm` when > 0; fetches the gradients when not clipped.
Step RunStep(const std::string& place, double max_norm) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({8, 5}));
  Var y = b.Data("y", DataType::kFloat32, Shape({8, 1}));
  Var loss;
  {
    auto params = b.parameters_on(place == "mixed" ? "cpu" : "");
    Var h = b.Tanh(b.Fc(x, 3, 1, true, "l1", Initializer::XavierUniform(7)));
    loss = b.Mean(b.SquareErrorCost(b.Fc(h, 1, 1, true, "l2", Initializer::XavierUniform(8)), y));
  }
  SGD sgd(0.5);
  if (max_norm > 0) sgd.EnableGradientClipping(max_norm);
  EXPECT_OK(sgd.Minimize(&b, loss));
  Executor exe(*ParsePlace(place == "mixed" ? "sim:0" : place));
  Scope scope;
  EXPECT_OK(exe.Run(b.startup_program(), &scope).status());
  Step s;
  for (const std::string& p : kParams) s.before[p] = ToDoubles(scope.Find(p)->tensor());
  std::vector<std::string> fetches;
  if (max_norm > 0) {
    fetches.push_back(sgd.global_norm_var());
  } else {
    for (const std::string& p : kParams) fetches.push_back(p + "@GRAD");
  }
  auto plan = exe.Prepare(b.main_program(), scope, {"x", "y"}, fetches);
  EXPECT_OK(plan.status());
  if (!plan.ok()) return s;
  auto out = exe.Run(plan->get(), &scope,
                     {{"x", RandomTensor(DataType::kFloat32, Shape({8, 5}), 3)},
                      {"y", RandomTensor(DataType::kFloat32, Shape({8, 1}), 4)}});
  EXPECT_OK(out.status());
  if (!out.ok()) return s;
  if (max_norm > 0) {
    s.global_norm = ToDoubles((*out)[0])[0];
  } else {
    for (size_t i = 0; i < kParams.size(); ++i) s.grads[kParams[i]] = ToDoubles((*out)[i]);
  }
  for (const std::string& p : kParams) {
    absl::StatusOr<Tensor> host = CopyTensorTo(scope.Find(p)->tensor(), CPUPlace());
    EXPECT_OK(host.status());
    if (host.ok()) s.after[p] = ToDoubles(*host);
  }
  return s;
}

class GradientClipping : public ::testing::TestWithParam<std::string> {};

TEST_P(GradientClipping, ScalesEveryGradientByTheGlobalFactor) {
  const Step plain = RunStep(GetParam(), 0);
  double squares = 0;
  for (const auto& [p, g] : plain.grads) {
    for (double v : g) squares += v * v;
  }
  const double norm = std::sqrt(squares);
  ASSERT_GT(norm, 0.02);
  const double max_norm = norm / 4;  // clipping on: the factor is about 1/4
  const Step clipped = RunStep(GetParam(), max_norm);
  EXPECT_NEAR(clipped.global_norm, norm, 1e-6 * norm);
  const double factor = max_norm / (norm + 1e-6);
  for (const std::string& p : kParams) {
    ASSERT_EQ(clipped.before.at(p), plain.before.at(p)) << p;  // one initialisation
    const std::vector<double>& g = plain.grads.at(p);
    const std::vector<double>& after = clipped.after.at(p);
    ASSERT_EQ(after.size(), g.size());
    for (size_t i = 0; i < g.size(); ++i) {
      const double want = plain.before.at(p)[i] - 0.5 * g[i] * factor;
      EXPECT_NEAR(after[i], want, 1e-6 * (1 + std::abs(want))) << p << "[" << i << "]";
    }
  }
  // Below the threshold the factor is 1: the step is the unclipped one.
  const Step loose = RunStep(GetParam(), 100 * norm);
  for (const std::string& p : kParams) EXPECT_EQ(loose.after.at(p), plain.after.at(p)) << p;
}

INSTANTIATE_TEST_SUITE_P(Places, GradientClipping, ::testing::Values("cpu", "sim:0", "mixed"),
                         [](const auto& info) {
                           return info.param == "sim:0" ? std::string("sim") : info.param;
                         });

// With the parameters on the host and the ops on sim:0 (optimizer
// offload), each gradient's squared norm runs on sim:0 where the gradient
// is produced: the clip's host kernel reads four scalars copied down, and
// no copy moves a gradient for a norm (the gradients come down once each,
// for the host updates).
TEST(GradientClippingPlacement, OffloadedNormsRunWhereTheGradientsAre) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({8, 5}));
  Var y = b.Data("y", DataType::kFloat32, Shape({8, 1}));
  Var loss;
  {
    auto params = b.parameters_on("cpu");
    Var h = b.Tanh(b.Fc(x, 3, 1, true, "l1", Initializer::XavierUniform(7)));
    loss = b.Mean(b.SquareErrorCost(b.Fc(h, 1, 1, true, "l2", Initializer::XavierUniform(8)), y));
  }
  SGD sgd(0.5);
  sgd.EnableGradientClipping(1.0);
  ASSERT_OK(sgd.Minimize(&b, loss));
  Executor exe(*ParsePlace("sim:0"));
  Scope scope;
  ASSERT_OK(exe.Run(b.startup_program(), &scope).status());
  ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {"x", "y"}, {}));
  const PlacedProgram& placed = plan->placed();
  int norms = 0, updates = 0, clips = 0;
  std::map<std::string, int> copied_down;  // variable -> copies to the host
  for (const PlacementEntry& e : placed.table) {
    if (e.op_type == "global_norm_clip") {
      ++clips;
      EXPECT_EQ(e.place.ToString(), "sim:0") << e.detail;
    }
    if (e.op_type == "squared_l2_norm") {
      ++norms;
      EXPECT_EQ(e.place.ToString(), "sim:0") << e.detail;
      EXPECT_EQ(e.cause, PlacementCause::kGradNorm);
      EXPECT_THAT(e.detail, HasSubstr("where gradient '"));
    }
    if (e.op_type == "sgd") {
      ++updates;
      EXPECT_EQ(e.place, CPUPlace()) << e.detail;
    }
    if (e.copy.has_value() && e.copy->to.is_host()) copied_down[e.copy->var]++;
  }
  EXPECT_EQ(norms, 4);
  EXPECT_EQ(updates, 4);
  EXPECT_EQ(clips, 1);
  // The norms stay on the device with the clip that sums them; only the
  // factor comes down, once, for the four host updates.
  int scales_down = 0;
  for (const auto& [var, copies] : copied_down) {
    if (absl::StartsWith(var, "gradient_clip_scale")) scales_down += copies;
  }
  EXPECT_EQ(scales_down, 1);
  for (const std::string& p : kParams) {
    EXPECT_EQ(copied_down[p + "@GRAD"], 1) << p;
    EXPECT_EQ(copied_down[p + "@GRAD.squared_norm_0.tmp_0"], 0) << p;
  }
}

TEST(GradientClippingErrors, SparseGradientsAndBadNormsAreRefused) {
  ProgramBuilder b;
  Var ids = b.Data("ids", DataType::kInt64, Shape({4}));
  Var loss = b.Mean(b.Embedding(ids, {10, 3}, /*is_sparse=*/true));
  SGD sgd(0.1);
  sgd.EnableGradientClipping(1.0);
  EXPECT_THAT(sgd.Minimize(&b, loss),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("gradient clipping of the sparse gradient")));
  ProgramBuilder b2;
  Var w = b2.CreateParameter("w", DataType::kFloat32, Shape({2}));
  SGD bad(0.1);
  bad.EnableGradientClipping(-1);
  EXPECT_THAT(bad.Minimize(&b2, b2.Mean(w)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the gradient clipping norm must be finite and > 0, got -1")));
}

}  // namespace
}  // namespace tandem
