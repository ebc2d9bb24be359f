// Fused (flash) self_attention kernels of the CUDA backend for the 16-bit
// types: the products on tensor cores (mma.sync, float32 sums) with their
// results in registers, the softmax online, one tile of 64 queries (or
// keys) against the other side's tiles streamed through shared memory, so
// no [seq, seq] matrix is ever written to memory. Implemented in
// flash_attention_launchers.cu; attention_kernels.cc chooses them where
// FlashAttentionSupports says so and falls back to its cuBLAS products
// otherwise. Plain C++: included by that .cu file and by the OpKernels.
//
//   AttentionGeometry g{batch, seq, heads, head_dim};
//   if (FlashAttentionSupports(g)) {
//     CUDA_RETURN_IF_ERROR(LaunchFlashAttention<bfloat16>(qkv, g, causal, scale, out, lse, s));
//   }
//
// Layouts are the op's: QKV [batch, seq, 3 * width] (width = heads *
// head_dim; Q, K, V side by side per token), Out, Out@GRAD [batch, seq,
// width], Lse and Delta [batch * heads * seq] (row (b * heads + h) * seq +
// t). Each call enqueues its kernels on `stream` and returns at once
// (async) with the launch status; nothing is launched when there is no
// element. Pointers are device memory of the stream's GPU, 16-byte aligned.
// Deterministic: every output element is written by one thread, its sums in
// a fixed order. Thread-safe.
#ifndef TANDEM_BACKENDS_CUDA_FLASH_ATTENTION_LAUNCHERS_H_
#define TANDEM_BACKENDS_CUDA_FLASH_ATTENTION_LAUNCHERS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/attention_launchers.h"
#include "framework/types/float16.h"

namespace tandem {
namespace cuda {

// Whether the fused kernels take `g`: heads of 16, 32, 64 or 128 columns
// (whole tensor-core tiles, shared memory within one block's limit) and a
// grid that fits (batch * heads below 2^31, seq at most 65535 tiles of 64).
bool FlashAttentionSupports(const AttentionGeometry& g);

// Out = softmax(scale * Q K^T, causal mask) V per (batch, head), and Lse =
// the log of each row's softmax denominator (scaled scores, max included).
// T is bfloat16 or float16.
template <typename T>
cudaError_t LaunchFlashAttention(const T* qkv, const AttentionGeometry& g, bool causal, float scale,
                                 T* out, float* lse, cudaStream_t stream);

// QKV@GRAD from QKV, Out@GRAD, the forward's Lse and delta (the per-row dot
// product of Out@GRAD and Out, LaunchAttentionRowDot): dK and dV by one
// kernel over key tiles, dQ by one over query tiles (no atomics).
template <typename T>
cudaError_t LaunchFlashAttentionGrad(const T* qkv, const T* dout, const float* lse,
                                     const float* delta, const AttentionGeometry& g, bool causal,
                                     float scale, T* dqkv, cudaStream_t stream);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_FLASH_ATTENTION_LAUNCHERS_H_
