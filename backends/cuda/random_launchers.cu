// uniform_random and gaussian_random kernels. See random_launchers.h.
//
// uniform_random is bit-identical to the host (backends/common/counter_random.cc, built with
// -ffp-contract=off): the integer hash is exact everywhere, u = (z >> 11) *
// 2^-53 is exact, range = max - min is computed once on the host, and
// min + range * u is a round-to-nearest multiply followed by a
// round-to-nearest add (__dmul_rn / __dadd_rn, which nvcc never fuses; the
// file is also built with -fmad=false, see BUILD, so no other contraction can
// creep in). The conversion to float rounds to nearest, as static_cast does
// on the host. gaussian_random rounds each of its multiplies, adds and its
// square root the same way; only log and cos are CUDA's own.
#include "backends/cuda/device_float16.h"
#include "backends/cuda/device_reduce.h"
#include "backends/cuda/random_launchers.h"

namespace tandem {
namespace cuda {
namespace {

using device::Blocks;
using device::kThreads;

__device__ __forceinline__ double CounterUniform(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return __dmul_rn(static_cast<double>(z >> 11), 0x1.0p-53);  // exact
}

template <typename T>
__global__ void UniformRandomKernel(T* out, int64_t n, double min, double range, uint64_t seed) {
  TANDEM_GRID_LOOP(i, n) {
    const double v =
        __dadd_rn(min, __dmul_rn(range, CounterUniform(seed, static_cast<uint64_t>(i))));
    out[i] = static_cast<T>(v);
  }
}

template <typename T>
__global__ void GaussianRandomKernel(T* out, int64_t n, double mean, double std, uint64_t seed) {
  constexpr double kTwoPi = 6.283185307179586;
  TANDEM_GRID_LOOP(i, n) {
    const uint64_t k = static_cast<uint64_t>(i);
    const double u1 = CounterUniform(seed, 2 * k);
    const double u2 = CounterUniform(seed, 2 * k + 1);
    const double radius = __dsqrt_rn(__dmul_rn(-2.0, log(__dsub_rn(1.0, u1))));
    const double z = __dmul_rn(radius, cos(__dmul_rn(kTwoPi, u2)));
    out[i] = static_cast<T>(__dadd_rn(mean, __dmul_rn(std, z)));
  }
}

// A 16-bit product is computed in float and rounded once.
template <typename T>
__global__ void DropoutKernel(const T* x, int64_t n, uint64_t key, double prob,
                              device::ComputeOf<T> scale, T* out, bool* mask) {
  using C = device::ComputeOf<T>;
  TANDEM_GRID_LOOP(i, n) {
    const bool keep = CounterUniform(key, static_cast<uint64_t>(i)) >= prob;
    mask[i] = keep;
    out[i] = device::Narrow<T>(keep ? device::Widen(x[i]) * scale : C(0));
  }
}

template <typename T>
__global__ void MaskedScaleKernel(const T* in, const bool* mask, int64_t n,
                                  device::ComputeOf<T> scale, T* out) {
  using C = device::ComputeOf<T>;
  TANDEM_GRID_LOOP(i, n) {
    out[i] = device::Narrow<T>(mask == nullptr || mask[i] ? device::Widen(in[i]) * scale : C(0));
  }
}

}  // namespace

template <typename T>
cudaError_t LaunchUniformRandom(T* out, int64_t n, double min, double max, int64_t seed,
                                cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const double range = max - min;  // on the host, as the host kernels do
  UniformRandomKernel<T>
      <<<Blocks(n), kThreads, 0, stream>>>(out, n, min, range, static_cast<uint64_t>(seed));
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchGaussianRandom(T* out, int64_t n, double mean, double std, int64_t seed,
                                 cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  GaussianRandomKernel<T>
      <<<Blocks(n), kThreads, 0, stream>>>(out, n, mean, std, static_cast<uint64_t>(seed));
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchDropout(const T* x, int64_t n, uint64_t key, double prob,
                          ComputeTypeOf<T> scale, T* out, bool* mask, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  DropoutKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, n, key, prob, scale, out, mask);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchMaskedScale(const T* in, const bool* mask, int64_t n, ComputeTypeOf<T> scale,
                              T* out, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  MaskedScaleKernel<T><<<Blocks(n), kThreads, 0, stream>>>(in, mask, n, scale, out);
  return cudaGetLastError();
}

template cudaError_t LaunchUniformRandom<float>(float*, int64_t, double, double, int64_t,
                                                cudaStream_t);
template cudaError_t LaunchUniformRandom<double>(double*, int64_t, double, double, int64_t,
                                                 cudaStream_t);
template cudaError_t LaunchGaussianRandom<float>(float*, int64_t, double, double, int64_t,
                                                 cudaStream_t);
template cudaError_t LaunchGaussianRandom<double>(double*, int64_t, double, double, int64_t,
                                                  cudaStream_t);
template cudaError_t LaunchDropout<float>(const float*, int64_t, uint64_t, double, float, float*,
                                          bool*, cudaStream_t);
template cudaError_t LaunchDropout<double>(const double*, int64_t, uint64_t, double, double,
                                           double*, bool*, cudaStream_t);
template cudaError_t LaunchMaskedScale<float>(const float*, const bool*, int64_t, float, float*,
                                              cudaStream_t);
template cudaError_t LaunchMaskedScale<double>(const double*, const bool*, int64_t, double, double*,
                                               cudaStream_t);
#define TANDEM_DROPOUT_16(T)                                                                   \
  template cudaError_t LaunchDropout<T>(const T*, int64_t, uint64_t, double, float, T*, bool*, \
                                        cudaStream_t);                                         \
  template cudaError_t LaunchMaskedScale<T>(const T*, const bool*, int64_t, float, T*, cudaStream_t);
TANDEM_DROPOUT_16(bfloat16)
TANDEM_DROPOUT_16(float16)
#undef TANDEM_DROPOUT_16

}  // namespace cuda
}  // namespace tandem
