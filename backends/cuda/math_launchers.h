// Launchers of the CUDA backend's element-wise math kernels (relu, sigmoid,
// tanh, gelu and their gradients, negation, the zero-divisor check of integer
// elementwise_div), implemented in math_launchers.cu. Plain C++: included by
// that .cu file and by the OpKernels.
//
//   CUDA_RETURN_IF_ERROR(LaunchActivation<float>(Activation::kSigmoid, x, out, n, stream));
//   CUDA_RETURN_IF_ERROR(LaunchFindZero<int32_t>(y, n, flag.get(), stream));
//
// Each call enqueues one kernel on `stream` and returns at once (async) with
// the launch status; n == 0 launches nothing. Pointers are device memory of
// the stream's GPU. Thread-safe.
#ifndef TANDEM_BACKENDS_CUDA_MATH_LAUNCHERS_H_
#define TANDEM_BACKENDS_CUDA_MATH_LAUNCHERS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/common/activation.h"
#include "framework/types/float16.h"

namespace tandem {
namespace cuda {

// out = f(x), dx = dout * f'(...) with the host kernels' functions, compiled
// for the GPU from the same header (backends/common/activation.h); `fwd` is
// what the gradient reads: Out, or X for gelu (GradReadsInput). exp, erf and
// tanh are CUDA's, so sigmoid, tanh and gelu agree with the host to a few
// ulp. Instantiated for float and double.
// out = x / divisor over n elements; *found_infinite (device memory) set
// to true when some x is inf or NaN, else to false.
template <typename T>
cudaError_t LaunchUnscaleAndCheck(const T* x, T* out, int64_t n, T divisor, bool* found_infinite,
                                  cudaStream_t stream);

// *out (device memory, float for float, bfloat16 and float16 x, double for
// double) = the sum of x's n squared values, in double: each of `blocks`
// blocks sums its part into partials[block] (device scratch, `blocks`
// doubles), then one block adds the partials in order; one block (small n)
// writes *out itself. SquaredSumBlocks(n) is the block count to give it. Instantiated for float,
// double, bfloat16 and float16.
int SquaredSumBlocks(int64_t n);
template <typename T>
cudaError_t LaunchSquaredSum(const T* x, int64_t n, double* partials, int blocks,
                             ComputeTypeOf<T>* out, cudaStream_t stream);

template <typename T>
cudaError_t LaunchActivation(Activation act, const T* x, T* out, int64_t n, cudaStream_t stream);
template <typename T>
cudaError_t LaunchActivationGrad(Activation act, const T* fwd, const T* dout, T* dx, int64_t n,
                                 cudaStream_t stream);

// out[i] = 0 - x[i] (integers wrap around; a 16-bit x in float, rounded
// once: exact). `out` may be `x`. Instantiated for float, double, int32_t,
// int64_t, bfloat16 and float16.
template <typename T>
cudaError_t LaunchNegate(const T* x, T* out, int64_t n, cudaStream_t stream);

// Lowers *first_zero (atomicMin) to every i < n with y[i] == 0, so it ends
// at the first zero's position if there is one. Instantiated for int32_t
// and int64_t.
template <typename T>
cudaError_t LaunchFindZero(const T* y, int64_t n,
                           unsigned long long* first_zero,  // NOLINT(runtime/int)
                           cudaStream_t stream);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_MATH_LAUNCHERS_H_
