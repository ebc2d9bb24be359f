// The counter-based generators of uniform_random and gaussian_random:
// element i of a tensor is a pure function of (seed, i), so every backend
// and every thread count produces the same bits.
//
//   double u = CounterUniform(seed, i);                    // in [0, 1)
//   FillUniform(-0.05, 0.05, seed, /*first=*/0, n, out);   // float or double
//   FillGaussian(0.0, 0.02, seed, /*first=*/0, n, out);    // float or double
//
// Stateless and thread-safe.
#ifndef TANDEM_BACKENDS_COMMON_COUNTER_RANDOM_H_
#define TANDEM_BACKENDS_COMMON_COUNTER_RANDOM_H_

#include <cstdint>

namespace tandem {

// SplitMix64 of counter i + 1 offset by the seed, 64 random bits:
//   z = seed + (i + 1) * 0x9E3779B97F4A7C15
//   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
//   z = (z ^ (z >> 27)) * 0x94D049BB133111EB
//   z ^= z >> 31
inline uint64_t CounterBits(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// CounterBits as a double in [0, 1) with 53 random bits:
// u = (z >> 11) * 2^-53.
inline double CounterUniform(uint64_t seed, uint64_t i) {
  return static_cast<double>(CounterBits(seed, i) >> 11) * 0x1.0p-53;  // exact
}

// The seed of stream `stream` (e.g. a training step) of a generator seeded
// with `seed`: CounterBits(seed, stream). Elements of different streams are
// CounterUniform(CounterStreamSeed(seed, stream), i).
inline uint64_t CounterStreamSeed(uint64_t seed, uint64_t stream) {
  return CounterBits(seed, stream);
}

// out[k] = static_cast<T>(min + (max - min) * CounterUniform(seed, first + k))
// for k < n, computed in double with a separate multiply and add (never a
// fused multiply-add), so results are bit-identical everywhere.
void FillUniform(double min, double max, uint64_t seed, uint64_t first, int64_t n, float* out);
void FillUniform(double min, double max, uint64_t seed, uint64_t first, int64_t n, double* out);

// Box-Muller on two counter draws per element: for element i,
//   u1 = CounterUniform(seed, 2 * i), u2 = CounterUniform(seed, 2 * i + 1),
//   z = sqrt(-2 * log(1 - u1)) * cos(2 * pi * u2)   (1 - u1 is in (0, 1])
// and out[k] = static_cast<T>(mean + std * z) for i = first + k, k < n,
// in double without fused multiply-adds. log and cos come from the C
// library, so bits agree wherever the same library computes them (every
// kernel of backends/common).
void FillGaussian(double mean, double std, uint64_t seed, uint64_t first, int64_t n, float* out);
void FillGaussian(double mean, double std, uint64_t seed, uint64_t first, int64_t n, double* out);

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_COUNTER_RANDOM_H_
