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

constexpr int kHeadRowsPerBlock = 8;  // head rows per block of the layout kernels

// Moves [batch, seq, parts * width] rows to or from [parts, batch * heads,
// seq, head_dim] heads: each head row (head_dim contiguous elements on both
// sides) is found once, by its (part, batch, head, position), and its
// elements copied by consecutive threads: no division per element.
template <typename T, bool kToHeads>
__global__ void HeadLayoutKernel(const T* from, AttentionGeometry g, int parts, int64_t head_rows,
                                 T* to) {
  const int64_t width = g.heads * g.head_dim, bhs = g.batch * g.heads;
  for (int64_t r = int64_t{blockIdx.x} * blockDim.y + threadIdx.y; r < head_rows;
       r += int64_t{gridDim.x} * blockDim.y) {
    const int64_t t = r % g.seq, q = r / g.seq;
    const int64_t bh = q % bhs, part = q / bhs;
    const int64_t b = bh / g.heads, h = bh % g.heads;
    const int64_t row = ((b * g.seq + t) * parts + part) * width + h * g.head_dim;
    const int64_t head = r * g.head_dim;
    for (int64_t c = threadIdx.x; c < g.head_dim; c += blockDim.x) {
      if (kToHeads) {
        to[head + c] = from[row + c];
      } else {
        to[row + c] = from[head + c];
      }
    }
  }
}

// The kernels over the [rows, seq] score matrix: blocks stride over score
// rows (row = (batch * heads) * seq + t), threads over a row's columns, so
// a row's position, its statistics and its mask bound are found once.
// Exponentials in S (float for float32 and the 16-bit types, double for
// float64); row sums in double.

template <typename T, typename S>
__global__ void SoftmaxKernel(const S* scores, AttentionGeometry g, bool causal, T* probs, S* lse) {
  const int64_t rows = g.batch * g.heads * g.seq;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t keys = causal ? row % g.seq + 1 : g.seq;
    const S* s = scores + row * g.seq;
    double m = device::MaxOp::Identity();
    for (int64_t j = threadIdx.x; j < keys; j += blockDim.x) m = fmax(m, double(s[j]));
    m = BlockMax(m);
    const S ms = static_cast<S>(m);
    double sum = 0;
    for (int64_t j = threadIdx.x; j < keys; j += blockDim.x) sum += exp(s[j] - ms);
    sum = BlockSum(sum);
    T* p = probs + row * g.seq;
    const S inverse = static_cast<S>(1 / sum);
    for (int64_t j = threadIdx.x; j < g.seq; j += blockDim.x) {
      p[j] = Narrow<T>(j < keys ? exp(s[j] - ms) * inverse : S(0));
    }
    if (threadIdx.x == 0) lse[row] = static_cast<S>(m + log(sum));
  }
}

template <typename T, typename S>
__global__ void ProbsKernel(const S* scores, const S* lse, AttentionGeometry g, bool causal,
                            int64_t rows, T* probs) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t keys = causal ? row % g.seq + 1 : g.seq;
    const S l = lse[row];
    const S* s = scores + row * g.seq;
    T* p = probs + row * g.seq;
    for (int64_t j = threadIdx.x; j < g.seq; j += blockDim.x) {
      p[j] = Narrow<T>(j < keys ? exp(s[j] - l) : S(0));
    }
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
                                S scale, int64_t rows) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const S d = delta[row];
    T* p = probs + row * g.seq;
    const S* dp = dprobs + row * g.seq;
    for (int64_t j = threadIdx.x; j < g.seq; j += blockDim.x) {
      const S v = Widen(p[j]);
      p[j] = Narrow<T>(v * (dp[j] - d) * scale);
    }
  }
}

int64_t Rows(const AttentionGeometry& g) { return g.batch * g.heads * g.seq; }

}  // namespace

template <typename T>
cudaError_t LaunchRowsToHeads(const T* rows, const AttentionGeometry& g, int parts, T* heads,
                              cudaStream_t stream) {
  const int64_t head_rows = parts * Rows(g);
  if (head_rows == 0 || g.head_dim == 0) return cudaSuccess;
  HeadLayoutKernel<T, true><<<Blocks(head_rows, kHeadRowsPerBlock), dim3(32, kHeadRowsPerBlock),
                              0, stream>>>(rows, g, parts, head_rows, heads);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchHeadsToRows(const T* heads, const AttentionGeometry& g, int parts, T* rows,
                              cudaStream_t stream) {
  const int64_t head_rows = parts * Rows(g);
  if (head_rows == 0 || g.head_dim == 0) return cudaSuccess;
  HeadLayoutKernel<T, false><<<Blocks(head_rows, kHeadRowsPerBlock), dim3(32, kHeadRowsPerBlock),
                               0, stream>>>(heads, g, parts, head_rows, rows);
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
  if (Rows(g) == 0 || g.seq == 0) return cudaSuccess;
  ProbsKernel<T, ComputeTypeOf<T>>
      <<<Blocks(Rows(g), 1), kRowThreads, 0, stream>>>(scores, lse, g, causal, Rows(g), probs);
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
  if (Rows(g) == 0 || g.seq == 0) return cudaSuccess;
  using S = ComputeTypeOf<T>;
  ScoreGradKernel<T, S><<<Blocks(Rows(g), 1), kRowThreads, 0, stream>>>(
      probs, dprobs, delta, g, static_cast<S>(scale), Rows(g));
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
