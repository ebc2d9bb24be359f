// sgd kernels. See sgd_launchers.h.
#include "backends/cuda/device_reduce.h"
#include "backends/cuda/sgd_launchers.h"

namespace tandem {
namespace cuda {
namespace {

using device::Blocks;
using device::kThreads;

// One rounding, whatever nvcc's contraction settings.
__device__ __forceinline__ float MulAdd(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ double MulAdd(double a, double b, double c) { return __fma_rn(a, b, c); }

template <typename T>
__global__ void SgdDenseKernel(T* param, const T* grad, int64_t n, T neg_lr) {
  TANDEM_GRID_LOOP(i, n) { param[i] = MulAdd(neg_lr, grad[i], param[i]); }
}

template <typename T>
__global__ void SgdRowGroupsKernel(T* param, const T* value, int64_t width, T neg_lr,
                                   SgdRowGroups groups) {
  const int64_t total = groups.groups * width;
  TANDEM_GRID_LOOP(i, total) {
    const int64_t g = i / width, j = i - g * width;
    T* p = param + groups.rows[g] * width + j;
    T acc = *p;
    for (int32_t q = groups.head[g]; q >= 0; q = groups.next[q]) {
      acc = MulAdd(neg_lr, value[q * width + j], acc);
    }
    *p = acc;
  }
}

}  // namespace

template <typename T>
cudaError_t LaunchSgdDense(T* param, const T* grad, int64_t n, float lr, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  SgdDenseKernel<T><<<Blocks(n), kThreads, 0, stream>>>(param, grad, n, -static_cast<T>(lr));
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchSgdRowGroups(T* param, const T* value, int64_t width, float lr,
                               const SgdRowGroups& groups, cudaStream_t stream) {
  const int64_t total = groups.groups * width;
  if (total == 0) return cudaSuccess;
  SgdRowGroupsKernel<T>
      <<<Blocks(total), kThreads, 0, stream>>>(param, value, width, -static_cast<T>(lr), groups);
  return cudaGetLastError();
}

#define TANDEM_INSTANTIATE(T)                                                               \
  template cudaError_t LaunchSgdDense<T>(T*, const T*, int64_t, float, cudaStream_t);       \
  template cudaError_t LaunchSgdRowGroups<T>(T*, const T*, int64_t, float,                  \
                                             const SgdRowGroups&, cudaStream_t);
TANDEM_INSTANTIATE(float)
TANDEM_INSTANTIATE(double)
#undef TANDEM_INSTANTIATE

}  // namespace cuda
}  // namespace tandem
