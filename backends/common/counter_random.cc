// Compiled with -ffp-contract=off (see BUILD): min + (max - min) * u and
// mean + std * z must round twice, as on every backend.
#include "backends/common/counter_random.h"

#include <cmath>

namespace tandem {
namespace {

template <typename T>
void Fill(double min, double max, uint64_t seed, uint64_t first, int64_t n, T* out) {
  const double range = max - min;
  for (int64_t k = 0; k < n; ++k) {
    out[k] = static_cast<T>(min + range * CounterUniform(seed, first + k));
  }
}

template <typename T>
void Gaussian(double mean, double std, uint64_t seed, uint64_t first, int64_t n, T* out) {
  constexpr double kTwoPi = 6.283185307179586;
  for (int64_t k = 0; k < n; ++k) {
    const uint64_t i = first + k;
    const double u1 = CounterUniform(seed, 2 * i);
    const double u2 = CounterUniform(seed, 2 * i + 1);
    const double z = std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(kTwoPi * u2);
    out[k] = static_cast<T>(mean + std * z);
  }
}

}  // namespace

void FillUniform(double min, double max, uint64_t seed, uint64_t first, int64_t n, float* out) {
  Fill(min, max, seed, first, n, out);
}

void FillUniform(double min, double max, uint64_t seed, uint64_t first, int64_t n, double* out) {
  Fill(min, max, seed, first, n, out);
}

void FillGaussian(double mean, double std, uint64_t seed, uint64_t first, int64_t n, float* out) {
  Gaussian(mean, std, seed, first, n, out);
}

void FillGaussian(double mean, double std, uint64_t seed, uint64_t first, int64_t n, double* out) {
  Gaussian(mean, std, seed, first, n, out);
}

}  // namespace tandem
