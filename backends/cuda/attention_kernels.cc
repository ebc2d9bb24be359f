// gpu kernels of self_attention and self_attention_grad (ops/nn/attention_op.cc).
// The 16-bit types with heads of 16, 32, 64 or 128 columns run the fused
// kernels of flash_attention_launchers.cu: tensor-core tiles in shared
// memory, no [seq, seq] matrix in global memory, no scratch but the
// gradient's row dot products. Other cases run the products on cuBLAS's
// strided-batched GEMMs (tensor cores for the 16-bit types, float32 sums),
// the softmax and the layout changes in attention_launchers.cu: per (batch,
// head) the forward computes the scores S = scale * Q K^T into float32
// scratch (float64 for float64), the probabilities P, and Out = P V. Both
// keep only Lse for the gradient, which recomputes S and P. Scratch is
// freed when the op ends (declared through KernelDef::Scratch).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <initializer_list>

#include "backends/cuda/attention_launchers.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/flash_attention_launchers.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/kernel_util.h"
#include "backends/cuda/scratch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/kernel/op_kernel.h"
#include "ops/nn/prologues.h"
#include "ops/nn/shape_fns.h"

namespace tandem {
namespace cuda {
namespace {

AttentionGeometry GeometryOf(const AttentionDims& d) {
  return AttentionGeometry{d.batch, d.seq, d.heads, d.head_dim};
}

// The per-(batch, head) matrices of the products, in the heads layout of
// LaunchRowsToHeads: [parts, batch * heads, seq, head_dim].
struct HeadMatrices {
  const AttentionGeometry g;
  int64_t matrix() const { return g.seq * g.head_dim; }          // one head's Q, K, V or Out
  int64_t part() const { return g.batch * g.heads * matrix(); }  // all heads of one part
  int64_t scores() const { return g.seq * g.seq; }
};

// scores[bh] = scale * Q[bh] K[bh]^T, [seq, seq] in the compute type.
absl::Status Scores(KernelContext* ctx, DataType dtype, const HeadMatrices& h, const void* q,
                    const void* k, double scale, void* scores) {
  Gemm g;
  g.m = h.g.seq, g.n = h.g.seq, g.k = h.g.head_dim;
  g.batch = h.g.batch * h.g.heads;
  g.a = q, g.stride_a = h.matrix();
  g.b = k, g.stride_b = h.matrix(), g.trans_b = true;
  g.alpha = scale;
  return RunGemmStridedWide(ctx, g, dtype, scores, h.scores());
}

// c[bh] = op(a[bh]) * b[bh] with a [seq, seq] (transposed when trans_a) and
// b [seq, head_dim]: P V, P^T dO, dS K and dS^T Q.
absl::Status SeqProduct(KernelContext* ctx, DataType dtype, const HeadMatrices& h, const void* a,
                        bool trans_a, const void* b, void* c) {
  Gemm g;
  g.m = h.g.seq, g.n = h.g.head_dim, g.k = h.g.seq;
  g.batch = h.g.batch * h.g.heads;
  g.a = a, g.stride_a = h.scores(), g.trans_a = trans_a;
  g.b = b, g.stride_b = h.matrix();
  return RunGemmStrided(ctx, g, dtype, c, h.matrix());
}

// Whether the op runs the fused kernels: a 16-bit type and a geometry they
// take (FlashAttentionSupports). Every tensor starts an allocation (64-byte
// aligned), so the addresses' check, for the kernels' 16-byte loads, guards
// a broken allocator only.
bool UsesFlash(DataType dtype, const AttentionGeometry& g,
               std::initializer_list<const void*> data = {}) {
  if (!IsLowPrecisionFloat(dtype)) return false;
  if (!FlashAttentionSupports(g)) return false;
  for (const void* p : data) {
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  }
  return true;
}

// The scratch both kernels take, in bytes (the gradient's is the larger).
int64_t AttentionScratchBytes(const AttentionDims& d, DataType dtype, bool grad) {
  const int64_t t = SizeOf(dtype), s = SizeOf(ComputeDataType(dtype));
  const int64_t part = d.batch * d.seq * d.width, scores = d.batch * d.heads * d.seq * d.seq;
  const int64_t rows = d.batch * d.heads * d.seq;
  // The fused kernels: the gradient's delta only.
  if (UsesFlash(dtype, GeometryOf(d))) return grad ? rows * s : 0;
  // Forward: packed QKV, scores, probabilities, Out by heads.
  if (!grad) return 3 * part * t + scores * (s + t) + part * t;
  // Gradient: packed QKV, dO by heads, delta, scores (then dP), P (then dS), packed dQKV.
  return 3 * part * t + part * t + rows * s + scores * (s + t) + 3 * part * t;
}

int64_t SelfAttentionScratch(const OpDesc& op, const ArgMetas& in, const ArgMetas&) {
  const TensorMeta* qkv = FirstMeta(in, "QKV");
  prologue::AttentionAttrs attrs;
  if (qkv == nullptr || !attrs.Read(op).ok()) return 0;
  absl::StatusOr<AttentionDims> d =
      AttentionShape(op.type, qkv->shape, attrs.num_heads, attrs.scale);
  if (!d.ok() || d->batch < 0 || d->seq < 0 || d->width < 0) return 0;
  return AttentionScratchBytes(*d, qkv->dtype, op.type == "self_attention_grad");
}

class SelfAttentionKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Attention a, prologue::GetAttention(*ctx, attrs_, false));
    ASSIGN_OR_RETURN(const prologue::AttentionOutputs o,
                     prologue::AllocateAttentionOutputs(ctx, a));
    if (o.out->NumElements() == 0) return absl::OkStatus();
    const DataType dtype = a.qkv->dtype(), stats = ComputeDataType(dtype);
    const HeadMatrices h{GeometryOf(a.d)};
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    if (UsesFlash(dtype, h.g, {a.qkv->raw_data(), o.out->raw_data()})) {
      return Dispatch16BitFloat(dtype, [&](auto tag) -> absl::Status {
        using T = typename decltype(tag)::type;
        CUDA_RETURN_IF_ERROR(LaunchFlashAttention<T>(
            a.qkv->data<T>(), h.g, attrs_.causal, static_cast<float>(a.d.scale), o.out->data<T>(),
            o.lse->data<float>(), stream));
        return absl::OkStatus();
      });
    }
    ASSIGN_OR_RETURN(Tensor packed, AllocateScratch(ctx, dtype, Shape({3 * h.part()}),
                                                    "query, key and value by heads"));
    ASSIGN_OR_RETURN(Tensor scores,
                     AllocateScratch(ctx, stats, Shape({h.g.batch * h.g.heads, h.scores()}),
                                     "attention scores"));
    ASSIGN_OR_RETURN(Tensor probs, AllocateScratch(ctx, dtype, scores.shape(), "probabilities"));
    ASSIGN_OR_RETURN(Tensor out_heads,
                     AllocateScratch(ctx, dtype, Shape({h.part()}), "Out by heads"));
    return DispatchFloatWith16Bit(dtype, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      using S = ComputeTypeOf<T>;
      T* p = packed.data<T>();
      CUDA_RETURN_IF_ERROR(LaunchRowsToHeads<T>(a.qkv->data<T>(), h.g, 3, p, stream));
      RETURN_IF_ERROR(Scores(ctx, dtype, h, p, p + h.part(), a.d.scale, scores.raw_data()));
      CUDA_RETURN_IF_ERROR(LaunchAttentionSoftmax<T>(scores.data<S>(), h.g, attrs_.causal,
                                                     probs.data<T>(), o.lse->data<S>(), stream));
      RETURN_IF_ERROR(SeqProduct(ctx, dtype, h, probs.raw_data(), false, p + 2 * h.part(),
                                 out_heads.raw_data()));
      CUDA_RETURN_IF_ERROR(
          LaunchHeadsToRows<T>(out_heads.data<T>(), h.g, 1, o.out->data<T>(), stream));
      return absl::OkStatus();
    });
  }

 private:
  prologue::AttentionAttrs attrs_;
};

class SelfAttentionGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Attention a, prologue::GetAttention(*ctx, attrs_, true));
    const DataType dtype = a.qkv->dtype(), stats = ComputeDataType(dtype);
    ASSIGN_OR_RETURN(Tensor * dqkv, ctx->AllocateOutput("QKV@GRAD", dtype, a.qkv->shape()));
    if (dqkv->NumElements() == 0) return absl::OkStatus();
    const HeadMatrices h{GeometryOf(a.d)};
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    if (UsesFlash(dtype, h.g,
                  {a.qkv->raw_data(), a.dout->raw_data(), a.out->raw_data(), dqkv->raw_data()})) {
      ASSIGN_OR_RETURN(Tensor delta,
                       AllocateScratch(ctx, stats, Shape({h.g.batch * h.g.heads * h.g.seq}),
                                       "rows of Out@GRAD . Out"));
      return Dispatch16BitFloat(dtype, [&](auto tag) -> absl::Status {
        using T = typename decltype(tag)::type;
        CUDA_RETURN_IF_ERROR(LaunchAttentionRowDot<T>(a.dout->data<T>(), a.out->data<T>(), h.g,
                                                      delta.data<float>(), stream));
        CUDA_RETURN_IF_ERROR(LaunchFlashAttentionGrad<T>(
            a.qkv->data<T>(), a.dout->data<T>(), a.lse->data<float>(), delta.data<float>(), h.g,
            attrs_.causal, static_cast<float>(a.d.scale), dqkv->data<T>(), stream));
        return absl::OkStatus();
      });
    }
    const Shape per_score({h.g.batch * h.g.heads, h.scores()});
    ASSIGN_OR_RETURN(Tensor packed, AllocateScratch(ctx, dtype, Shape({3 * h.part()}),
                                                    "query, key and value by heads"));
    ASSIGN_OR_RETURN(Tensor dout_heads,
                     AllocateScratch(ctx, dtype, Shape({h.part()}), "Out@GRAD by heads"));
    ASSIGN_OR_RETURN(Tensor delta,
                     AllocateScratch(ctx, stats, Shape({h.g.batch * h.g.heads * h.g.seq}),
                                     "rows of Out@GRAD . Out"));
    ASSIGN_OR_RETURN(Tensor scores, AllocateScratch(ctx, stats, per_score, "attention scores"));
    ASSIGN_OR_RETURN(Tensor probs, AllocateScratch(ctx, dtype, per_score, "probabilities"));
    ASSIGN_OR_RETURN(Tensor dpacked, AllocateScratch(ctx, dtype, Shape({3 * h.part()}),
                                                     "query, key and value gradients by heads"));
    return DispatchFloatWith16Bit(dtype, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      using S = ComputeTypeOf<T>;
      T* p = packed.data<T>();
      T* dp = dpacked.data<T>();
      const T* q = p;
      const T* k = p + h.part();
      const T* v = p + 2 * h.part();
      CUDA_RETURN_IF_ERROR(LaunchRowsToHeads<T>(a.qkv->data<T>(), h.g, 3, p, stream));
      CUDA_RETURN_IF_ERROR(
          LaunchRowsToHeads<T>(a.dout->data<T>(), h.g, 1, dout_heads.data<T>(), stream));
      CUDA_RETURN_IF_ERROR(LaunchAttentionRowDot<T>(a.dout->data<T>(), a.out->data<T>(), h.g,
                                                    delta.data<S>(), stream));
      RETURN_IF_ERROR(Scores(ctx, dtype, h, q, k, a.d.scale, scores.raw_data()));
      CUDA_RETURN_IF_ERROR(LaunchAttentionProbs<T>(scores.data<S>(), a.lse->data<S>(), h.g,
                                                   attrs_.causal, probs.data<T>(), stream));
      // dV = P^T dO
      RETURN_IF_ERROR(SeqProduct(ctx, dtype, h, probs.raw_data(), true, dout_heads.raw_data(),
                                 dp + 2 * h.part()));
      // dP = dO V^T, into the scores' memory (scale 1)
      RETURN_IF_ERROR(Scores(ctx, dtype, h, dout_heads.raw_data(), v, 1.0, scores.raw_data()));
      CUDA_RETURN_IF_ERROR(LaunchAttentionScoreGrad<T>(probs.data<T>(), scores.data<S>(),
                                                       delta.data<S>(), h.g, a.d.scale, stream));
      // dQ = dS K, dK = dS^T Q
      RETURN_IF_ERROR(SeqProduct(ctx, dtype, h, probs.raw_data(), false, k, dp));
      RETURN_IF_ERROR(SeqProduct(ctx, dtype, h, probs.raw_data(), true, q, dp + h.part()));
      CUDA_RETURN_IF_ERROR(LaunchHeadsToRows<T>(dp, h.g, 3, dqkv->data<T>(), stream));
      return absl::OkStatus();
    });
  }

 private:
  prologue::AttentionAttrs attrs_;
};

REGISTER_KERNEL(KernelDef("self_attention", "gpu")
                    .TypeConstraint("QKV", kFloatTypesWith16Bit)
                    .Scratch(SelfAttentionScratch),
                SelfAttentionKernel);
REGISTER_KERNEL(KernelDef("self_attention_grad", "gpu")
                    .TypeConstraint("QKV", kFloatTypesWith16Bit)
                    .Scratch(SelfAttentionScratch),
                SelfAttentionGradKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
