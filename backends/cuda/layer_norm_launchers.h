// Launchers of the CUDA backend's layer_norm kernels, implemented in
// layer_norm_launchers.cu. Plain C++: included by that .cu file and by
// layer_kernels.cc.
//
//   CUDA_RETURN_IF_ERROR(LaunchLayerNorm<float>(x, scale, bias, rows, cols, 1e-5, y, mean,
//                                               var, stream));
//
// Each call enqueues its kernels on `stream` and returns at once (async)
// with the launch status; nothing is launched when there is no row. Pointers
// are device memory of the stream's GPU; scale and bias may be null (1 and
// 0). Instantiated for float and double. Thread-safe.
//
// The host kernels' math (backends/common/layer_norm.h), in double for
// float too; a row is reduced by a warp or a block (device_lines.h), so
// sums add in another order than on the host.
#ifndef TANDEM_BACKENDS_CUDA_LAYER_NORM_LAUNCHERS_H_
#define TANDEM_BACKENDS_CUDA_LAYER_NORM_LAUNCHERS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace tandem {
namespace cuda {

// Per row of `cols` > 0 elements: mean = sum(x) / cols, var = sum((x -
// mean)^2) / cols, y = (x - mean) / sqrt(var + epsilon) * scale + bias.
template <typename T>
cudaError_t LaunchLayerNorm(const T* x, const T* scale, const T* bias, int64_t rows, int64_t cols,
                            double epsilon, T* y, T* mean, T* var, cudaStream_t stream);

// dx = r * (g - mean(g) - xhat * mean(g * xhat)) per row, with r = 1 /
// sqrt(var + epsilon), xhat = (x - mean) * r and g = dy * scale.
template <typename T>
cudaError_t LaunchLayerNormGradX(const T* x, const T* scale, const T* mean, const T* var,
                                 const T* dy, int64_t rows, int64_t cols, double epsilon, T* dx,
                                 cudaStream_t stream);

// The number of row chunks LaunchLayerNormParamGrads splits `rows` into:
// between 1 and 4096.
int64_t LayerNormRowChunks(int64_t rows);

// dscale[j] = sum over rows of dy * xhat and dbias[j] = sum over rows of dy
// (either may be null), in double by a two-pass reduction: each of `chunks`
// = LayerNormRowChunks(rows) row chunks sums into `partials` (2 * chunks *
// cols doubles), then a warp per column adds its chunks (each lane every
// 32nd chunk in order, then a fixed tree: deterministic).
template <typename T>
cudaError_t LaunchLayerNormParamGrads(const T* x, const T* mean, const T* var, const T* dy,
                                      int64_t rows, int64_t cols, double epsilon, double* partials,
                                      int64_t chunks, T* dscale, T* dbias, cudaStream_t stream);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_LAYER_NORM_LAUNCHERS_H_
