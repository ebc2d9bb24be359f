#include "backends/common/nn_layer_kernels.h"

#include "absl/strings/str_cat.h"

namespace tandem {
namespace nn_layer_kernels_internal {

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

absl::Status DropoutAttrs::Read(const OpDesc& op) {
  ASSIGN_OR_RETURN(prob, GetAttr<double>(op.attrs, "dropout_prob", op.type));
  ASSIGN_OR_RETURN(is_test, GetAttr<bool>(op.attrs, "is_test", op.type));
  return CheckDropoutProb(op.type, prob);
}

}  // namespace nn_layer_kernels_internal
}  // namespace tandem
