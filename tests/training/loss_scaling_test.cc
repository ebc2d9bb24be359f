// Dynamic loss scaling (Optimizer::EnableDynamicLossScaling) end to end on
// cpu and sim:0: a power-of-two scale changes nothing in float32 (bit for
// bit, SGD and Adam); a step whose gradients hold inf or NaN is skipped
// (parameters, moments and beta powers as they were), the scale backs off
// and grows again after good steps; float16 AMP trains with it; data
// parallelism refuses it.
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "framework/amp/amp.h"
#include "framework/backward/optimizer.h"
#include "framework/parallel/data_parallel.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kBatch = 16, kIn = 8, kHidden = 16, kClasses = 3;

enum class Opt { kSgd, kAdam };

struct Setup {
  std::optional<DataType> amp;
  Opt opt = Opt::kSgd;
  std::optional<LossScalingOptions> scaling;
};

struct Model {
  ProgramBuilder b;
  Var loss;
  std::unique_ptr<Optimizer> optimizer;
};

void Build(const Setup& s, Model* m) {
  ProgramBuilder& b = m->b;
  Var x = b.Data("x", DataType::kFloat32, Shape({kBatch, kIn}));
  Var label = b.Data("label", DataType::kInt64, Shape({kBatch, 1}));
  Var h = b.Tanh(b.Fc(x, kHidden, 1, true, "layer1", Initializer::XavierUniform(21)));
  Var logits = b.Fc(h, kClasses, 1, true, "layer2", Initializer::XavierUniform(22));
  m->loss = b.Mean(b.SoftmaxWithCrossEntropy(logits, label));
  ASSERT_OK(b.status());
  if (s.amp.has_value()) {
    ASSERT_OK(ApplyAmp(AmpOptions{*s.amp}, &b.main_program()).status());
  }
  if (s.opt == Opt::kSgd) {
    m->optimizer = std::make_unique<SGD>(0.5);
  } else {
    m->optimizer = std::make_unique<Adam>(0.01);
  }
  if (s.scaling.has_value()) m->optimizer->EnableDynamicLossScaling(*s.scaling);
  ASSERT_OK(m->optimizer->Minimize(&b, m->loss));
}

// Batch `step`; its input 5 replaced by `poison` when one is given.
std::pair<Tensor, Tensor> Batch(int step, std::optional<double> poison = std::nullopt) {
  std::vector<double> xs = RandomValues(DataType::kFloat32, kBatch * kIn, 300 + step);
  if (poison.has_value()) xs[5] = *poison;
  std::vector<int64_t> labels(kBatch);
  for (int64_t r = 0; r < kBatch; ++r) labels[r] = (xs[r * kIn] > 0) + (xs[r * kIn + 1] > 0);
  return {MakeTensor(DataType::kFloat32, Shape({kBatch, kIn}), xs),
          Tensor::FromVector<int64_t>(Shape({kBatch, 1}), labels)};
}

// Runs a model step by step; `Step` returns the loss, `Values` a variable.
class Trainer {
 public:
  Trainer(const Setup& s, const Place& place) : exe_(place) {
    Build(s, &m_);
    EXPECT_OK(exe_.Run(m_.b.startup_program(), &scope_).status());
    absl::StatusOr<std::unique_ptr<Plan>> plan =
        exe_.Prepare(m_.b.main_program(), scope_, {"x", "label"}, {m_.loss.name});
    EXPECT_OK(plan.status());
    if (plan.ok()) plan_ = *std::move(plan);
  }

  double Step(int step, std::optional<double> poison = std::nullopt) {
    auto [x, label] = Batch(step, poison);
    absl::StatusOr<std::vector<Tensor>> out =
        exe_.Run(plan_.get(), &scope_, {{"x", x}, {"label", label}}, &stats_);
    EXPECT_OK(out.status());
    return out.ok() ? ToDoubles((*out)[0])[0] : std::nan("");
  }

  std::vector<double> Values(const std::string& var) {
    const Variable* v = scope_.Find(var);
    EXPECT_NE(v, nullptr) << var;
    return v == nullptr ? std::vector<double>() : ToDoubles(v->tensor());
  }

  // What the last step reported (RunStats::reports), -1 where absent.
  double Reported(const std::string& name) const {
    auto it = stats_.reports.find(name);
    return it == stats_.reports.end() ? -1 : it->second;
  }
  const RunStats& stats() const { return stats_; }

  const Optimizer& optimizer() const { return *m_.optimizer; }
  const LossScalingVars& vars() const { return m_.optimizer->loss_scaling_vars(); }

 private:
  Model m_;
  Executor exe_;
  Scope scope_;
  std::unique_ptr<Plan> plan_;
  RunStats stats_;
};

class LossScaling : public ::testing::TestWithParam<std::string> {
 protected:
  Place place() const {
    absl::StatusOr<Place> p = ParsePlace(GetParam());
    EXPECT_OK(p.status());
    return p.ok() ? *p : CPUPlace();
  }
};

TEST_P(LossScaling, APowerOfTwoScaleChangesNothingInFloat32) {
  for (Opt opt : {Opt::kSgd, Opt::kAdam}) {
    SCOPED_TRACE(opt == Opt::kSgd ? "sgd" : "adam");
    LossScalingOptions scaling;
    scaling.initial_scale = 1024;
    scaling.growth_interval = 3;  // grows to 2048, 4096 on the way: still exact
    Trainer plain({std::nullopt, opt, std::nullopt}, place());
    Trainer scaled({std::nullopt, opt, scaling}, place());
    for (int step = 0; step < 8; ++step) {
      EXPECT_EQ(plain.Step(step), scaled.Step(step)) << "step " << step;
    }
    for (const char* w : {"layer1.w_0", "layer1.b_0", "layer2.w_0"}) {
      EXPECT_EQ(plain.Values(w), scaled.Values(w)) << w;
    }
    EXPECT_EQ(scaled.Values(scaled.vars().scale), std::vector<double>{4096});
    EXPECT_EQ(scaled.Values(scaled.vars().good_steps), std::vector<double>{2});
    EXPECT_EQ(scaled.Reported("loss_scaling"), 4096);  // RunStats says it too
    EXPECT_EQ(scaled.Reported("step_skipped"), 0);
    EXPECT_TRUE(plain.stats().reports.empty());  // nothing to report without scaling
  }
}

TEST_P(LossScaling, AnInfiniteGradientSkipsTheStepAndBacksOff) {
  LossScalingOptions scaling;
  scaling.initial_scale = 256;
  scaling.growth_interval = 2;
  Trainer t({std::nullopt, Opt::kAdam, scaling}, place());
  t.Step(0);
  const std::string m1 = t.optimizer().state_vars("layer1.w_0").at("moment1");
  const std::string beta1_pow = t.optimizer().state_vars("layer1.w_0").at("beta1_pow");
  const std::vector<double> w = t.Values("layer1.w_0"), b2 = t.Values("layer2.b_0");
  const std::vector<double> moment = t.Values(m1), pow = t.Values(beta1_pow);
  EXPECT_EQ(t.Values(t.vars().good_steps), std::vector<double>{1});
  // A NaN among the inputs: the loss and the gradients are NaN.
  const double loss = t.Step(1, /*poison=*/std::numeric_limits<double>::quiet_NaN());
  EXPECT_FALSE(std::isfinite(loss));
  EXPECT_EQ(t.Values(t.vars().step_skipped), std::vector<double>{1});
  EXPECT_EQ(t.Values(t.vars().scale), std::vector<double>{128});
  EXPECT_EQ(t.Reported("step_skipped"), 1);
  EXPECT_EQ(t.Reported("loss_scaling"), 128);
  EXPECT_EQ(t.Values(t.vars().good_steps), std::vector<double>{0});
  EXPECT_EQ(t.Values("layer1.w_0"), w);  // nothing moved
  EXPECT_EQ(t.Values("layer2.b_0"), b2);
  EXPECT_EQ(t.Values(m1), moment);
  EXPECT_EQ(t.Values(beta1_pow), pow);  // Adam's step count did not advance
  // Good steps again: trained, and the scale grows back after two of them.
  EXPECT_TRUE(std::isfinite(t.Step(2)));
  EXPECT_EQ(t.Values(t.vars().step_skipped), std::vector<double>{0});
  EXPECT_EQ(t.Reported("step_skipped"), 0);
  EXPECT_NE(t.Values("layer1.w_0"), w);
  EXPECT_EQ(t.Values(t.vars().scale), std::vector<double>{128});
  t.Step(3);
  EXPECT_EQ(t.Values(t.vars().scale), std::vector<double>{256});
  EXPECT_EQ(t.Reported("loss_scaling"), 256);
}

TEST_P(LossScaling, Float16AmpTrainsWithTheDefaultScale) {
  Trainer t({DataType::kFloat16, Opt::kSgd, LossScalingOptions{}}, place());
  const double first = t.Step(0);
  double last = first;
  for (int step = 1; step < 40; ++step) last = t.Step(step);
  EXPECT_LT(last, 0.7 * first);
  EXPECT_EQ(t.Values(t.vars().scale), std::vector<double>{65536});  // no overflow
  EXPECT_EQ(t.Values(t.vars().good_steps), std::vector<double>{40});
  EXPECT_EQ(t.Values(t.vars().step_skipped), std::vector<double>{0});
}

INSTANTIATE_TEST_SUITE_P(Places, LossScaling, ::testing::Values("cpu", "sim:0"),
                         [](const auto& info) { return info.param == "cpu" ? "cpu" : "sim"; });

TEST(LossScalingErrors, DataParallelRefusesItAndBadOptionsAreNamed) {
  Model m;
  Build({DataType::kFloat16, Opt::kSgd, LossScalingOptions{}}, &m);
  DataParallelOptions options;
  options.places = {CPUPlace(), CPUPlace()};
  EXPECT_THAT(DataParallel::Create(m.b.main_program(), m.b.startup_program(), {"x", "label"},
                                   {m.loss.name}, options)
                  .status(),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("dynamic loss scaling (float16 AMP) is not supported")));
  LossScalingOptions bad;
  bad.backoff_factor = 1.5;
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 3}));
  Var loss = b.Mean(b.Fc(x, 1, 1, true, "fc"));
  SGD sgd(0.1);
  sgd.EnableDynamicLossScaling(bad);
  EXPECT_THAT(sgd.Minimize(&b, loss),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("op 'update_loss_scaling': attribute 'backoff_factor'")));
}

}  // namespace
}  // namespace tandem
