// self_attention kernels. See attention_launchers.h.
#include "backends/cuda/attention_launchers.h"
#include "backends/cuda/device_float16.h"
#include "backends/cuda/device_reduce.h"

namespace tandem {
namespace cuda {
namespace {

using device::BlockMax;
using device::Blocks;
using device::BlockSum;
using device::kThreads;
using device::Narrow;
using device::Widen;

constexpr int kRowThreads = 128;  // threads per softmax row

// The offset in rows [batch, seq, parts * width] of heads element `i`
// ([parts, batch * heads, seq, head_dim]).
__device__ __forceinline__ int64_t RowOffset(int64_t i, const AttentionGeometry& g, int parts) {
  const int64_t c = i % g.head_dim;
  int64_t r = i / g.head_dim;
  const int64_t t = r % g.seq;
  r /= g.seq;
  const int64_t bh = r % (g.batch * g.heads), part = r / (g.batch * g.heads);
  const int64_t b = bh / g.heads, h = bh % g.heads, width = g.heads * g.head_dim;
  return ((b * g.seq + t) * parts + part) * width + h * g.head_dim + c;
}

template <typename T>
__global__ void RowsToHeadsKernel(const T* rows, AttentionGeometry g, int parts, int64_t n,
                                  T* heads) {
  TANDEM_GRID_LOOP(i, n) { heads[i] = rows[RowOffset(i, g, parts)]; }
}

template <typename T>
__global__ void HeadsToRowsKernel(const T* heads, AttentionGeometry g, int parts, int64_t n,
                                  T* rows) {
  TANDEM_GRID_LOOP(i, n) { rows[RowOffset(i, g, parts)] = heads[i]; }
}

// One block per score row (grid-strided over rows).
template <typename T, typename S>
__global__ void SoftmaxKernel(const S* scores, AttentionGeometry g, bool causal, T* probs, S* lse) {
  const int64_t rows = g.batch * g.heads * g.seq;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t keys = causal ? row % g.seq + 1 : g.seq;
    const S* s = scores + row * g.seq;
    double m = device::MaxOp::Identity();
    for (int64_t j = threadIdx.x; j < keys; j += blockDim.x) m = fmax(m, double(s[j]));
    m = BlockMax(m);
    double sum = 0;
    for (int64_t j = threadIdx.x; j < keys; j += blockDim.x) sum += exp(double(s[j]) - m);
    sum = BlockSum(sum);
    T* p = probs + row * g.seq;
    for (int64_t j = threadIdx.x; j < g.seq; j += blockDim.x) {
      const S v = j < keys ? static_cast<S>(exp(double(s[j]) - m) / sum) : S(0);
      p[j] = Narrow<T>(v);
    }
    if (threadIdx.x == 0) lse[row] = static_cast<S>(m + log(sum));
  }
}

template <typename T, typename S>
__global__ void ProbsKernel(const S* scores, const S* lse, AttentionGeometry g, bool causal,
                            int64_t n, T* probs) {
  TANDEM_GRID_LOOP(i, n) {
    const int64_t row = i / g.seq, j = i % g.seq;
    const bool masked = causal && j > row % g.seq;
    probs[i] = Narrow<T>(masked ? S(0) : static_cast<S>(exp(double(scores[i]) - double(lse[row]))));
  }
}

template <typename T, typename S>
__global__ void RowDotKernel(const T* dout, const T* out, AttentionGeometry g, int64_t rows,
                             S* delta) {
  TANDEM_GRID_LOOP(row, rows) {
    const int64_t t = row % g.seq, bh = row / g.seq;
    const int64_t b = bh / g.heads, h = bh % g.heads;
    const int64_t offset = (b * g.seq + t) * g.heads * g.head_dim + h * g.head_dim;
    double sum = 0;
    for (int64_t c = 0; c < g.head_dim; ++c) {
      sum += double(Widen(dout[offset + c])) * double(Widen(out[offset + c]));
    }
    delta[row] = static_cast<S>(sum);
  }
}

template <typename T, typename S>
__global__ void ScoreGradKernel(T* probs, const S* dprobs, const S* delta, AttentionGeometry g,
                                S scale, int64_t n) {
  TANDEM_GRID_LOOP(i, n) {
    const S p = Widen(probs[i]);
    probs[i] = Narrow<T>(p * (dprobs[i] - delta[i / g.seq]) * scale);
  }
}

int64_t Rows(const AttentionGeometry& g) { return g.batch * g.heads * g.seq; }

}  // namespace

template <typename T>
cudaError_t LaunchRowsToHeads(const T* rows, const AttentionGeometry& g, int parts, T* heads,
                              cudaStream_t stream) {
  const int64_t n = parts * Rows(g) * g.head_dim;
  if (n == 0) return cudaSuccess;
  RowsToHeadsKernel<T><<<Blocks(n), kThreads, 0, stream>>>(rows, g, parts, n, heads);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchHeadsToRows(const T* heads, const AttentionGeometry& g, int parts, T* rows,
                              cudaStream_t stream) {
  const int64_t n = parts * Rows(g) * g.head_dim;
  if (n == 0) return cudaSuccess;
  HeadsToRowsKernel<T><<<Blocks(n), kThreads, 0, stream>>>(heads, g, parts, n, rows);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchAttentionSoftmax(const ComputeTypeOf<T>* scores, const AttentionGeometry& g,
                                   bool causal, T* probs, ComputeTypeOf<T>* lse,
                                   cudaStream_t stream) {
  if (Rows(g) == 0) return cudaSuccess;
  SoftmaxKernel<T, ComputeTypeOf<T>>
      <<<Blocks(Rows(g), 1), kRowThreads, 0, stream>>>(scores, g, causal, probs, lse);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchAttentionProbs(const ComputeTypeOf<T>* scores, const ComputeTypeOf<T>* lse,
                                 const AttentionGeometry& g, bool causal, T* probs,
                                 cudaStream_t stream) {
  const int64_t n = Rows(g) * g.seq;
  if (n == 0) return cudaSuccess;
  ProbsKernel<T, ComputeTypeOf<T>>
      <<<Blocks(n), kThreads, 0, stream>>>(scores, lse, g, causal, n, probs);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchAttentionRowDot(const T* dout, const T* out, const AttentionGeometry& g,
                                  ComputeTypeOf<T>* delta, cudaStream_t stream) {
  if (Rows(g) == 0) return cudaSuccess;
  RowDotKernel<T, ComputeTypeOf<T>>
      <<<Blocks(Rows(g)), kThreads, 0, stream>>>(dout, out, g, Rows(g), delta);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchAttentionScoreGrad(T* probs, const ComputeTypeOf<T>* dprobs,
                                     const ComputeTypeOf<T>* delta, const AttentionGeometry& g,
                                     double scale, cudaStream_t stream) {
  const int64_t n = Rows(g) * g.seq;
  if (n == 0) return cudaSuccess;
  using S = ComputeTypeOf<T>;
  ScoreGradKernel<T, S>
      <<<Blocks(n), kThreads, 0, stream>>>(probs, dprobs, delta, g, static_cast<S>(scale), n);
  return cudaGetLastError();
}

#define TANDEM_INSTANTIATE(T)                                                                     \
  template cudaError_t LaunchRowsToHeads<T>(const T*, const AttentionGeometry&, int, T*,          \
                                            cudaStream_t);                                        \
  template cudaError_t LaunchHeadsToRows<T>(const T*, const AttentionGeometry&, int, T*,          \
                                            cudaStream_t);                                        \
  template cudaError_t LaunchAttentionSoftmax<T>(const ComputeTypeOf<T>*,                         \
                                                 const AttentionGeometry&, bool, T*,              \
                                                 ComputeTypeOf<T>*, cudaStream_t);                \
  template cudaError_t LaunchAttentionProbs<T>(const ComputeTypeOf<T>*, const ComputeTypeOf<T>*,  \
                                               const AttentionGeometry&, bool, T*, cudaStream_t); \
  template cudaError_t LaunchAttentionRowDot<T>(const T*, const T*, const AttentionGeometry&,     \
                                                ComputeTypeOf<T>*, cudaStream_t);                 \
  template cudaError_t LaunchAttentionScoreGrad<T>(                                               \
      T*, const ComputeTypeOf<T>*, const ComputeTypeOf<T>*, const AttentionGeometry&, double,     \
      cudaStream_t);
TANDEM_INSTANTIATE(float)
TANDEM_INSTANTIATE(double)
TANDEM_INSTANTIATE(bfloat16)
TANDEM_INSTANTIATE(float16)
#undef TANDEM_INSTANTIATE

}  // namespace cuda
}  // namespace tandem
