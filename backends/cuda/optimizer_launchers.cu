// momentum and adam kernels. See optimizer_launchers.h.
#include "backends/cuda/device_float16.h"
#include "backends/cuda/device_reduce.h"
#include "backends/cuda/optimizer_launchers.h"

namespace tandem {
namespace cuda {
namespace {

using device::Blocks;
using device::kThreads;

// One element's update, given its (merged) gradient g.
template <typename T>
struct MomentumUpdate {
  MomentumStep<T> s;
  T* param;
  T* velocity;

  __device__ __forceinline__ void operator()(int64_t i, T g) const {
    const T v = s.mu * velocity[i] + g;
    velocity[i] = v;
    param[i] -= s.nesterov ? s.lr * (g + s.mu * v) : s.lr * v;
  }
};

template <typename T>
struct AdamUpdate {
  AdamStep<T> s;
  T* param;
  T* moment1;
  T* moment2;

  __device__ __forceinline__ void operator()(int64_t i, T g) const {
    const T p = param[i];
    const T grad = g + s.l2_decay * p;
    const T m1 = s.beta1 * moment1[i] + s.one_minus_beta1 * grad;
    const T m2 = s.beta2 * moment2[i] + s.one_minus_beta2 * grad * grad;
    moment1[i] = m1;
    moment2[i] = m2;
    param[i] = p * s.shrink - s.lr * (m1 / s.correction1) / (sqrt(m2 / s.correction2) + s.epsilon);
  }
};

template <typename T, typename G, typename Update>
__global__ void DenseKernel(Update update, const G* grad, int64_t n, T scale, bool scaled) {
  TANDEM_GRID_LOOP(i, n) { update(i, device::GradAt(grad, i, scale, scaled)); }
}

template <typename T, typename Update>
__global__ void RowsKernel(Update update, const T* value, int64_t width, SgdRowChunk chunk,
                           bool carry_in, bool carry_out, T* carry) {
  const int64_t total = chunk.groups * width;
  TANDEM_GRID_LOOP(i, total) {
    const int64_t g = i / width, j = i - g * width;
    int e = chunk.begin[g];
    T acc = g == 0 && carry_in ? carry[j] : value[chunk.positions[e++] * width + j];
    for (; e < chunk.begin[g + 1]; ++e) acc += value[chunk.positions[e] * width + j];
    if (carry_out && g == chunk.groups - 1) {
      carry[j] = acc;
    } else {
      update(chunk.rows[g] * width + j, acc);
    }
  }
}

template <typename T, typename G, typename Update>
cudaError_t LaunchDense(const Update& update, const G* grad, int64_t n, T scale,
                        cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  DenseKernel<T, G><<<Blocks(n), kThreads, 0, stream>>>(update, grad, n, scale, scale != T(1));
  return cudaGetLastError();
}

template <typename T, typename Update>
cudaError_t LaunchRows(const Update& update, const T* value, int64_t width,
                       const SgdRowChunk& chunk, bool carry_in, bool carry_out, T* carry,
                       cudaStream_t stream) {
  const int64_t total = chunk.groups * width;
  if (total == 0) return cudaSuccess;
  RowsKernel<T><<<Blocks(total), kThreads, 0, stream>>>(update, value, width, chunk, carry_in,
                                                        carry_out, carry);
  return cudaGetLastError();
}

}  // namespace

template <typename T, typename G>
cudaError_t LaunchMomentumDense(T* param, T* velocity, const G* grad, int64_t n, T scale,
                                const MomentumStep<T>& step, cudaStream_t stream) {
  return LaunchDense<T, G>(MomentumUpdate<T>{step, param, velocity}, grad, n, scale, stream);
}

template <typename T, typename G>
cudaError_t LaunchAdamDense(T* param, T* moment1, T* moment2, const G* grad, int64_t n, T scale,
                            const AdamStep<T>& step, cudaStream_t stream) {
  return LaunchDense<T, G>(AdamUpdate<T>{step, param, moment1, moment2}, grad, n, scale, stream);
}

template <typename T>
cudaError_t LaunchMomentumRows(T* param, T* velocity, const T* value, int64_t width,
                               const MomentumStep<T>& step, const SgdRowChunk& chunk, bool carry_in,
                               bool carry_out, T* carry, cudaStream_t stream) {
  return LaunchRows<T>(MomentumUpdate<T>{step, param, velocity}, value, width, chunk, carry_in,
                       carry_out, carry, stream);
}

template <typename T>
cudaError_t LaunchAdamRows(T* param, T* moment1, T* moment2, const T* value, int64_t width,
                           const AdamStep<T>& step, const SgdRowChunk& chunk, bool carry_in,
                           bool carry_out, T* carry, cudaStream_t stream) {
  return LaunchRows<T>(AdamUpdate<T>{step, param, moment1, moment2}, value, width, chunk, carry_in,
                       carry_out, carry, stream);
}

#define TANDEM_INSTANTIATE_DENSE(T, G)                                                             \
  template cudaError_t LaunchMomentumDense<T, G>(T*, T*, const G*, int64_t, T,                     \
                                                 const MomentumStep<T>&, cudaStream_t);            \
  template cudaError_t LaunchAdamDense<T, G>(T*, T*, T*, const G*, int64_t, T, const AdamStep<T>&, \
                                             cudaStream_t);
TANDEM_INSTANTIATE_DENSE(float, float)
TANDEM_INSTANTIATE_DENSE(float, bfloat16)
TANDEM_INSTANTIATE_DENSE(float, float16)
TANDEM_INSTANTIATE_DENSE(double, double)
#undef TANDEM_INSTANTIATE_DENSE

#define TANDEM_INSTANTIATE(T)                                                                   \
  template cudaError_t LaunchMomentumRows<T>(T*, T*, const T*, int64_t, const MomentumStep<T>&, \
                                             const SgdRowChunk&, bool, bool, T*, cudaStream_t); \
  template cudaError_t LaunchAdamRows<T>(T*, T*, T*, const T*, int64_t, const AdamStep<T>&,     \
                                         const SgdRowChunk&, bool, bool, T*, cudaStream_t);
TANDEM_INSTANTIATE(float)
TANDEM_INSTANTIATE(double)
#undef TANDEM_INSTANTIATE

}  // namespace cuda
}  // namespace tandem
