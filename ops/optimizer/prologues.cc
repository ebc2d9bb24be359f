#include "ops/optimizer/prologues.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"

namespace tandem {
namespace prologue {

TensorMeta UpdateArgs::grad_meta() const {
  const Tensor* data = grad->data_tensor();
  if (!sparse()) return {data->dtype(), data->shape()};
  return {data->dtype(), grad->selected_rows().DenseShape(),
          /*selected_rows=*/true};
}

absl::StatusOr<UpdateArgs> GetUpdateArgs(const KernelContext& ctx) {
  UpdateArgs a;
  ASSIGN_OR_RETURN(a.param, ctx.InputTensor("Param"));
  ASSIGN_OR_RETURN(a.learning_rate, ctx.InputTensor("LearningRate"));
  a.grad = ctx.InputVar("Grad");
  const Tensor* grad_data = a.grad == nullptr ? nullptr : a.grad->data_tensor();
  if (grad_data == nullptr || !grad_data->initialized()) {
    return ctx.InvalidArgument(absl::StrCat("input 'Grad' (variable '", ctx.InputName("Grad"),
                                            "') is missing or not initialised"));
  }
  if (ctx.HasInput("SkipUpdate")) {  // in host memory (the registration line)
    ASSIGN_OR_RETURN(const Tensor* skip, ctx.InputTensor("SkipUpdate"));
    RETURN_IF_ERROR(CheckSkipUpdate(ctx.op(), {skip->dtype(), skip->shape()}));
    a.skip = skip->data<bool>()[0];
  }
  if (ctx.HasInput("GradScale")) {  // on the op's place: checked, not read
    ASSIGN_OR_RETURN(a.grad_scale, ctx.InputTensor("GradScale"));
    RETURN_IF_ERROR(CheckScalarArg(
        ctx.op(), "GradScale", {a.grad_scale->dtype(), a.grad_scale->shape()}, a.param->dtype()));
    if (a.grad->is_selected_rows()) {
      return ctx.InvalidArgument(absl::StrCat("GradScale scales a dense Grad only; '",
                                              ctx.InputName("Grad"), "' is SelectedRows"));
    }
  }
  return a;
}

double UpdateArgs::GradScaleOnHost() const {
  if (grad_scale == nullptr) return 1;
  return grad_scale->dtype() == DataType::kFloat64 ? grad_scale->data<double>()[0]
                                                   : grad_scale->data<float>()[0];
}

absl::Status CheckSparseGrad(const KernelContext& ctx, const UpdateArgs& a) {
  if (!a.sparse()) return absl::OkStatus();
  const SelectedRows& g = a.grad->selected_rows();
  const Shape& value_shape = g.value().shape();
  const int64_t n = static_cast<int64_t>(g.rows().size());
  if (value_shape.rank() == 0 || value_shape.dim(0) != n) {
    return ctx.InvalidArgument(absl::StrCat("Grad '", ctx.InputName("Grad"), "' has ", n,
                                            " rows but a value of shape ", value_shape.ToString()));
  }
  const int64_t bad = FirstOutOfRange(g.rows().data(), n, g.height());
  if (bad >= 0) {
    return ctx.InvalidArgument(absl::StrCat(
        "row ", g.rows()[bad], " at position ", bad, " of Grad '", ctx.InputName("Grad"),
        "' is out of range [0, ", g.height(), ") of Param '", ctx.InputName("Param"), "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<UpdateArgs> GetSgdArgs(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const UpdateArgs a, GetUpdateArgs(ctx));
  RETURN_IF_ERROR(CheckSgdArgs(ctx.op(), a.param_meta(), a.grad_meta(), a.learning_rate_meta()));
  RETURN_IF_ERROR(CheckSparseGrad(ctx, a));
  return a;
}

absl::StatusOr<MomentumArgs> GetMomentumArgs(const KernelContext& ctx) {
  MomentumArgs a;
  ASSIGN_OR_RETURN(a.u, GetUpdateArgs(ctx));
  ASSIGN_OR_RETURN(a.velocity, ctx.InputTensor("Velocity"));
  RETURN_IF_ERROR(CheckMomentumArgs(ctx.op(), a.u.param_meta(), a.u.grad_meta(),
                                    {a.velocity->dtype(), a.velocity->shape()},
                                    a.u.learning_rate_meta()));
  RETURN_IF_ERROR(CheckSparseGrad(ctx, a.u));
  return a;
}

absl::StatusOr<AdamArgs> GetAdamArgs(const KernelContext& ctx) {
  AdamArgs a;
  ASSIGN_OR_RETURN(a.u, GetUpdateArgs(ctx));
  ASSIGN_OR_RETURN(a.m1, ctx.InputTensor("Moment1"));
  ASSIGN_OR_RETURN(a.m2, ctx.InputTensor("Moment2"));
  ASSIGN_OR_RETURN(a.beta1_pow, ctx.InputTensor("Beta1Pow"));
  ASSIGN_OR_RETURN(a.beta2_pow, ctx.InputTensor("Beta2Pow"));
  RETURN_IF_ERROR(CheckAdamArgs(ctx.op(), {a.u.param_meta(),
                                           a.u.grad_meta(),
                                           a.u.learning_rate_meta(),
                                           {a.m1->dtype(), a.m1->shape()},
                                           {a.m2->dtype(), a.m2->shape()},
                                           {a.beta1_pow->dtype(), a.beta1_pow->shape()},
                                           {a.beta2_pow->dtype(), a.beta2_pow->shape()}}));
  RETURN_IF_ERROR(CheckSparseGrad(ctx, a.u));
  return a;
}

absl::StatusOr<Tensor*> AllocateParamCast(KernelContext* ctx, const AdamArgs& a) {
  if (ctx->OutputVar("ParamCastOut") == nullptr) return nullptr;
  ASSIGN_OR_RETURN(const DataType dtype, ctx->Attr<DataType>("param_cast_dtype"));
  RETURN_IF_ERROR(CheckParamCast(ctx->op(), a.u.param->dtype(), a.u.sparse(), dtype));
  return ctx->AllocateOutput("ParamCastOut", dtype, a.u.param->shape());
}

absl::Status BindMomentumOutputs(KernelContext* ctx, const MomentumArgs& a) {
  RETURN_IF_ERROR(ctx->SetOutput("ParamOut", *a.u.param));
  return ctx->SetOutput("VelocityOut", *a.velocity);
}

absl::Status BindAdamOutputs(KernelContext* ctx, const AdamArgs& a) {
  RETURN_IF_ERROR(ctx->SetOutput("ParamOut", *a.u.param));
  RETURN_IF_ERROR(ctx->SetOutput("Moment1Out", *a.m1));
  RETURN_IF_ERROR(ctx->SetOutput("Moment2Out", *a.m2));
  RETURN_IF_ERROR(ctx->SetOutput("Beta1PowOut", *a.beta1_pow));
  return ctx->SetOutput("Beta2PowOut", *a.beta2_pow);
}

absl::StatusOr<UnscaleArgs> GetUnscaleArgs(KernelContext* ctx) {
  const Variable* x = ctx->InputVar("X");
  const Tensor* data = x == nullptr ? nullptr : x->data_tensor();
  if (data == nullptr || !data->initialized()) {
    return ctx->InvalidArgument(absl::StrCat("input 'X' (variable '", ctx->InputName("X"),
                                             "') is missing or not initialised"));
  }
  UnscaleArgs a;
  a.values = *data;
  if (x->is_selected_rows()) a.sparse = x->selected_rows();
  ASSIGN_OR_RETURN(const Tensor* scale, ctx->InputTensor("Scale"));
  a.divisor = scale->data<float>()[0];
  ASSIGN_OR_RETURN(a.out, ctx->AllocateOutput("Out", a.values.dtype(), a.values.shape()));
  ASSIGN_OR_RETURN(a.found_infinite,
                   ctx->AllocateOutput("FoundInfinite", DataType::kBool, Shape({1})));
  return a;
}

absl::Status FinishUnscale(KernelContext* ctx, const UnscaleArgs& a) {
  if (!a.sparse.has_value()) return absl::OkStatus();
  Variable* out = ctx->OutputVar("Out");
  if (out == nullptr) return ctx->InvalidArgument("output 'Out' is not bound");
  out->set(SelectedRows(a.sparse->height(), a.sparse->rows(), *a.out));
  return absl::OkStatus();
}

absl::StatusOr<SquaredNormArgs> GetSquaredNormArgs(KernelContext* ctx) {
  const Variable* x = ctx->InputVar("X");
  if (x == nullptr || x->is_selected_rows() || x->data_tensor() == nullptr ||
      !x->data_tensor()->initialized() || !IsFloating(x->data_tensor()->dtype())) {
    return ctx->InvalidArgument(absl::StrCat("input 'X' (variable '", ctx->InputName("X"),
                                             "') must be an initialised dense floating tensor"));
  }
  SquaredNormArgs a;
  a.x = x->data_tensor();
  ASSIGN_OR_RETURN(a.out, ctx->AllocateOutput("Out", ComputeDataType(a.x->dtype()), Shape({1})));
  return a;
}

absl::StatusOr<GlobalNormClipArgs> GetGlobalNormClipArgs(KernelContext* ctx, double max_norm) {
  GlobalNormClipArgs a;
  a.max_norm = max_norm;
  for (int i = 0; i < ctx->InputCount("SquaredNorms"); ++i) {
    ASSIGN_OR_RETURN(const Tensor* norm, ctx->InputTensor("SquaredNorms", i));
    if (i == 0 && norm->dtype() == DataType::kFloat64) a.dtype = DataType::kFloat64;
    if (norm->dtype() != a.dtype || norm->NumElements() != 1) {
      return ctx->InvalidArgument(
          absl::StrCat("SquaredNorms #", i, " is ", DataTypeName(norm->dtype()),
                       norm->shape().ToString(), ", expected ", DataTypeName(a.dtype), "[1]"));
    }
    a.squared_norms.push_back(norm);
  }
  ASSIGN_OR_RETURN(a.scale, ctx->AllocateOutput("Scale", a.dtype, Shape({1})));
  ASSIGN_OR_RETURN(a.global_norm, ctx->AllocateOutput("GlobalNorm", a.dtype, Shape({1})));
  return a;
}

void ComputeGlobalNormClip(const GlobalNormClipArgs& a) {
  const bool f64 = a.dtype == DataType::kFloat64;
  double squared_sum = 0;
  for (const Tensor* norm : a.squared_norms) {
    squared_sum += f64 ? norm->data<double>()[0] : static_cast<double>(norm->data<float>()[0]);
  }
  const double norm = std::sqrt(squared_sum);
  // A NaN norm gives a NaN scale (std::min would return 1 for it).
  const double scale = std::isnan(norm) ? norm : std::min(1.0, a.max_norm / (norm + 1e-6));
  if (f64) {
    a.scale->data<double>()[0] = scale;
    a.global_norm->data<double>()[0] = norm;
  } else {
    a.scale->data<float>()[0] = static_cast<float>(scale);
    a.global_norm->data<float>()[0] = static_cast<float>(norm);
  }
}

absl::Status CheckBetaPow(const KernelContext& ctx, const char* arg, double value) {
  if (value >= 0 && value < 1) return absl::OkStatus();
  return ctx.InvalidArgument(absl::StrCat(arg, " '", ctx.InputName(arg), "' is ", value,
                                          "; it must be in [0, 1) (beta^step)"));
}

}  // namespace prologue
}  // namespace tandem
