// Launchers of the CUDA backend's momentum and adam kernels, implemented in
// optimizer_launchers.cu. Plain C++: included by that .cu file and by
// optimizer_kernels.cc.
//
//   MomentumStep<float> step{lr, mu, use_nesterov};
//   CUDA_RETURN_IF_ERROR(LaunchMomentumDense<float, bfloat16>(param, velocity, grad, n,
//                                                             /*scale=*/nullptr, step, stream));
//   // A sparse gradient, row group by row group (optimizer_kernels.cc):
//   CUDA_RETURN_IF_ERROR(LaunchMomentumRows<float>(param, velocity, value, width, step,
//                                                  chunk, carry_in, carry_out, carry, stream));
//
// Each call enqueues one kernel on `stream` and returns at once (async) with
// the launch status; nothing is launched when there is no element. Pointers
// are device memory of the stream's GPU. Instantiated for float and double.
// Thread-safe.
//
// The update formulas are the host kernels' (backends/common/
// optimizer_kernels.h), term by term in T. The host compiler may contract
// some products and sums into fused multiply-adds where nvcc does not (or
// the other way round), so results agree with the cpu backend to a few ulp
// rather than bit for bit. A sparse gradient's duplicate rows are summed in
// T in their order in the gradient, exactly as on the host.
#ifndef TANDEM_BACKENDS_CUDA_OPTIMIZER_LAUNCHERS_H_
#define TANDEM_BACKENDS_CUDA_OPTIMIZER_LAUNCHERS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/sgd_launchers.h"

namespace tandem {
namespace cuda {

// v = mu * v + g; p -= lr * v, or with nesterov p -= lr * (g + mu * v).
template <typename T>
struct MomentumStep {
  T lr;
  T mu;
  bool nesterov;
};

// With grad = g + l2_decay * p:
//   m1 = beta1 * m1 + one_minus_beta1 * grad
//   m2 = beta2 * m2 + one_minus_beta2 * grad * grad
//   p = p * shrink - lr * (m1 / correction1) / (sqrt(m2 / correction2) + epsilon)
// Every constant is computed on the host as the host kernel computes it.
template <typename T>
struct AdamStep {
  T lr;
  T beta1, beta2;
  T one_minus_beta1, one_minus_beta2;
  T correction1, correction2;
  T epsilon;
  T l2_decay;
  T shrink;
};

// The step at every element i < n of param (and its state) with grad[i] as
// T: a 16-bit G (the gradient of a float32 parameter in a mixed-precision
// step) widened exactly, times *scale unless `scale` is null (gradient
// clipping's factor, device memory the kernel reads), rounded once in T as
// the host kernels' block does, inside the
// update (no scratch copy). Instantiated for (float, float), (float,
// bfloat16), (float, float16) and (double, double).
template <typename T, typename G>
cudaError_t LaunchMomentumDense(T* param, T* velocity, const G* grad, int64_t n, const T* scale,
                                const MomentumStep<T>& step, cudaStream_t stream);
// A float32 parameter's 16-bit working copy (adam's ParamCastOut), written
// by the dense adam in the pass that updates the parameter: each updated
// value rounded as cast rounds it. `data` null: no copy.
struct WorkingCopy {
  void* data = nullptr;
  bool bfloat16 = true;  // else float16
};
template <typename T, typename G>
cudaError_t LaunchAdamDense(T* param, T* moment1, T* moment2, const G* grad, int64_t n,
                            const T* scale, const AdamStep<T>& step, WorkingCopy copy,
                            cudaStream_t stream);

// A lazy sparse update of the row groups in `chunk` (SgdRowChunk, whose
// groups here are complete rows of a gradient grouped by table row): for
// each group g and column j < width, the merged gradient
//   acc = value[positions[begin[g]] * width + j] + the group's next value
//         rows in order
// then the step at element rows[g] * width + j. Groups too long for one
// chunk are split across consecutive chunks through `carry` (width
// elements): with carry_in the first group starts from carry[j] instead of
// its first value row; with carry_out the last group stores acc in carry[j]
// and is updated by a later chunk.
template <typename T>
cudaError_t LaunchMomentumRows(T* param, T* velocity, const T* value, int64_t width,
                               const MomentumStep<T>& step, const SgdRowChunk& chunk, bool carry_in,
                               bool carry_out, T* carry, cudaStream_t stream);
template <typename T>
cudaError_t LaunchAdamRows(T* param, T* moment1, T* moment2, const T* value, int64_t width,
                           const AdamStep<T>& step, const SgdRowChunk& chunk, bool carry_in,
                           bool carry_out, T* carry, cudaStream_t stream);

// global_norm_clip's squared norms for one launch, passed by value as a
// kernel argument (2 KiB): device addresses of one-element T values.
constexpr int kNormsPerLaunch = 256;
struct SquaredNormChunk {
  const void* norms[kNormsPerLaunch];
  int count = 0;
};

// One thread adds the chunk's norms, each widened to double, in order, to
// *carry (carry_in) or to 0. Not `last`: stores the sum in *carry. `last`:
// writes global_norm = sqrt(sum) and scale = min(1, max_norm / (norm +
// 1e-6)) (NaN for a NaN norm), rounded to T: the host kernel's arithmetic,
// correctly rounded in IEEE double both places, so the same bits. T is
// float or double; `carry` is device memory (unused with one chunk).
template <typename T>
cudaError_t LaunchGlobalNormClip(const SquaredNormChunk& chunk, bool carry_in, bool last,
                                 double* carry, double max_norm, T* scale, T* global_norm,
                                 cudaStream_t stream);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_OPTIMIZER_LAUNCHERS_H_
