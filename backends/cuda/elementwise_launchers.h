// Launchers of the CUDA backend's element-wise kernels (fill_constant, scale,
// cast), implemented in elementwise_launchers.cu. Plain C++: included by that
// .cu file and by the OpKernels that call it.
//
//   CUDA_RETURN_IF_ERROR(LaunchFill<float>(out, n, 1.5f, stream));
//   CUDA_RETURN_IF_ERROR(LaunchCast<int64_t, float>(x, out, n, stream));
//
// Each call enqueues one kernel on `stream` and returns at once (async) with
// the launch status; n == 0 launches nothing. Pointers are device memory of
// the stream's GPU. Instantiated for float, double, int32_t, int64_t and
// (fill, cast) bool, bfloat16 and float16; LaunchRepeatRow for bfloat16 and
// float16 (fc's bias). Thread-safe.
#ifndef TANDEM_BACKENDS_CUDA_ELEMENTWISE_LAUNCHERS_H_
#define TANDEM_BACKENDS_CUDA_ELEMENTWISE_LAUNCHERS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "framework/types/float16.h"

namespace tandem {
namespace cuda {

// out[i] = value.
template <typename T>
cudaError_t LaunchFill(T* out, int64_t n, T value, cudaStream_t stream);

// out[i] = scale * x[i] + bias if bias_after_scale, else scale * (x[i] + bias).
// Floating types compute in T (scale and bias converted to T first); integer
// types compute in double and static_cast the result. scale * x + bias is
// rounded once, as fma(scale, x, bias): what GCC makes of the CPU backend's
// `s * x + b` when it contracts to FMA (-O2 -march=haswell, C++ default).
template <typename T>
cudaError_t LaunchScale(const T* x, T* out, int64_t n, double scale, double bias,
                        bool bias_after_scale, cudaStream_t stream);

// out[r * n + j] = row[j] for r < rows: `row` (n values) copied into
// every row of out (rows x n).
template <typename T>
cudaError_t LaunchRepeatRow(const T* row, int64_t rows, int64_t n, T* out, cudaStream_t stream);

// out[i] = static_cast<To>(x[i]); to bool: x[i] != 0; from bool: 0 or 1;
// to bfloat16 / float16 rounds once to nearest even, bit for bit as the
// host (float16.h; a NaN stays a NaN, its payload may differ). Eight
// elements a thread where both tensors are aligned to eight elements.
template <typename From, typename To>
cudaError_t LaunchCast(const From* x, To* out, int64_t n, cudaStream_t stream);

// first[i] = second[i] = x[i]: one pass over x (the two gradients of an
// unbroadcast add). Instantiated for float, double, int32_t, int64_t,
// bfloat16 and float16.
template <typename T>
cudaError_t LaunchCopyToTwo(const T* x, T* first, T* second, int64_t n, cudaStream_t stream);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_ELEMENTWISE_LAUNCHERS_H_
