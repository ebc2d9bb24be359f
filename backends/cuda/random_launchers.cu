// uniform_random kernel. See random_launchers.h.
//
// Bit-identical to the host (backends/common/counter_random.cc, built with
// -ffp-contract=off): the integer hash is exact everywhere, u = (z >> 11) *
// 2^-53 is exact, range = max - min is computed once on the host, and
// min + range * u is a round-to-nearest multiply followed by a
// round-to-nearest add (__dmul_rn / __dadd_rn, which nvcc never fuses; the
// file is also built with -fmad=false, see BUILD, so no other contraction can
// creep in). The conversion to float rounds to nearest, as static_cast does
// on the host.
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

template cudaError_t LaunchUniformRandom<float>(float*, int64_t, double, double, int64_t,
                                                cudaStream_t);
template cudaError_t LaunchUniformRandom<double>(double*, int64_t, double, double, int64_t,
                                                 cudaStream_t);

}  // namespace cuda
}  // namespace tandem
