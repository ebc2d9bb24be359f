// Launchers of the CUDA backend's pool2d kernels, implemented in
// pool_launchers.cu. Plain C++: included by that .cu file and by
// layer_kernels.cc.
//
//   PoolWindows w = ...;   // from the op's Pool2DGeometry
//   CUDA_RETURN_IF_ERROR(LaunchPool2D<float>(w, x, out, stream));
//   CUDA_RETURN_IF_ERROR(LaunchPool2DGrad<float>(w, x, out, dout, dx, stream));
//
// Each call enqueues one kernel on `stream` and returns at once (async)
// with the launch status; nothing is launched when there is no element.
// Pointers are device memory of the stream's GPU, NCHW. Instantiated for
// float and double. Thread-safe.
//
// The host kernels' math (backends/common/pool.h) in the same order, so
// results are bit-identical: windows are clipped to the plane, max ties go
// to the first element in row-major window order, average sums accumulate
// in double in window order and divide by the clipped (exclusive) or full
// window's size. The gradient is a gather: each input element adds the
// contributions of the windows covering it in output row-major order, as
// the host's scatter does, with no atomics.
#ifndef TANDEM_BACKENDS_CUDA_POOL_LAUNCHERS_H_
#define TANDEM_BACKENDS_CUDA_POOL_LAUNCHERS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace tandem {
namespace cuda {

struct PoolWindows {
  int64_t planes = 0;  // n * c
  int64_t h = 0, w = 0, oh = 0, ow = 0;
  int64_t kh = 1, kw = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  bool max = true;
  bool exclusive = true;
};

template <typename T>
cudaError_t LaunchPool2D(const PoolWindows& p, const T* x, T* out, cudaStream_t stream);

template <typename T>
cudaError_t LaunchPool2DGrad(const PoolWindows& p, const T* x, const T* out, const T* dout, T* dx,
                             cudaStream_t stream);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_POOL_LAUNCHERS_H_
