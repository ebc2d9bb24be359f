// Float64 references of the training ops: the momentum and adam updates and
// gaussian_random, written independently of the kernels (plain loops over
// the dense arrays).
#ifndef TANDEM_TESTS_CONFORMANCE_REFERENCE_TRAINING_H_
#define TANDEM_TESTS_CONFORMANCE_REFERENCE_TRAINING_H_

#include <cstdint>
#include <vector>

#include "tests/conformance/reference.h"

namespace tandem::reference {

// A gradient as the update ops see it: dense, or sparse rows (value row i
// belongs to row rows[i]; duplicates add) of a [height, ...] tensor.
struct Gradient {
  Array dense;                // the dense gradient (a sparse one densified)
  std::vector<bool> present;  // per row: updated (all true when dense)
};
Gradient DenseGradient(const Array& grad);
Gradient SparseGradient(const Shape& param_shape, const std::vector<int64_t>& rows,
                        const Array& value);

struct MomentumResult {
  Array param, velocity;
};
MomentumResult Momentum(const Array& param, const Gradient& grad, const Array& velocity, double lr,
                        double mu, bool use_nesterov);

struct AdamConfig {
  double lr = 0.001, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8, weight_decay = 0;
  bool decoupled_weight_decay = true;
};
struct AdamResult {
  Array param, moment1, moment2;
  double beta1_pow = 0, beta2_pow = 0;
};
AdamResult Adam(const Array& param, const Gradient& grad, const Array& moment1,
                const Array& moment2, double beta1_pow, double beta2_pow, const AdamConfig& c);

// gaussian_random's values, converted to `dtype`.
Array GaussianRandom(const Shape& shape, DataType dtype, double mean, double std, int64_t seed);

}  // namespace tandem::reference

#endif  // TANDEM_TESTS_CONFORMANCE_REFERENCE_TRAINING_H_
