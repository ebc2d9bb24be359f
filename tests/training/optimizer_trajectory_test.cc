// Optimizer trajectories: 100 training steps of SGD, Momentum (heavy-ball
// and Nesterov) and Adam (plain, AdamW, L2), with dense and sparse
// (SelectedRows) gradients, in float32 and float64, on cpu, on sim:0 and
// with the parameter under device_guard("cpu") while the rest runs on
// sim:0, each step checked against a float64 reference of the same
// updates (tests/conformance/reference_training.h). Also checks where the
// optimizer state lives and that no step copies it.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/backward/optimizer.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"
#include "tests/conformance/reference.h"
#include "tests/conformance/reference_training.h"

namespace tandem {
namespace {

constexpr int64_t kRows = 12, kDim = 4, kBatch = 6;
constexpr int kSteps = 100;

enum class Kind { kSgd, kMomentum, kNesterov, kAdam, kAdamW, kAdamL2 };

struct Config {
  Kind kind;
  bool sparse;
  DataType dtype;
  std::string place;  // "cpu", "sim:0", or "mixed" (parameter on cpu, rest on sim:0)

  std::string Name() const {
    static const char* const kNames[] = {"sgd", "momentum", "nesterov", "adam", "adamw", "adam_l2"};
    return absl::StrCat(kNames[static_cast<int>(kind)], sparse ? "_sparse_" : "_dense_",
                        DataTypeName(dtype), "_", place == "sim:0" ? "sim" : place);
  }
};

constexpr double kMu = 0.9;

// Exact in float32, the learning rate's dtype.
double LearningRate(Kind kind) {
  return kind == Kind::kSgd || kind == Kind::kMomentum || kind == Kind::kNesterov ? 0.5 : 0.0078125;
}

reference::AdamConfig AdamConfigOf(Kind kind) {
  reference::AdamConfig c;
  c.lr = LearningRate(kind);
  c.beta2 = 0.99;
  if (kind != Kind::kAdam) c.weight_decay = 0.1;
  c.decoupled_weight_decay = kind == Kind::kAdamW;
  return c;
}

std::unique_ptr<Optimizer> MakeOptimizer(Kind kind) {
  const double lr = LearningRate(kind);
  switch (kind) {
    case Kind::kSgd:
      return std::make_unique<SGD>(lr);
    case Kind::kMomentum:
    case Kind::kNesterov:
      return std::make_unique<Momentum>(lr, kMu, kind == Kind::kNesterov);
    default: {
      const reference::AdamConfig c = AdamConfigOf(kind);
      AdamOptions o;
      o.beta1 = c.beta1;
      o.beta2 = c.beta2;
      o.epsilon = c.epsilon;
      o.weight_decay = c.weight_decay;
      o.decoupled_weight_decay = c.decoupled_weight_decay;
      return std::make_unique<Adam>(lr, o);
    }
  }
}

// Deterministic step inputs: ids with repeats, labels in [-1, 1).
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
std::vector<int64_t> StepIds(int step) {
  std::vector<int64_t> ids(kBatch);
  for (int64_t i = 0; i < kBatch; ++i) ids[i] = Mix(step * 131 + i) % (kRows / 2) * 2 % kRows;
  return ids;
}
std::vector<double> StepLabels(int step) {
  std::vector<double> labels(kBatch * kDim);
  for (size_t i = 0; i < labels.size(); ++i) {
    labels[i] = static_cast<double>(Mix(step * 7919 + i + 1) >> 11) * 0x1.0p-52 - 1;
  }
  return labels;
}

// The float64 reference: the same model and updates.
class Reference {
 public:
  Reference(const Config& c, std::vector<double> initial)
      : c_(c), w_{Shape({kRows, kDim}), std::move(initial)} {
    zeros_ = reference::Array{w_.shape, std::vector<double>(w_.values.size(), 0.0)};
    state1_ = state2_ = zeros_;
    const reference::AdamConfig a = AdamConfigOf(c.kind);
    beta1_pow_ = a.beta1;
    beta2_pow_ = a.beta2;
  }

  // One step on `ids` and `labels` (the values the kernels see).
  void Step(const std::vector<int64_t>& ids, const std::vector<double>& labels) {
    // loss = mean((W[ids] - labels)^2): d/dW[ids[i]] = 2 (W[ids[i]] - label[i]) / (n * dim).
    reference::Array value{Shape({kBatch, kDim}), std::vector<double>(kBatch * kDim)};
    for (int64_t i = 0; i < kBatch; ++i) {
      for (int64_t j = 0; j < kDim; ++j) {
        value.values[i * kDim + j] =
            2 * (w_.values[ids[i] * kDim + j] - labels[i * kDim + j]) / (kBatch * kDim);
      }
    }
    reference::Gradient g = reference::SparseGradient(w_.shape, ids, value);
    if (!c_.sparse) g = reference::DenseGradient(g.dense);
    const double lr = LearningRate(c_.kind);
    switch (c_.kind) {
      case Kind::kSgd:
        w_ = c_.sparse ? reference::SgdSparse(w_, ids, value, lr)
                       : reference::SgdDense(w_, g.dense, lr);
        break;
      case Kind::kMomentum:
      case Kind::kNesterov: {
        reference::MomentumResult r =
            reference::Momentum(w_, g, state1_, lr, kMu, c_.kind == Kind::kNesterov);
        w_ = r.param;
        state1_ = r.velocity;
        break;
      }
      default: {
        reference::AdamResult r =
            reference::Adam(w_, g, state1_, state2_, beta1_pow_, beta2_pow_, AdamConfigOf(c_.kind));
        w_ = r.param;
        state1_ = r.moment1;
        state2_ = r.moment2;
        beta1_pow_ = r.beta1_pow;
        beta2_pow_ = r.beta2_pow;
        break;
      }
    }
  }

  const std::vector<double>& w() const { return w_.values; }
  double beta1_pow() const { return beta1_pow_; }

 private:
  Config c_;
  reference::Array w_, zeros_, state1_, state2_;
  double beta1_pow_ = 0, beta2_pow_ = 0;
};

class OptimizerTrajectory : public ::testing::TestWithParam<Config> {};

TEST_P(OptimizerTrajectory, HundredStepsFollowTheFloat64Reference) {
  const Config& c = GetParam();
  const bool mixed = c.place == "mixed";
  ASSERT_OK_AND_ASSIGN(const Place place, ParsePlace(mixed ? "sim:0" : c.place));
  const Place param_place = mixed ? CPUPlace() : place;

  ProgramBuilder b;
  Var ids = b.Data("ids", DataType::kInt64, Shape({kBatch}));
  Var label = b.Data("label", c.dtype, Shape({kBatch, kDim}));
  Var emb;
  {
    auto guard = b.device_guard(mixed ? "cpu" : "");
    Var w =
        b.CreateParameter("w", c.dtype, Shape({kRows, kDim}), Initializer::Uniform(-0.5, 0.5, 11));
    emb = b.LookupTable(ids, w, c.sparse);
  }
  Var loss = b.Mean(b.SquareErrorCost(emb, label));
  std::unique_ptr<Optimizer> opt = MakeOptimizer(c.kind);
  ASSERT_OK(opt->Minimize(&b, loss));

  Executor exe(place);
  Scope scope;
  ASSERT_OK(exe.Run(b.startup_program(), &scope).status());
  ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {"ids", "label"}, {}));
  // State lives with the parameter; host scalars on the host.
  EXPECT_EQ(scope.Find("w")->tensor().place(), param_place);
  EXPECT_EQ(scope.Find(opt->learning_rate_var())->tensor().place(), CPUPlace());
  for (const auto& [slot, var] : opt->state_vars("w")) {
    const bool host = slot == "beta1_pow" || slot == "beta2_pow";
    EXPECT_EQ(scope.Find(var)->tensor().place(), host ? CPUPlace() : param_place) << slot;
  }
  EXPECT_EQ(opt->state_vars("w").size(), c.kind == Kind::kSgd        ? 0u
                                         : c.kind <= Kind::kNesterov ? 1u
                                                                     : 4u);

  Reference ref(c, ToDoubles(scope.Find("w")->tensor()));
  const double tol = c.dtype == DataType::kFloat64 ? 1e-12 : 2e-5;
  for (int step = 0; step < kSteps; ++step) {
    const std::vector<int64_t> step_ids = StepIds(step);
    const Tensor ids_t =
        MakeTensor(DataType::kInt64, Shape({kBatch}), {step_ids.begin(), step_ids.end()});
    const Tensor label_t = MakeTensor(c.dtype, Shape({kBatch, kDim}), StepLabels(step));
    RunStats stats;
    ASSERT_OK(exe.Run(plan.get(), &scope, {{"ids", ids_t}, {"label", label_t}}, &stats).status());
    for (const CopyRecord& copy : stats.ledger) {  // never the rate or the state
      EXPECT_NE(copy.var, opt->learning_rate_var()) << "step " << step;
      for (const auto& [slot, var] : opt->state_vars("w")) {
        EXPECT_NE(copy.var, var) << "step " << step;
      }
    }
    ref.Step(step_ids, ToDoubles(label_t));
    const std::vector<double> got = ToDoubles(scope.Find("w")->tensor());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], ref.w()[i], tol * (1 + std::abs(ref.w()[i])))
          << "step " << step << " element " << i;
    }
  }
  if (c.kind >= Kind::kAdam) {
    const Tensor& pow = scope.Find(opt->state_vars("w").at("beta1_pow"))->tensor();
    EXPECT_EQ(pow.place(), CPUPlace());
    // Advanced 100 times in the parameter's dtype.
    EXPECT_NEAR(ToDoubles(pow)[0], ref.beta1_pow(),
                (c.dtype == DataType::kFloat64 ? 1e-13 : 1e-5) * ref.beta1_pow());
    EXPECT_NEAR(ref.beta1_pow(), std::pow(0.9, kSteps + 1), 1e-15);
  }
}

std::vector<Config> AllConfigs() {
  std::vector<Config> configs;
  for (Kind kind :
       {Kind::kSgd, Kind::kMomentum, Kind::kNesterov, Kind::kAdam, Kind::kAdamW, Kind::kAdamL2}) {
    for (bool sparse : {false, true}) {
      for (DataType t : {DataType::kFloat32, DataType::kFloat64}) {
        for (const char* place : {"cpu", "sim:0", "mixed"}) {
          configs.push_back({kind, sparse, t, place});
        }
      }
    }
  }
  return configs;
}

INSTANTIATE_TEST_SUITE_P(AllOptimizers, OptimizerTrajectory, ::testing::ValuesIn(AllConfigs()),
                         [](const ::testing::TestParamInfo<Config>& info) {
                           return info.param.Name();
                         });

// Lazy sparse updates leave rows that no step looks up as initialised,
// while dense Momentum and Adam keep moving rows whose gradient is zero
// once they have state.
TEST(OptimizerTrajectory, SparseIsLazyDenseIsNot) {
  for (bool sparse : {false, true}) {
    ProgramBuilder b;
    Var ids = b.Data("ids", DataType::kInt64, Shape({1}));
    Var w = b.CreateParameter("w", DataType::kFloat64, Shape({3, 2}), Initializer::Constant(1));
    Var loss = b.Mean(b.LookupTable(ids, w, sparse));
    Momentum momentum(0.5, 0.9);
    ASSERT_OK(momentum.Minimize(&b, loss));
    Executor exe(CPUPlace());
    Scope scope;
    ASSERT_OK(exe.Run(b.startup_program(), &scope).status());
    ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {"ids"}, {}));
    for (int64_t id : {0, 1}) {  // row 0, then row 1; row 2 never
      ASSERT_OK(exe.Run(plan.get(), &scope,
                        {{"ids", MakeTensor(DataType::kInt64, Shape({1}), {double(id)})}})
                    .status());
    }
    // d loss / d w[id] = 1/2 per element. Step 1: v0 = 0.5, w0 = 1 - 0.25.
    // Step 2 (id 1): dense: v0 = 0.45, w0 = 0.75 - 0.225; sparse: row 0 untouched.
    const std::vector<double> got = ToDoubles(scope.Find("w")->tensor());
    EXPECT_DOUBLE_EQ(got[0], sparse ? 0.75 : 0.525) << (sparse ? "sparse" : "dense");
    EXPECT_DOUBLE_EQ(got[2], 0.75);
    EXPECT_DOUBLE_EQ(got[4], 1.0);
  }
}

TEST(Optimizers, BadHyperParametersAreInvalidArgument) {
  auto minimize = [](Optimizer* opt) {
    ProgramBuilder b;
    Var w = b.CreateParameter("w", DataType::kFloat32, Shape({2}));
    return opt->Minimize(&b, b.Mean(w));
  };
  Momentum negative_mu(0.1, -1);
  EXPECT_THAT(minimize(&negative_mu),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'momentum': attribute 'mu' must be finite and >= 0, got -1"));
  AdamOptions o;
  o.beta2 = 1;
  Adam bad_beta(0.1, o);
  EXPECT_THAT(minimize(&bad_beta),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'adam': attribute 'beta2' must be in [0, 1), got 1"));
  Adam zero_lr(0);
  EXPECT_THAT(minimize(&zero_lr), StatusIs(absl::StatusCode::kInvalidArgument,
                                           "adam: learning rate must be finite and > 0, got 0"));
}

}  // namespace
}  // namespace tandem
