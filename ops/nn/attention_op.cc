// self_attention (multi-head scaled dot-product attention over packed query,
// key and value projections, causal by default), and its gradient op.
#include <vector>

#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/math/shape_fns.h"
#include "ops/nn/shape_fns.h"

namespace tandem {
namespace {

// QKV's meta and the attention's dims after validating QKV and the attrs.
absl::StatusOr<AttentionDims> InferAttention(InferShapeContext* ctx, TensorMeta* qkv_out) {
  ASSIGN_OR_RETURN(TensorMeta qkv, ctx->Input("QKV"));
  RETURN_IF_ERROR(CheckFloating(ctx->op().type, "QKV", qkv.dtype));
  ASSIGN_OR_RETURN(int64_t heads, ctx->Attr<int64_t>("num_heads"));
  ASSIGN_OR_RETURN(double scale, ctx->Attr<double>("scale"));
  ASSIGN_OR_RETURN(AttentionDims d, AttentionShape(ctx->op().type, qkv.shape, heads, scale));
  *qkv_out = qkv;
  return d;
}

REGISTER_OP("self_attention")
    .Doc(
        "Multi-head scaled dot-product self-attention. QKV [B, T, 3 * D] holds the "
        "query, key and value projections side by side (columns [0, D), [D, 2D), "
        "[2D, 3D)); head h of each is its columns [h * Dh, (h + 1) * Dh), Dh = D / "
        "num_heads. Per batch row b and head h: S = scale * Q K^T ([T, T]; with causal, "
        "query i sees keys j <= i only), P = softmax(S) per row, and Out[b, :, h * Dh "
        ": (h + 1) * Dh] = P V. Lse [B, num_heads, T] = log(sum_j exp(S_ij)) per query "
        "row, what the gradient reads instead of P (so no [T, T] matrix outlives the "
        "op). Out has QKV's dtype; Lse is float64 for float64 QKV and float32 "
        "otherwise; 16-bit QKV computes in float32.")
    .Input("QKV")
    .Output("Out")
    .Output("Lse")
    .Attr<int64_t>("num_heads", 1, "heads; the width D must be a multiple")
    .Attr<bool>("causal", true, "query i attends to keys 0..i only")
    .Attr<double>("scale", 0.0, "multiplies Q K^T; 0: 1 / sqrt(Dh)")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      TensorMeta qkv;
      ASSIGN_OR_RETURN(AttentionDims d, InferAttention(ctx, &qkv));
      ctx->SetOutput("Out", TensorMeta{qkv.dtype, d.OutShape()});
      ctx->SetOutput("Lse", TensorMeta{ComputeDataType(qkv.dtype), d.LseShape()});
      return absl::OkStatus();
    })
    .SetGradMaker([](const OpDesc& fwd,
                     const GradContext& ctx) -> absl::StatusOr<std::vector<OpDesc>> {
      if (!ctx.Wants(fwd.Input("QKV"))) return std::vector<OpDesc>{};
      OpDesc g;
      g.type = "self_attention_grad";
      g.inputs["QKV"] = {fwd.Input("QKV")};
      g.inputs["Out"] = {fwd.Output("Out")};
      g.inputs["Lse"] = {fwd.Output("Lse")};
      g.inputs["Out@GRAD"] = {GradVarName(fwd.Output("Out"))};
      g.outputs["QKV@GRAD"] = {GradVarName(fwd.Input("QKV"))};
      g.attrs = fwd.attrs;
      return std::vector<OpDesc>{g};
    });

REGISTER_OP("self_attention_grad")
    .Doc(
        "The gradient of self_attention's Out with respect to QKV (Lse passes none "
        "back). Per batch row and head, with P recomputed as exp(S - Lse), dO = "
        "Out@GRAD and delta_i = sum_c dO_ic Out_ic: dV = P^T dO, dS = P * (dO V^T - "
        "delta), dQ = scale * dS K, dK = scale * dS^T Q, written into QKV@GRAD's query, "
        "key and value columns.")
    .Input("QKV")
    .Input("Out")
    .Input("Lse")
    .Input("Out@GRAD")
    .Output("QKV@GRAD")
    .Attr<int64_t>("num_heads", 1)
    .Attr<bool>("causal", true)
    .Attr<double>("scale", 0.0)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      TensorMeta qkv;
      ASSIGN_OR_RETURN(AttentionDims d, InferAttention(ctx, &qkv));
      const std::string& op = ctx->op().type;
      for (const char* arg : {"Out", "Out@GRAD"}) {
        ASSIGN_OR_RETURN(TensorMeta m, ctx->Input(arg));
        RETURN_IF_ERROR(CheckArgMeta(op, arg, m.dtype, m.shape, qkv.dtype, d.OutShape()));
      }
      ASSIGN_OR_RETURN(TensorMeta lse, ctx->Input("Lse"));
      RETURN_IF_ERROR(
          CheckArgMeta(op, "Lse", lse.dtype, lse.shape, ComputeDataType(qkv.dtype), d.LseShape()));
      ctx->SetOutput("QKV@GRAD", qkv);
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
