// momentum and adam kernels. See optimizer_launchers.h.
#include <cstdint>
#include <type_traits>

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

  static constexpr int kStates = 1;  // velocity

  __device__ __forceinline__ void Apply(T& p, T (&state)[kStates], T g) const {
    const T v = s.mu * state[0] + g;
    state[0] = v;
    p -= s.nesterov ? s.lr * (g + s.mu * v) : s.lr * v;
  }
  __host__ __device__ T* State(int) const { return velocity; }
  __host__ __device__ const void* Copy() const { return nullptr; }
  __device__ __forceinline__ void CopyQuad(int64_t, float4) const {}
  __device__ __forceinline__ void operator()(int64_t i, T g) const {
    T state[kStates] = {velocity[i]};
    Apply(param[i], state, g);
    velocity[i] = state[0];
  }
};

// Four float32 values rounded to a 16-bit type, stored as one 8-byte value.
template <typename H>
struct alignas(8) HalfQuad {
  H v[4];
};

template <typename H>
__device__ __forceinline__ void StoreQuad(void* to, int64_t q, float4 p) {
  HalfQuad<H> o;
  o.v[0] = device::Narrow<H>(p.x);
  o.v[1] = device::Narrow<H>(p.y);
  o.v[2] = device::Narrow<H>(p.z);
  o.v[3] = device::Narrow<H>(p.w);
  static_cast<HalfQuad<H>*>(to)[q] = o;
}

template <typename T>
struct AdamUpdate {
  AdamStep<T> s;
  T* param;
  T* moment1;
  T* moment2;
  WorkingCopy copy;  // float32 parameters only

  static constexpr int kStates = 2;  // moment1, moment2

  __device__ __forceinline__ void Apply(T& p, T (&state)[kStates], T g) const {
    const T grad = g + s.l2_decay * p;
    const T m1 = s.beta1 * state[0] + s.one_minus_beta1 * grad;
    const T m2 = s.beta2 * state[1] + s.one_minus_beta2 * grad * grad;
    state[0] = m1;
    state[1] = m2;
    p = p * s.shrink - s.lr * (m1 / s.correction1) / (sqrt(m2 / s.correction2) + s.epsilon);
  }
  __host__ __device__ T* State(int k) const { return k == 0 ? moment1 : moment2; }
  __host__ __device__ const void* Copy() const { return copy.data; }
  // The working copy of the four updated values of quad q.
  __device__ __forceinline__ void CopyQuad(int64_t q, float4 p) const {
    if (copy.data == nullptr) return;
    if (copy.bfloat16) {
      StoreQuad<bfloat16>(copy.data, q, p);
    } else {
      StoreQuad<float16>(copy.data, q, p);
    }
  }
  __device__ __forceinline__ void operator()(int64_t i, T g) const {
    T state[kStates] = {moment1[i], moment2[i]};
    Apply(param[i], state, g);
    moment1[i] = state[0];
    moment2[i] = state[1];
    if constexpr (std::is_same<T, float>::value) {
      if (copy.data == nullptr) return;
      if (copy.bfloat16) {
        static_cast<bfloat16*>(copy.data)[i] = device::Narrow<bfloat16>(param[i]);
      } else {
        static_cast<float16*>(copy.data)[i] = device::Narrow<float16>(param[i]);
      }
    }
  }
};

template <typename T, typename G, typename Update>
__global__ void DenseKernel(Update update, const G* grad, int64_t n, const T* scale_at) {
  const T scale = device::ScaleAt(scale_at);
  const bool scaled = scale_at != nullptr;
  TANDEM_GRID_LOOP(i, n) { update(i, device::GradAt(grad, i, scale, scaled)); }
}

// Four consecutive elements of G as one aligned load (16 bytes of float32,
// 8 of a 16-bit type).
template <typename G>
struct GradQuad {
  static_assert(sizeof(G) == 2 || sizeof(G) == 4, "four gradients in one load");
  using type = std::conditional_t<sizeof(G) == 4, float4, uint2>;
};

// DenseKernel for float32 parameters four elements a thread: the parameter,
// its states and the gradient move as aligned 16-byte (gradient: 4 x
// sizeof(G)) values, each element's update the same arithmetic as
// DenseKernel's (the same bits). The n % 4 last elements take one thread
// each after the quads.
template <typename G, typename Update>
__global__ void DenseQuadKernel(Update update, const G* grad, int64_t n, const float* scale_at) {
  constexpr int kStates = Update::kStates;
  const float scale = device::ScaleAt(scale_at);
  const bool scaled = scale_at != nullptr;
  const int64_t quads = n / 4;
  TANDEM_GRID_LOOP(q, quads) {
    G g[4];
    *reinterpret_cast<typename GradQuad<G>::type*>(g) =
        reinterpret_cast<const typename GradQuad<G>::type*>(grad)[q];
    float4 p = reinterpret_cast<const float4*>(update.param)[q];
    float4 states[kStates];
#pragma unroll
    for (int k = 0; k < kStates; ++k)
      states[k] = reinterpret_cast<const float4*>(update.State(k))[q];
    float* lanes_p = &p.x;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      float state[kStates];
#pragma unroll
      for (int k = 0; k < kStates; ++k) state[k] = (&states[k].x)[e];
      update.Apply(lanes_p[e], state, device::GradAt(g, e, scale, scaled));
#pragma unroll
      for (int k = 0; k < kStates; ++k) (&states[k].x)[e] = state[k];
    }
    reinterpret_cast<float4*>(update.param)[q] = p;
    update.CopyQuad(q, p);
#pragma unroll
    for (int k = 0; k < kStates; ++k) reinterpret_cast<float4*>(update.State(k))[q] = states[k];
  }
  const int64_t tail = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (tail < n % 4) update(quads * 4 + tail, device::GradAt(grad, quads * 4 + tail, scale, scaled));
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

// Whether DenseQuadKernel takes a float32 update: every array aligned to
// four of its elements.
template <typename G, typename Update>
bool TakesQuads(const Update& update, const G* grad) {
  bool aligned = device::AlignedTo(update.param, 16) && device::AlignedTo(grad, 4 * sizeof(G)) &&
                 device::AlignedTo(update.Copy(), 8);
  for (int k = 0; k < Update::kStates; ++k)
    aligned = aligned && device::AlignedTo(update.State(k), 16);
  return aligned;
}

template <typename T, typename G, typename Update>
cudaError_t LaunchDense(const Update& update, const G* grad, int64_t n, const T* scale,
                        cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if constexpr (std::is_same<T, float>::value && (sizeof(G) == 2 || sizeof(G) == 4)) {
    if (TakesQuads(update, grad)) {
      const int64_t threads = n / 4 > n % 4 ? n / 4 : n % 4;
      DenseQuadKernel<G><<<Blocks(threads), kThreads, 0, stream>>>(update, grad, n, scale);
      return cudaGetLastError();
    }
  }
  DenseKernel<T, G><<<Blocks(n), kThreads, 0, stream>>>(update, grad, n, scale);
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
cudaError_t LaunchMomentumDense(T* param, T* velocity, const G* grad, int64_t n, const T* scale,
                                const MomentumStep<T>& step, cudaStream_t stream) {
  return LaunchDense<T, G>(MomentumUpdate<T>{step, param, velocity}, grad, n, scale, stream);
}

template <typename T, typename G>
cudaError_t LaunchAdamDense(T* param, T* moment1, T* moment2, const G* grad, int64_t n,
                            const T* scale, const AdamStep<T>& step, WorkingCopy copy,
                            cudaStream_t stream) {
  return LaunchDense<T, G>(AdamUpdate<T>{step, param, moment1, moment2, copy}, grad, n, scale,
                           stream);
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
  return LaunchRows<T>(AdamUpdate<T>{step, param, moment1, moment2, WorkingCopy()}, value, width,
                       chunk, carry_in, carry_out, carry, stream);
}

namespace {

template <typename T>
__global__ void GlobalNormClipKernel(SquaredNormChunk chunk, bool carry_in, bool last,
                                     double* carry, double max_norm, T* scale, T* global_norm) {
  double sum = carry_in ? *carry : 0.0;
  for (int i = 0; i < chunk.count; ++i)
    sum += static_cast<double>(*static_cast<const T*>(chunk.norms[i]));
  if (!last) {
    *carry = sum;
    return;
  }
  const double norm = sqrt(sum);
  const double factor = max_norm / (norm + 1e-6);
  // std::min(1.0, factor) as the host takes it; a NaN norm gives NaN.
  const double s = isnan(norm) ? norm : (factor < 1.0 ? factor : 1.0);
  *scale = static_cast<T>(s);
  *global_norm = static_cast<T>(norm);
}

}  // namespace

template <typename T>
cudaError_t LaunchGlobalNormClip(const SquaredNormChunk& chunk, bool carry_in, bool last,
                                 double* carry, double max_norm, T* scale, T* global_norm,
                                 cudaStream_t stream) {
  GlobalNormClipKernel<T>
      <<<1, 1, 0, stream>>>(chunk, carry_in, last, carry, max_norm, scale, global_norm);
  return cudaGetLastError();
}
template cudaError_t LaunchGlobalNormClip<float>(const SquaredNormChunk&, bool, bool, double*,
                                                 double, float*, float*, cudaStream_t);
template cudaError_t LaunchGlobalNormClip<double>(const SquaredNormChunk&, bool, bool, double*,
                                                  double, double*, double*, cudaStream_t);

#define TANDEM_INSTANTIATE_DENSE(T, G)                                                  \
  template cudaError_t LaunchMomentumDense<T, G>(T*, T*, const G*, int64_t, const T*,   \
                                                 const MomentumStep<T>&, cudaStream_t); \
  template cudaError_t LaunchAdamDense<T, G>(T*, T*, T*, const G*, int64_t, const T*,   \
                                             const AdamStep<T>&, WorkingCopy, cudaStream_t);
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
