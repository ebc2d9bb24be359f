// Compiled with -ffp-contract=off (see BUILD): min + (max - min) * u must
// round twice, as on every backend.
#include "backends/common/counter_random.h"

namespace tandem {
namespace {

template <typename T>
void Fill(double min, double max, uint64_t seed, uint64_t first, int64_t n, T* out) {
  const double range = max - min;
  for (int64_t k = 0; k < n; ++k) {
    out[k] = static_cast<T>(min + range * CounterUniform(seed, first + k));
  }
}

}  // namespace

void FillUniform(double min, double max, uint64_t seed, uint64_t first, int64_t n, float* out) {
  Fill(min, max, seed, first, n, out);
}

void FillUniform(double min, double max, uint64_t seed, uint64_t first, int64_t n, double* out) {
  Fill(min, max, seed, first, n, out);
}

}  // namespace tandem
