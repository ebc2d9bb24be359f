// Launchers of the CUDA backend's self_attention kernels, implemented in
// attention_launchers.cu; the products between them run on cuBLAS (gemm.h,
// attention_kernels.cc). Plain C++: included by that .cu file and by the
// OpKernels.
//
//   AttentionGeometry g{batch, seq, heads, head_dim};
//   CUDA_RETURN_IF_ERROR(LaunchRowsToHeads<bfloat16>(qkv, g, 3, packed, stream));
//   ... scores = scale * Q K^T (float32) ...
//   CUDA_RETURN_IF_ERROR(LaunchAttentionSoftmax<bfloat16>(scores, g, true, probs, lse, stream));
//
// T is float, double, bfloat16 or float16; S, the scores' and statistics'
// type, is ComputeTypeOf<T> (float for the 16-bit types). Each call enqueues
// its kernel on `stream` and returns at once (async) with the launch status;
// nothing is launched when there is no element. Pointers are device memory
// of the stream's GPU. Thread-safe.
#ifndef TANDEM_BACKENDS_CUDA_ATTENTION_LAUNCHERS_H_
#define TANDEM_BACKENDS_CUDA_ATTENTION_LAUNCHERS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "framework/types/float16.h"

namespace tandem {
namespace cuda {

// The attention's sizes: `heads` heads of `head_dim` columns per token.
struct AttentionGeometry {
  int64_t batch = 0, seq = 0, heads = 1, head_dim = 0;
};

// rows [batch, seq, parts * width] (width = heads * head_dim; QKV has 3
// parts, Out 1) to heads [parts, batch * heads, seq, head_dim], contiguous
// per (part, batch, head) for the strided-batched products; and back.
template <typename T>
cudaError_t LaunchRowsToHeads(const T* rows, const AttentionGeometry& g, int parts, T* heads,
                              cudaStream_t stream);
template <typename T>
cudaError_t LaunchHeadsToRows(const T* heads, const AttentionGeometry& g, int parts, T* rows,
                              cudaStream_t stream);

// Per row of scores [batch * heads * seq, seq] (query i of a causal
// attention sees keys 0..i): probs = exp(s - max) / sum in T (0 where
// masked), lse = max + log(sum). Sums in double, as the host kernels do.
template <typename T>
cudaError_t LaunchAttentionSoftmax(const ComputeTypeOf<T>* scores, const AttentionGeometry& g,
                                   bool causal, T* probs, ComputeTypeOf<T>* lse,
                                   cudaStream_t stream);

// The forward's probabilities again from its scores and lse: probs =
// exp(s - lse) in T (0 where masked).
template <typename T>
cudaError_t LaunchAttentionProbs(const ComputeTypeOf<T>* scores, const ComputeTypeOf<T>* lse,
                                 const AttentionGeometry& g, bool causal, T* probs,
                                 cudaStream_t stream);

// delta [batch * heads * seq] = the dot product of Out@GRAD's and Out's rows
// ([batch, seq, width]) of each head.
template <typename T>
cudaError_t LaunchAttentionRowDot(const T* dout, const T* out, const AttentionGeometry& g,
                                  ComputeTypeOf<T>* delta, cudaStream_t stream);

// In place: probs becomes dS = probs * (dprobs - delta[row]) * scale, in T.
template <typename T>
cudaError_t LaunchAttentionScoreGrad(T* probs, const ComputeTypeOf<T>* dprobs,
                                     const ComputeTypeOf<T>* delta, const AttentionGeometry& g,
                                     double scale, cudaStream_t stream);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_ATTENTION_LAUNCHERS_H_
