// Launchers of the CUDA backend's uniform_random, gaussian_random and
// dropout kernels, implemented in random_launchers.cu. Plain C++: included by that
// .cu file and by random_kernels.cc.
//
//   CUDA_RETURN_IF_ERROR(LaunchUniformRandom<float>(out, n, min, max, seed, stream));
//   CUDA_RETURN_IF_ERROR(LaunchGaussianRandom<float>(out, n, mean, std, seed, stream));
//
// Each call enqueues one kernel on `stream` and returns at once (async) with the launch
// status; n == 0 launches nothing. `out` is device memory of the stream's
// GPU. Instantiated for float and double. Thread-safe.
#ifndef TANDEM_BACKENDS_CUDA_RANDOM_LAUNCHERS_H_
#define TANDEM_BACKENDS_CUDA_RANDOM_LAUNCHERS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "framework/types/float16.h"

namespace tandem {
namespace cuda {

// out[i] = T(min + (max - min) * u(i)) for i < n, with the counter-based
// SplitMix64 generator every backend uses (ops/random/uniform_random_op.cc):
//   z = uint64(seed) + (i + 1) * 0x9E3779B97F4A7C15
//   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
//   z = (z ^ (z >> 27)) * 0x94D049BB133111EB
//   z ^= z >> 31
//   u = double(z >> 11) * 2^-53                      (in [0, 1), exact)
// The double arithmetic rounds exactly as the host does: see the .cu file.
template <typename T>
cudaError_t LaunchUniformRandom(T* out, int64_t n, double min, double max, int64_t seed,
                                cudaStream_t stream);

// out[i] = T(mean + std * z(i)) for i < n, Box-Muller on two draws of the
// same generator (backends/common/counter_random.h, FillGaussian):
//   u1 = u(2 i), u2 = u(2 i + 1)
//   z = sqrt(-2 * log(1 - u1)) * cos(2 pi * u2)
// Every step but log and cos rounds exactly as the host does (see the .cu
// file); log and cos are CUDA's (within 1 and 2 ulp of the exact value), not
// the host C library's, so a float64 value can differ from the host's in its
// last bits. float32 values, rounded from those doubles, agree unless the
// double lies within a few double ulp of a float rounding boundary.
template <typename T>
cudaError_t LaunchGaussianRandom(T* out, int64_t n, double mean, double std, int64_t seed,
                                 cudaStream_t stream);

// dropout in training: mask[i] = u(i) >= prob with u the generator above
// seeded with `key` (CounterStreamSeed(seed, step), computed on the host),
// out[i] = mask[i] ? x[i] * scale : 0 (one product in T; in float, rounded
// once, for the 16-bit types). Bit-identical to the host kernels.
template <typename T>
cudaError_t LaunchDropout(const T* x, int64_t n, uint64_t key, double prob, ComputeTypeOf<T> scale,
                          T* out, bool* mask, cudaStream_t stream);

// out[i] = mask[i] ? in[i] * scale : 0: dropout's gradient (and dropout in
// inference when mask is null: out = in * scale for every i, mask left
// alone).
template <typename T>
cudaError_t LaunchMaskedScale(const T* in, const bool* mask, int64_t n, ComputeTypeOf<T> scale,
                              T* out, cudaStream_t stream);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_RANDOM_LAUNCHERS_H_
