#include "ops/nn/prologues.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "ops/math/prologues.h"

namespace tandem {
namespace prologue {

absl::Status LookupAttrs::Read(const OpDesc& op) {
  ASSIGN_OR_RETURN(padding_idx, GetAttr<int64_t>(op.attrs, "padding_idx", op.type));
  ASSIGN_OR_RETURN(is_sparse, GetAttr<bool>(op.attrs, "is_sparse", op.type));
  return absl::OkStatus();
}

absl::StatusOr<Lookup> GetLookup(const KernelContext& ctx, int64_t padding_idx) {
  Lookup l;
  ASSIGN_OR_RETURN(l.ids, ctx.InputTensor("Ids"));
  ASSIGN_OR_RETURN(l.w, ctx.InputTensor("W"));
  const std::string& op = ctx.op().type;
  ASSIGN_OR_RETURN(
      l.out, LookupTableShape(op, {l.ids->dtype(), l.ids->shape()}, {l.w->dtype(), l.w->shape()}));
  l.n = l.ids->NumElements();
  l.rows = l.w->shape().dim(0);
  l.dim = l.w->shape().dim(1);
  ASSIGN_OR_RETURN(l.padding_row, PaddingRow(op, padding_idx, l.rows));
  return l;
}

absl::Status BadIdError(absl::string_view op, absl::string_view table, int64_t id, int64_t position,
                        int64_t rows) {
  return absl::InvalidArgumentError(absl::StrCat("op '", op, "': id ", id, " at position ",
                                                 position, " is out of range [0, ", rows,
                                                 ") of table '", table, "'"));
}

absl::StatusOr<FlatMatmulDims> GetFcDims(const KernelContext& ctx, const Tensor& input,
                                         const Tensor& w, const Tensor* bias,
                                         int64_t in_num_col_dims) {
  if (bias == nullptr) {
    return FcShape(ctx.op().type, {input.dtype(), input.shape()}, in_num_col_dims,
                   {w.dtype(), w.shape()}, nullptr);
  }
  const TensorMeta bias_meta{bias->dtype(), bias->shape()};
  return FcShape(ctx.op().type, {input.dtype(), input.shape()}, in_num_col_dims,
                 {w.dtype(), w.shape()}, &bias_meta);
}

absl::StatusOr<FcArgs> GetFcArgs(KernelContext* ctx, int64_t in_num_col_dims) {
  FcArgs a;
  ASSIGN_OR_RETURN(a.input, ctx->InputTensor("Input"));
  ASSIGN_OR_RETURN(a.w, ctx->InputTensor("W"));
  if (ctx->HasInput("Bias")) {
    ASSIGN_OR_RETURN(a.bias, ctx->InputTensor("Bias"));
  }
  ASSIGN_OR_RETURN(a.d, GetFcDims(*ctx, *a.input, *a.w, a.bias, in_num_col_dims));
  ASSIGN_OR_RETURN(a.out, ctx->AllocateOutput("Out", a.input->dtype(), a.d.out));
  return a;
}

absl::StatusOr<FcGradArgs> GetFcGradArgs(KernelContext* ctx, int64_t in_num_col_dims) {
  FcGradArgs a;
  ASSIGN_OR_RETURN(a.input, ctx->InputTensor("Input"));
  ASSIGN_OR_RETURN(a.w, ctx->InputTensor("W"));
  ASSIGN_OR_RETURN(a.dout, ctx->InputTensor("Out@GRAD"));
  ASSIGN_OR_RETURN(a.d, GetFcDims(*ctx, *a.input, *a.w, nullptr, in_num_col_dims));
  const DataType dtype = a.input->dtype();
  RETURN_IF_ERROR(
      CheckArgMeta(ctx->op().type, "Out@GRAD", a.dout->dtype(), a.dout->shape(), dtype, a.d.out));
  ASSIGN_OR_RETURN(a.dinput, AllocateIfBound(ctx, "Input@GRAD", dtype, a.input->shape()));
  ASSIGN_OR_RETURN(a.dw, AllocateIfBound(ctx, "W@GRAD", dtype, a.w->shape()));
  ASSIGN_OR_RETURN(a.dbias, AllocateIfBound(ctx, "Bias@GRAD", dtype, Shape({a.d.n})));
  return a;
}

absl::Status DropoutAttrs::Read(const OpDesc& op) {
  ASSIGN_OR_RETURN(prob, GetAttr<double>(op.attrs, "dropout_prob", op.type));
  ASSIGN_OR_RETURN(is_test, GetAttr<bool>(op.attrs, "is_test", op.type));
  return CheckDropoutProb(op.type, prob);
}

absl::StatusOr<DropoutArgs> GetDropoutArgs(KernelContext* ctx) {
  DropoutArgs a;
  ASSIGN_OR_RETURN(a.x, ctx->InputTensor("X"));
  ASSIGN_OR_RETURN(a.out, ctx->AllocateOutput("Out", a.x->dtype(), a.x->shape()));
  ASSIGN_OR_RETURN(a.mask, ctx->AllocateOutput("Mask", DataType::kBool, a.x->shape()));
  return a;
}

absl::StatusOr<DropoutGradArgs> GetDropoutGradArgs(KernelContext* ctx) {
  DropoutGradArgs a;
  ASSIGN_OR_RETURN(a.mask, ctx->InputTensor("Mask"));
  ASSIGN_OR_RETURN(a.dout, ctx->InputTensor("Out@GRAD"));
  RETURN_IF_ERROR(CheckArgMeta(ctx->op().type, "Mask", a.mask->dtype(), a.mask->shape(),
                               DataType::kBool, a.dout->shape()));
  ASSIGN_OR_RETURN(a.dx, ctx->AllocateOutput("X@GRAD", a.dout->dtype(), a.dout->shape()));
  return a;
}

absl::StatusOr<Conv> GetConv(const KernelContext& ctx, const Conv2DParams& params, bool grad) {
  Conv c;
  const std::string& op = ctx.op().type;
  ASSIGN_OR_RETURN(c.input, ctx.InputTensor("Input"));
  ASSIGN_OR_RETURN(c.filter, ctx.InputTensor("Filter"));
  RETURN_IF_ERROR(CheckFloating(op, "Input", c.input->dtype()));
  if (c.filter->dtype() != c.input->dtype()) {
    return ctx.InvalidArgument(absl::StrCat("Filter is ", DataTypeName(c.filter->dtype()),
                                            " but Input is ", DataTypeName(c.input->dtype())));
  }
  ASSIGN_OR_RETURN(c.g, Conv2DShape(op, c.input->shape(), c.filter->shape(), params));
  if (grad) {
    ASSIGN_OR_RETURN(c.dout, ctx.InputTensor("Output@GRAD"));
    RETURN_IF_ERROR(CheckArgMeta(op, "Output@GRAD", c.dout->dtype(), c.dout->shape(),
                                 c.input->dtype(), c.g.output));
  }
  return c;
}

ConvDims::ConvDims(const Conv2DGeometry& g)
    : groups(g.p.groups),
      cg(g.c / g.p.groups),
      mg(g.m / g.p.groups),
      k(g.c / g.p.groups * g.kh * g.kw),
      p(g.oh * g.ow),
      plane(g.h * g.w),
      direct(g.kh == 1 && g.kw == 1 && g.p.stride_h == 1 && g.p.stride_w == 1 && g.p.pad_h == 0 &&
             g.p.pad_w == 0) {}

absl::StatusOr<Pool> GetPool(const KernelContext& ctx, const Pool2DParams& params, bool grad) {
  Pool p;
  const std::string& op = ctx.op().type;
  ASSIGN_OR_RETURN(p.x, ctx.InputTensor("X"));
  RETURN_IF_ERROR(CheckFloating(op, "X", p.x->dtype()));
  ASSIGN_OR_RETURN(p.g, Pool2DShape(op, p.x->shape(), params));
  if (grad) {
    ASSIGN_OR_RETURN(p.out, ctx.InputTensor("Out"));
    ASSIGN_OR_RETURN(p.dout, ctx.InputTensor("Out@GRAD"));
    RETURN_IF_ERROR(CheckArgMeta(op, "Out", p.out->dtype(), p.out->shape(), p.x->dtype(), p.g.out));
    RETURN_IF_ERROR(
        CheckArgMeta(op, "Out@GRAD", p.dout->dtype(), p.dout->shape(), p.x->dtype(), p.g.out));
  }
  return p;
}

absl::Status NormAttrs::Read(const OpDesc& op) {
  ASSIGN_OR_RETURN(begin_norm_axis, GetAttr<int64_t>(op.attrs, "begin_norm_axis", op.type));
  ASSIGN_OR_RETURN(epsilon, GetAttr<double>(op.attrs, "epsilon", op.type));
  return absl::OkStatus();
}

absl::StatusOr<Norm> GetNorm(const KernelContext& ctx, int64_t begin_norm_axis, bool grad) {
  Norm n;
  const std::string& op = ctx.op().type;
  ASSIGN_OR_RETURN(n.x, ctx.InputTensor("X"));
  RETURN_IF_ERROR(CheckFloating(op, "X", n.x->dtype()));
  ASSIGN_OR_RETURN(n.d, LayerNormShape(op, n.x->shape(), begin_norm_axis));
  const DataType dtype = n.x->dtype();
  const Shape row({n.d.cols}), column({n.d.rows});
  struct Arg {
    const char* name;
    const Tensor** tensor;
    const Shape* shape;
    bool optional;
  };
  std::vector<Arg> args = {{"Scale", &n.scale, &row, true}};
  if (grad) {
    args.push_back({"Mean", &n.mean, &column, false});
    args.push_back({"Variance", &n.var, &column, false});
    args.push_back({"Y@GRAD", &n.dy, &n.x->shape(), false});
  } else {
    args.push_back({"Bias", &n.bias, &row, true});
  }
  for (const Arg& a : args) {
    if (a.optional && !ctx.HasInput(a.name)) continue;
    ASSIGN_OR_RETURN(*a.tensor, ctx.InputTensor(a.name));
    RETURN_IF_ERROR(
        CheckArgMeta(op, a.name, (*a.tensor)->dtype(), (*a.tensor)->shape(), dtype, *a.shape));
  }
  return n;
}

absl::StatusOr<NormOutputs> AllocateNormOutputs(KernelContext* ctx, const Norm& n) {
  const DataType dtype = n.x->dtype();
  NormOutputs o;
  ASSIGN_OR_RETURN(o.y, ctx->AllocateOutput("Y", dtype, n.x->shape()));
  ASSIGN_OR_RETURN(o.mean, ctx->AllocateOutput("Mean", dtype, Shape({n.d.rows})));
  ASSIGN_OR_RETURN(o.var, ctx->AllocateOutput("Variance", dtype, Shape({n.d.rows})));
  return o;
}

absl::StatusOr<NormGrads> AllocateNormGrads(KernelContext* ctx, const Norm& n) {
  const DataType dtype = n.x->dtype();
  NormGrads g;
  ASSIGN_OR_RETURN(g.dx, AllocateIfBound(ctx, "X@GRAD", dtype, n.x->shape()));
  ASSIGN_OR_RETURN(g.dscale, AllocateIfBound(ctx, "Scale@GRAD", dtype, Shape({n.d.cols})));
  ASSIGN_OR_RETURN(g.dbias, AllocateIfBound(ctx, "Bias@GRAD", dtype, Shape({n.d.cols})));
  return g;
}

absl::Status AttentionAttrs::Read(const OpDesc& op) {
  ASSIGN_OR_RETURN(num_heads, GetAttr<int64_t>(op.attrs, "num_heads", op.type));
  ASSIGN_OR_RETURN(causal, GetAttr<bool>(op.attrs, "causal", op.type));
  ASSIGN_OR_RETURN(scale, GetAttr<double>(op.attrs, "scale", op.type));
  return absl::OkStatus();
}

absl::StatusOr<Attention> GetAttention(const KernelContext& ctx, const AttentionAttrs& attrs,
                                       bool grad) {
  Attention a;
  const std::string& op = ctx.op().type;
  ASSIGN_OR_RETURN(a.qkv, ctx.InputTensor("QKV"));
  RETURN_IF_ERROR(CheckFloating(op, "QKV", a.qkv->dtype()));
  ASSIGN_OR_RETURN(a.d, AttentionShape(op, a.qkv->shape(), attrs.num_heads, attrs.scale));
  if (!grad) return a;
  const DataType dtype = a.qkv->dtype();
  for (auto [name, tensor] : {std::pair{"Out", &a.out}, std::pair{"Out@GRAD", &a.dout}}) {
    ASSIGN_OR_RETURN(*tensor, ctx.InputTensor(name));
    RETURN_IF_ERROR(
        CheckArgMeta(op, name, (*tensor)->dtype(), (*tensor)->shape(), dtype, a.d.OutShape()));
  }
  ASSIGN_OR_RETURN(a.lse, ctx.InputTensor("Lse"));
  RETURN_IF_ERROR(CheckArgMeta(op, "Lse", a.lse->dtype(), a.lse->shape(), ComputeDataType(dtype),
                               a.d.LseShape()));
  return a;
}

absl::StatusOr<AttentionOutputs> AllocateAttentionOutputs(KernelContext* ctx, const Attention& a) {
  AttentionOutputs o;
  ASSIGN_OR_RETURN(o.out, ctx->AllocateOutput("Out", a.qkv->dtype(), a.d.OutShape()));
  ASSIGN_OR_RETURN(o.lse,
                   ctx->AllocateOutput("Lse", ComputeDataType(a.qkv->dtype()), a.d.LseShape()));
  return o;
}

}  // namespace prologue
}  // namespace tandem
