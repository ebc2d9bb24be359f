#include "tests/conformance/reference_training.h"

#include <cmath>

namespace tandem::reference {
namespace {

int64_t RowWidth(const Shape& s) {
  return s.rank() == 0 || s.dim(0) == 0 ? 1 : s.num_elements() / s.dim(0);
}

bool Updated(const Gradient& g, int64_t element, int64_t width) {
  return g.present[g.present.size() == 1 ? 0 : element / width];
}

// SplitMix64 of the counter i + 1 offset by the seed, in [0, 1).
double Uniform(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) / 9007199254740992.0;  // 2^53
}

}  // namespace

Gradient DenseGradient(const Array& grad) {
  const int64_t rows = grad.shape.rank() == 0 ? 1 : grad.shape.dim(0);
  return {grad, std::vector<bool>(rows, true)};
}

Gradient SparseGradient(const Shape& param_shape, const std::vector<int64_t>& rows,
                        const Array& value) {
  Gradient g{Array{param_shape, std::vector<double>(param_shape.num_elements(), 0.0)},
             std::vector<bool>(param_shape.dim(0), false)};
  const int64_t width = RowWidth(param_shape);
  for (size_t i = 0; i < rows.size(); ++i) {
    g.present[rows[i]] = true;
    for (int64_t j = 0; j < width; ++j) {
      g.dense.values[rows[i] * width + j] += value.values[i * width + j];
    }
  }
  return g;
}

MomentumResult Momentum(const Array& param, const Gradient& grad, const Array& velocity, double lr,
                        double mu, bool use_nesterov) {
  MomentumResult r{param, velocity};
  const int64_t width = RowWidth(param.shape);
  for (size_t i = 0; i < param.values.size(); ++i) {
    if (!Updated(grad, i, width)) continue;
    const double g = grad.dense.values[i];
    const double v = mu * velocity.values[i] + g;
    r.velocity.values[i] = v;
    r.param.values[i] = param.values[i] - lr * (use_nesterov ? g + mu * v : v);
  }
  return r;
}

AdamResult Adam(const Array& param, const Gradient& grad, const Array& moment1,
                const Array& moment2, double beta1_pow, double beta2_pow, const AdamConfig& c) {
  AdamResult r{param, moment1, moment2, beta1_pow * c.beta1, beta2_pow * c.beta2};
  const int64_t width = RowWidth(param.shape);
  for (size_t i = 0; i < param.values.size(); ++i) {
    if (!Updated(grad, i, width)) continue;
    const double p = param.values[i];
    const double g = grad.dense.values[i] + (c.decoupled_weight_decay ? 0 : c.weight_decay * p);
    const double m = c.beta1 * moment1.values[i] + (1 - c.beta1) * g;
    const double v = c.beta2 * moment2.values[i] + (1 - c.beta2) * g * g;
    const double m_hat = m / (1 - beta1_pow);
    const double v_hat = v / (1 - beta2_pow);
    const double decayed = c.decoupled_weight_decay ? p - c.lr * c.weight_decay * p : p;
    r.moment1.values[i] = m;
    r.moment2.values[i] = v;
    r.param.values[i] = decayed - c.lr * m_hat / (std::sqrt(v_hat) + c.epsilon);
  }
  return r;
}

Array GaussianRandom(const Shape& shape, DataType dtype, double mean, double std, int64_t seed) {
  Array out{shape, {}};
  const double pi = std::acos(-1.0);
  for (uint64_t i = 0; i < static_cast<uint64_t>(shape.num_elements()); ++i) {
    const double u1 = Uniform(static_cast<uint64_t>(seed), 2 * i);
    const double u2 = Uniform(static_cast<uint64_t>(seed), 2 * i + 1);
    const double radius = std::sqrt(-2 * std::log(1 - u1));
    out.values.push_back(Convert(mean + std * (radius * std::cos(2 * pi * u2)), dtype));
  }
  return out;
}

}  // namespace tandem::reference
