// Element-wise math kernels. See math_launchers.h.
#include <algorithm>
#include <type_traits>

#include "backends/cuda/device_float16.h"
#include "backends/cuda/device_map.h"
#include "backends/cuda/device_reduce.h"
#include "backends/cuda/math_launchers.h"

namespace tandem {
namespace cuda {
namespace {

using device::Blocks;
using device::kThreads;

// f applied in T's compute type: a 16-bit T is computed in float and rounded
// once per element.
template <typename T, typename F>
struct Widened {
  F f;
  __device__ __forceinline__ T operator()(T x) const {
    return device::Narrow<T>(f(device::Widen(x)));
  }
  __device__ __forceinline__ T operator()(T a, T b) const {
    return device::Narrow<T>(f(device::Widen(a), device::Widen(b)));
  }
};

struct Negate {
  template <typename T>
  __device__ __forceinline__ T operator()(T x) const {
    if constexpr (std::is_integral<T>::value) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(U(0) - static_cast<U>(x));
    } else {
      return T(0) - x;
    }
  }
};

template <typename T>
__global__ void UnscaleKernel(const T* x, T* out, int64_t n, T divisor, bool* found_infinite) {
  TANDEM_GRID_LOOP(i, n) {
    const T v = x[i];
    if (!isfinite(v)) *found_infinite = true;  // every writer writes true
    out[i] = v / divisor;
  }
}

template <typename T>
__global__ void FindZeroKernel(const T* y, int64_t n, unsigned long long* first_zero) {
  TANDEM_GRID_LOOP(i, n) {
    if (y[i] == T(0)) atomicMin(first_zero, static_cast<unsigned long long>(i));
  }
}

}  // namespace

template <typename T>
cudaError_t LaunchActivation(Activation act, const T* x, T* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  cudaError_t e = cudaSuccess;
  WithActivation<Activate>(
      act, [&](auto f) { e = device::LaunchMap(Widened<T, decltype(f)>{f}, x, out, n, stream); });
  return e;
}

template <typename T>
cudaError_t LaunchActivationGrad(Activation act, const T* fwd, const T* dout, T* dx, int64_t n,
                                 cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  cudaError_t e = cudaSuccess;
  WithActivation<ActivationGrad>(act, [&](auto f) {
    e = device::LaunchMap2(Widened<T, decltype(f)>{f}, fwd, dout, dx, n, stream);
  });
  return e;
}

template <typename T>
cudaError_t LaunchUnscaleAndCheck(const T* x, T* out, int64_t n, T divisor, bool* found_infinite,
                                  cudaStream_t stream) {
  cudaError_t e = cudaMemsetAsync(found_infinite, 0, sizeof(bool), stream);
  if (e != cudaSuccess || n == 0) return e;
  UnscaleKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, out, n, divisor, found_infinite);
  return cudaGetLastError();
}

// Each block's sum into partials[block]; a grid of one block writes the
// whole sum into *out instead (no second kernel).
template <typename T, typename Out>
__global__ void SquaredPartialsKernel(const T* x, int64_t n, double* partials, Out* out) {
  double sum = 0;
  TANDEM_GRID_LOOP(i, n) {
    const double v = static_cast<double>(device::Widen(x[i]));
    sum += v * v;
  }
  sum = device::BlockSum(sum);
  if (threadIdx.x != 0) return;
  if (gridDim.x == 1) {
    *out = static_cast<Out>(sum);
  } else {
    partials[blockIdx.x] = sum;
  }
}

template <typename Out>
__global__ void SumPartialsKernel(const double* partials, int blocks, Out* out) {
  double sum = 0;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) sum += partials[b];
  sum = device::BlockSum(sum);
  if (threadIdx.x == 0) *out = static_cast<Out>(sum);
}

// Up to this many elements one block sums them all (a bias or a layer
// norm's scale: one launch instead of two, whose cost is the launches').
constexpr int64_t kSquaredSumOneBlock = 32768;

int SquaredSumBlocks(int64_t n) { return n <= kSquaredSumOneBlock ? 1 : std::min(Blocks(n), 1024); }

template <typename T>
cudaError_t LaunchSquaredSum(const T* x, int64_t n, double* partials, int blocks,
                             ComputeTypeOf<T>* out, cudaStream_t stream) {
  if (n == 0) return cudaMemsetAsync(out, 0, sizeof(*out), stream);
  SquaredPartialsKernel<T><<<blocks, kThreads, 0, stream>>>(x, n, partials, out);
  if (blocks > 1) {
    SumPartialsKernel<ComputeTypeOf<T>><<<1, kThreads, 0, stream>>>(partials, blocks, out);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchNegate(const T* x, T* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return device::LaunchMap(Widened<T, Negate>{Negate()}, x, out, n, stream);
}

template <typename T>
cudaError_t LaunchFindZero(const T* y, int64_t n, unsigned long long* first_zero,
                           cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  FindZeroKernel<T><<<Blocks(n), kThreads, 0, stream>>>(y, n, first_zero);
  return cudaGetLastError();
}

#define TANDEM_ACTIVATION(T)                                                                 \
  template cudaError_t LaunchActivation<T>(Activation, const T*, T*, int64_t, cudaStream_t); \
  template cudaError_t LaunchActivationGrad<T>(Activation, const T*, const T*, T*, int64_t,  \
                                               cudaStream_t);
TANDEM_ACTIVATION(float)
TANDEM_ACTIVATION(double)
TANDEM_ACTIVATION(bfloat16)
TANDEM_ACTIVATION(float16)
#undef TANDEM_ACTIVATION

#define TANDEM_SQUARED_SUM(T)                                                                  \
  template cudaError_t LaunchSquaredSum<T>(const T*, int64_t, double*, int, ComputeTypeOf<T>*, \
                                           cudaStream_t);
TANDEM_SQUARED_SUM(float)
TANDEM_SQUARED_SUM(double)
TANDEM_SQUARED_SUM(bfloat16)
TANDEM_SQUARED_SUM(float16)
#undef TANDEM_SQUARED_SUM

template cudaError_t LaunchUnscaleAndCheck<float>(const float*, float*, int64_t, float, bool*,
                                                  cudaStream_t);
template cudaError_t LaunchUnscaleAndCheck<double>(const double*, double*, int64_t, double, bool*,
                                                   cudaStream_t);
template cudaError_t LaunchNegate<float>(const float*, float*, int64_t, cudaStream_t);
template cudaError_t LaunchNegate<double>(const double*, double*, int64_t, cudaStream_t);
template cudaError_t LaunchNegate<int32_t>(const int32_t*, int32_t*, int64_t, cudaStream_t);
template cudaError_t LaunchNegate<int64_t>(const int64_t*, int64_t*, int64_t, cudaStream_t);
template cudaError_t LaunchNegate<bfloat16>(const bfloat16*, bfloat16*, int64_t, cudaStream_t);
template cudaError_t LaunchNegate<float16>(const float16*, float16*, int64_t, cudaStream_t);
template cudaError_t LaunchFindZero<int32_t>(const int32_t*, int64_t, unsigned long long*,
                                             cudaStream_t);
template cudaError_t LaunchFindZero<int64_t>(const int64_t*, int64_t, unsigned long long*,
                                             cudaStream_t);

}  // namespace cuda
}  // namespace tandem
