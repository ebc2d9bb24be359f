// Conformance cases of the training ops: momentum and adam (dense and
// sparse gradients, every attribute path) and gaussian_random.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/testing/tensor_testutil.h"
#include "tests/conformance/case_util.h"
#include "tests/conformance/cases.h"
#include "tests/conformance/reference_training.h"

namespace tandem {
namespace {

using case_util::Input;
using case_util::kFloats;
using case_util::Label;
using case_util::SetTolerance;
using reference::Array;

constexpr double kLr = 0.375;

Tensor LearningRate() { return MakeTensor(DataType::kFloat32, Shape({1}), {kLr}); }

// A gradient input: dense, or sparse rows of Param's rows.
struct GradConfig {
  Shape param;
  bool sparse = false;
  std::vector<int64_t> rows;  // sparse only
};

std::vector<GradConfig> GradConfigs() {
  return {
      {Shape(), false, {}},        // 0-d
      {Shape({0, 3}), false, {}},  // empty
      {Shape({1023}), false, {}},  // odd size
      {Shape({5, 3}), false, {}},
      {Shape({6, 3}), true, {1, 4, 1, 0, 1}},  // duplicates merge before the update
      {Shape({6, 3}), true, {}},               // no rows: nothing changes
      {Shape({6, 3}), true, {5}},
      {Shape({41, 7}), true, {3, 40, 3, 3, 0, 17, 40, 9, 9, 9, 9, 22}},
  };
}

// Sets the case's Grad input from `cfg` and returns the reference gradient.
reference::Gradient AddGrad(const GradConfig& cfg, DataType t, uint64_t seed, ConformanceCase* c) {
  if (!cfg.sparse) {
    auto [grad, ga] = Input(t, cfg.param, seed);
    c->inputs.push_back({"Grad", grad});
    return reference::DenseGradient(ga);
  }
  const Shape value_shape({static_cast<int64_t>(cfg.rows.size()), cfg.param.dim(1)});
  auto [value, va] = Input(t, value_shape, seed);
  c->selected_rows_inputs = {{"Grad", SelectedRows(cfg.param.dim(0), cfg.rows, value)}};
  return reference::SparseGradient(cfg.param, cfg.rows, va);
}

std::string What(const GradConfig& cfg) {
  return absl::StrCat(cfg.param.ToString(),
                      cfg.sparse ? absl::StrCat(" sparse, ", cfg.rows.size(), " rows") : " dense");
}

// Non-negative values (a second moment) and their float64 view.
std::pair<Tensor, Array> NonNegative(DataType t, const Shape& s, uint64_t seed) {
  std::vector<double> v = RandomValues(t, s.num_elements(), seed);
  for (double& x : v) x = std::abs(x);
  Tensor tensor = MakeTensor(t, s, v);
  return {tensor, Array{s, ToDoubles(tensor)}};
}

// GradScale (gradient clipping's factor) is 0.25 in these cases: a power of
// two, so the scaled gradient is exact in every dtype.
constexpr double kGradScale = 0.25;

// `c` with GradScale bound (host memory, Param's dtype `t`).
ConformanceCase WithGradScale(const ConformanceCase& c, DataType t) {
  ConformanceCase s = c;
  s.label += " GradScale 0.25";
  s.inputs.push_back({"GradScale", MakeTensor(t, Shape({1}), {kGradScale})});
  return s;
}

reference::Gradient Scaled(reference::Gradient g) {
  for (double& v : g.dense.values) v *= kGradScale;
  return g;
}

// For a float32 Param: `c` and its GradScale case `scaled` again with Grad
// in bfloat16 and in float16 (a mixed-precision gradient the kernel
// widens); expect(gradient, &case) fills the outputs for the 16-bit values
// (times GradScale for `scaled`).
template <typename Expect>
void AddLowPrecisionGradCases(const ConformanceCase& c, const ConformanceCase& scaled, DataType t,
                              Expect&& expect, std::vector<ConformanceCase>* cases) {
  if (t != DataType::kFloat32) return;
  for (DataType g16 : {DataType::kBFloat16, DataType::kFloat16}) {
    for (const ConformanceCase* base : {&c, &scaled}) {
      reference::Array values;
      ConformanceCase low = case_util::WithLowPrecisionGrad(*base, g16, &values);
      const reference::Gradient g = reference::DenseGradient(values);
      expect(base == &scaled ? Scaled(g) : g, &low);
      cases->push_back(std::move(low));
    }
  }
}

void AddMomentum(std::vector<ConformanceCase>* cases) {
  uint64_t seed = 20000;
  for (DataType t : kFloats) {
    for (const GradConfig& cfg : GradConfigs()) {
      for (bool nesterov : {false, true}) {
        const double mu = 0.875;
        auto [param, pa] = Input(t, cfg.param, ++seed);
        auto [velocity, va] = Input(t, cfg.param, ++seed);
        ConformanceCase c;
        c.op = "momentum";
        c.label = Label(c.op, t, absl::StrCat(What(cfg), nesterov ? " nesterov" : ""));
        c.inputs = {{"Param", param}, {"Velocity", velocity}, {"LearningRate", LearningRate()}};
        const reference::Gradient g = AddGrad(cfg, t, ++seed, &c);
        c.attrs = {{"mu", mu}, {"use_nesterov", nesterov}};
        const reference::MomentumResult r = reference::Momentum(pa, g, va, kLr, mu, nesterov);
        c.expected["ParamOut"] = {t, r.param};
        c.expected["VelocityOut"] = {t, r.velocity};
        SetTolerance(&c, t, 4 * std::max<int64_t>(1, cfg.rows.size()));
        if (!cfg.sparse) {  // gradient clipping's factor
          ConformanceCase s = WithGradScale(c, t);
          const reference::MomentumResult rs =
              reference::Momentum(pa, Scaled(g), va, kLr, mu, nesterov);
          s.expected["ParamOut"] = {t, rs.param};
          s.expected["VelocityOut"] = {t, rs.velocity};
          AddLowPrecisionGradCases(
              c, s, t,
              [&](const reference::Gradient& lg, ConformanceCase* low) {
                const reference::MomentumResult rl =
                    reference::Momentum(pa, lg, va, kLr, mu, nesterov);
                low->expected["ParamOut"] = {t, rl.param};
                low->expected["VelocityOut"] = {t, rl.velocity};
              },
              cases);
          cases->push_back(std::move(s));
        }
        cases->push_back(std::move(c));
      }
    }
  }
}

void AddAdam(std::vector<ConformanceCase>* cases) {
  struct Variant {
    std::string what;
    reference::AdamConfig config;
  };
  std::vector<Variant> variants = {{"defaults", {}}, {"beta1 0", {}}, {"AdamW", {}}, {"L2", {}}};
  variants[1].config.beta1 = 0;
  variants[2].config.weight_decay = 0.25;
  variants[3].config.weight_decay = 0.25;
  variants[3].config.decoupled_weight_decay = false;
  uint64_t seed = 21000;
  for (DataType t : kFloats) {
    for (const GradConfig& cfg : GradConfigs()) {
      for (Variant v : variants) {
        v.config.lr = kLr;
        const reference::AdamConfig& a = v.config;
        // Step 3: beta^3. Beta1Pow 0 (beta1 = 0) has no correction.
        const double beta1_pow = a.beta1 * a.beta1 * a.beta1;
        const double beta2_pow = a.beta2 * a.beta2 * a.beta2;
        auto [param, pa] = Input(t, cfg.param, ++seed);
        auto [m1, m1a] = Input(t, cfg.param, ++seed);
        auto [m2, m2a] = NonNegative(t, cfg.param, ++seed);
        const Tensor b1p = MakeTensor(t, Shape({1}), {beta1_pow});
        const Tensor b2p = MakeTensor(t, Shape({1}), {beta2_pow});
        ConformanceCase c;
        c.op = "adam";
        c.label = Label(c.op, t, absl::StrCat(What(cfg), " ", v.what));
        c.inputs = {{"Param", param},  {"LearningRate", LearningRate()},
                    {"Moment1", m1},   {"Moment2", m2},
                    {"Beta1Pow", b1p}, {"Beta2Pow", b2p}};
        const reference::Gradient g = AddGrad(cfg, t, ++seed, &c);
        c.attrs = {{"beta1", a.beta1},
                   {"beta2", a.beta2},
                   {"epsilon", a.epsilon},
                   {"weight_decay", a.weight_decay},
                   {"decoupled_weight_decay", a.decoupled_weight_decay}};
        const reference::AdamResult r =
            reference::Adam(pa, g, m1a, m2a, ToDoubles(b1p)[0], ToDoubles(b2p)[0], a);
        c.expected["ParamOut"] = {t, r.param};
        c.expected["Moment1Out"] = {t, r.moment1};
        c.expected["Moment2Out"] = {t, r.moment2};
        c.expected["Beta1PowOut"] = {t, Array{Shape({1}), {r.beta1_pow}}};
        c.expected["Beta2PowOut"] = {t, Array{Shape({1}), {r.beta2_pow}}};
        SetTolerance(&c, t, 8 * std::max<int64_t>(1, cfg.rows.size()));
        if (!cfg.sparse) {  // gradient clipping's factor
          ConformanceCase s = WithGradScale(c, t);
          const reference::AdamResult rs =
              reference::Adam(pa, Scaled(g), m1a, m2a, ToDoubles(b1p)[0], ToDoubles(b2p)[0], a);
          s.expected["ParamOut"] = {t, rs.param};
          s.expected["Moment1Out"] = {t, rs.moment1};
          s.expected["Moment2Out"] = {t, rs.moment2};
          AddLowPrecisionGradCases(
              c, s, t,
              [&](const reference::Gradient& lg, ConformanceCase* low) {
                const reference::AdamResult rl =
                    reference::Adam(pa, lg, m1a, m2a, ToDoubles(b1p)[0], ToDoubles(b2p)[0], a);
                low->expected["ParamOut"] = {t, rl.param};
                low->expected["Moment1Out"] = {t, rl.moment1};
                low->expected["Moment2Out"] = {t, rl.moment2};
              },
              cases);
          cases->push_back(std::move(s));
        }
        cases->push_back(std::move(c));
      }
    }
  }
}

void AddGaussianRandom(std::vector<ConformanceCase>* cases) {
  struct Config {
    Shape shape;
    double mean, std;
    int64_t seed;
  };
  const std::vector<Config> configs = {
      {Shape(), 0, 1, 0},
      {Shape({0}), 0, 1, 0},
      {Shape({1023}), 0, 0.02, 42},
      {Shape({3, 5}), 2, 7.5, -7},
      {Shape({4}), -1, 0, 3},  // std 0: every value is the mean
      {Shape({300, 257}), 0.5, 1, 1234567},
  };
  for (DataType t : kFloats) {
    for (const Config& cfg : configs) {
      ConformanceCase c;
      c.op = "gaussian_random";
      c.label = Label(c.op, t,
                      absl::StrCat(cfg.shape.ToString(), " mean ", cfg.mean, " std ", cfg.std,
                                   " seed ", cfg.seed));
      c.attrs = {{"shape", cfg.shape.ToVector()},
                 {"dtype", t},
                 {"mean", cfg.mean},
                 {"std", cfg.std},
                 {"seed", cfg.seed}};
      // Same counters and formula on every backend, but log/cos/sqrt come
      // from each device's math library: equal up to their last-bit
      // rounding (seen on the H200 for float64), so a few ulps of tolerance.
      c.rtol = t == DataType::kFloat64 ? 1e-14 : 1e-6;
      c.atol = t == DataType::kFloat64 ? 1e-15 : 1e-7;
      c.expected["Out"] = {t, reference::GaussianRandom(cfg.shape, t, cfg.mean, cfg.std, cfg.seed)};
      cases->push_back(std::move(c));
    }
  }
}

}  // namespace

void AddTrainingCases(std::vector<ConformanceCase>* cases) {
  AddMomentum(cases);
  AddAdam(cases);
  AddGaussianRandom(cases);
}

}  // namespace tandem
