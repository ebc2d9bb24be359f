// The kernels of the nn ops (ops/nn) for every backend whose memory the
// host can address: lookup_table(_grad), l2_normalize(_grad), fc(_grad) and
// softmax(_grad). Each is written once, templated on an execution policy
// (serial_policy.h). A backend registers them under its device type with
// one line:
//
//   const HostKernelsRegistrar<SerialPolicy> host_kernels("sim");  // host_kernels.h  //
//   host_kernels.h
//
// Each kernel class's static Contract is its registration line and RegisterNnKernels lists them
// (all arguments in device memory):
//   lookup_table(_grad)       W: float32, float64 (Ids: int64)
//   l2_normalize(_grad)       X: float32, float64
//   fc(_grad)                 Input: float32, float64
//   softmax                   X: float32, float64 (softmax_grad: Out)
// Semantics, including edge cases, are documented on each kernel below.
// Kernels validate their inputs with ops/nn/prologues.h, as the gpu kernels do
// (InvalidArgument naming the op and the offending argument or value), compute synchronously
// through the policy and never copy between places. Compute is thread-safe across kernel instances.
#ifndef TANDEM_BACKENDS_COMMON_NN_KERNELS_H_
#define TANDEM_BACKENDS_COMMON_NN_KERNELS_H_

#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "backends/common/axis_lines.h"
#include "backends/common/elementwise.h"
#include "backends/common/flat_matmul.h"
#include "backends/common/kernel_status.h"
#include "backends/common/l2_normalize.h"
#include "backends/common/low_precision.h"
#include "backends/common/rows.h"
#include "backends/common/softmax.h"
#include "backends/common/type_dispatch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/kernel/op_kernel.h"
#include "framework/op/op_desc.h"
#include "framework/tensor/selected_rows.h"
#include "framework/tensor/tensor.h"
#include "ops/math/prologues.h"
#include "ops/math/shape_fns.h"
#include "ops/nn/prologues.h"
#include "ops/nn/shape_fns.h"

namespace tandem {
namespace nn_kernels_internal {

// InvalidArgument (prologue::BadIdError) unless every id of `l` is in
// [0, rows); reads the ids, so host memory only.
absl::Status CheckIds(const KernelContext& ctx, const prologue::Lookup& l);

}  // namespace nn_kernels_internal

// Out = W[Ids] with shape Ids.shape + [dim] (rank-0 Ids give [dim]); rows
// equal to the padding row (attr padding_idx: -1 none, other negatives
// count from the end) are zeros. Ids must be int64 in [0, rows).
template <typename Policy>
class LookupTableKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  // Without a padding row, a lookup reads W row by row.
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("lookup_table", device_type)
        .TypeConstraint("W", Types::DataTypes())
        .GathersRows("W", "Ids", "Out", [](const OpDesc& op) {
          prologue::LookupAttrs attrs;
          return attrs.Read(op).ok() && attrs.padding_idx == -1;
        });
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Lookup l, prologue::GetLookup(*ctx, attrs_.padding_idx));
    RETURN_IF_ERROR(nn_kernels_internal::CheckIds(*ctx, l));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", l.w->dtype(), l.out));
    return DispatchType(Types(), l.w->dtype(), *ctx, "W", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const int64_t* ids = l.ids->data<int64_t>();
      const T* w = l.w->data<T>();
      CopyRows<T, Policy>(
          l.ids->NumElements(), l.dim,
          [&](int64_t i) -> const T* {
            return ids[i] == l.padding_row ? nullptr : w + ids[i] * l.dim;
          },
          out->data<T>());
      return absl::OkStatus();
    });
  }

 private:
  prologue::LookupAttrs attrs_;
};

// W@GRAD of lookup_table from Out@GRAD (Ids.shape + [dim], W's dtype), with
// the forward's attrs and the same checks on Ids and W.
//   is_sparse false: dense [rows, dim], zeros with row Ids[i] += Out@GRAD[i]
//                    (duplicates accumulate); the padding row stays zero.
//   is_sparse true:  SelectedRows of height rows whose rows are the ids in
//                    order (duplicates kept) and whose value is Out@GRAD as
//                    [n, dim], with the padding rows' values zero. The value
//                    shares Out@GRAD's buffer (no copy) unless an id is the
//                    padding row; readers must not write to it.
template <typename Policy>
class LookupTableGradKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  // A sparse gradient's rows are the ids.
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("lookup_table_grad", device_type)
        .TypeConstraint("W", Types::DataTypes())
        .SparseRowsFrom("Ids", "W@GRAD", [](const OpDesc& op) {
          prologue::LookupAttrs attrs;
          return attrs.Read(op).ok() && attrs.is_sparse;
        });
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Lookup l, prologue::GetLookup(*ctx, attrs_.padding_idx));
    RETURN_IF_ERROR(nn_kernels_internal::CheckIds(*ctx, l));
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    const DataType dtype = l.w->dtype();
    RETURN_IF_ERROR(
        CheckArgMeta(ctx->op().type, "Out@GRAD", dout->dtype(), dout->shape(), dtype, l.out));
    const int64_t n = l.ids->NumElements();
    const int64_t* ids = l.ids->data<int64_t>();
    if (attrs_.is_sparse) {
      // The value shares Out@GRAD's buffer; only when a padding row must
      // read zero is it a copy with those rows zeroed.
      Tensor value = dout->Reshaped(Shape({n, l.dim}));
      if (l.padding_row >= 0 && std::find(ids, ids + n, l.padding_row) != ids + n) {
        ASSIGN_OR_RETURN(Tensor * copy, ctx->AllocateOutput("W@GRAD", dtype, Shape({n, l.dim})));
        RETURN_IF_ERROR(DispatchType(Types(), dtype, *ctx, "W", [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* g = dout->data<T>();
          CopyRows<T, Policy>(
              n, l.dim,
              [&](int64_t i) -> const T* {
                return ids[i] == l.padding_row ? nullptr : g + i * l.dim;
              },
              copy->data<T>());
          return absl::OkStatus();
        }));
        value = *copy;
      }
      Variable* out = ctx->OutputVar("W@GRAD");
      if (out == nullptr) return ctx->InvalidArgument("output 'W@GRAD' is not bound");
      out->set(SelectedRows(l.rows, std::vector<int64_t>(ids, ids + n), std::move(value)));
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(Tensor * dw, ctx->AllocateOutput("W@GRAD", dtype, l.w->shape()));
    return DispatchType(Types(), dtype, *ctx, "W", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* d = dw->data<T>();
      Fill<T, Policy>(T(0), d, dw->NumElements());
      ScatterAddRows<T, Policy>(ids, n, dout->data<T>(), l.dim, T(1), d, l.rows);
      if (l.padding_row >= 0) Fill<T, Policy>(T(0), d + l.padding_row * l.dim, l.dim);
      return absl::OkStatus();
    });
  }

 private:
  prologue::LookupAttrs attrs_;
};

// Out = X / sqrt(sum(X^2 over attr axis) + attr epsilon), same shape;
// negative axes count from the end. Sums accumulate in double.
template <typename Policy>
class L2NormalizeKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("l2_normalize", device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(axis_, GetAttr<int64_t>(op.attrs, "axis", op.type));
    ASSIGN_OR_RETURN(epsilon_, GetAttr<double>(op.attrs, "epsilon", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const int axis, NormalizeAxis(ctx->op().type, "X", x->shape(), axis_));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), x->shape()));
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      L2Normalize<T, Policy>(x->data<T>(), AxisLines::Around(x->shape(), axis), epsilon_,
                             out->data<T>());
      return absl::OkStatus();
    });
  }

 private:
  int64_t axis_ = -1;
  double epsilon_ = 1e-10;
};

// X@GRAD = (Out@GRAD - Out * sum(Out@GRAD * Out over axis)) /
// sqrt(sum(X^2 over axis) + epsilon); Out and Out@GRAD have X's dtype and
// shape.
template <typename Policy>
class L2NormalizeGradKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("l2_normalize_grad", device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(axis_, GetAttr<int64_t>(op.attrs, "axis", op.type));
    ASSIGN_OR_RETURN(epsilon_, GetAttr<double>(op.attrs, "epsilon", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* out, ctx->InputTensor("Out"));
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    const std::string& op = ctx->op().type;
    ASSIGN_OR_RETURN(const int axis, NormalizeAxis(op, "X", x->shape(), axis_));
    RETURN_IF_ERROR(CheckArgMeta(op, "Out", out->dtype(), out->shape(), x->dtype(), x->shape()));
    RETURN_IF_ERROR(
        CheckArgMeta(op, "Out@GRAD", dout->dtype(), dout->shape(), x->dtype(), x->shape()));
    ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("X@GRAD", x->dtype(), x->shape()));
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      L2NormalizeGrad<T, Policy>(x->data<T>(), out->data<T>(), dout->data<T>(),
                                 AxisLines::Around(x->shape(), axis), epsilon_, dx->data<T>());
      return absl::OkStatus();
    });
  }

 private:
  int64_t axis_ = -1;
  double epsilon_ = 1e-10;
};

// Out = Input * W + Bias: Input's first attr in_num_col_dims dims form the
// rows and the rest the K columns of a matrix, W is [K, M], the optional
// Bias [M] is added to every row (FcShape); Out is
// Input.dims[:in_num_col_dims] + [M]. float32 on the cpu goes through the
// policy's GEMM (oneDNN sgemm, as matmul). K == 0 gives Bias (or zeros).
template <typename Policy>
class FcKernel final : public OpKernel {
 public:
  using Types = FloatTypesWith16Bit;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("fc", device_type).TypeConstraint("Input", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override {
    return prologue::ReadAttr(op, "in_num_col_dims", &in_num_col_dims_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::FcArgs a, prologue::GetFcArgs(ctx, in_num_col_dims_));
    return DispatchType(Types(), a.input->dtype(), *ctx, "Input", [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      ComputeBuffers<T, Policy> buffers;
      RETURN_IF_ERROR(WithOpName(*ctx, FlatMatmul<ComputeTypeOf<T>, Policy>(
                                           buffers.In(a.input), buffers.In(a.w), buffers.In(a.bias),
                                           a.d.m, a.d.k, a.d.n, buffers.Out(a.out))));
      buffers.Finish();
      return absl::OkStatus();
    });
  }

 private:
  int64_t in_num_col_dims_ = 1;
};

// Input@GRAD = Out@GRAD * W^T (shaped like Input), W@GRAD = Input^T *
// Out@GRAD and Bias@GRAD [M] = the column sums of Out@GRAD (float32 in
// double), each optional: only bound outputs are computed. Out@GRAD has
// the forward Out's shape and Input's dtype.
template <typename Policy>
class FcGradKernel final : public OpKernel {
 public:
  using Types = FloatTypesWith16Bit;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("fc_grad", device_type).TypeConstraint("Input", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override {
    return prologue::ReadAttr(op, "in_num_col_dims", &in_num_col_dims_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::FcGradArgs a, prologue::GetFcGradArgs(ctx, in_num_col_dims_));
    const FlatMatmulDims& d = a.d;
    return DispatchType(Types(), a.input->dtype(), *ctx, "Input", [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      using C = ComputeTypeOf<T>;
      ComputeBuffers<T, Policy> buffers;
      const C* dout = buffers.In(a.dout);
      if (a.dbias != nullptr) {
        SumToShape<C, Policy>(dout, Shape({d.m, d.n}), buffers.Out(a.dbias), Shape({d.n}));
      }
      RETURN_IF_ERROR(WithOpName(
          *ctx, FlatMatmulGrad<C, Policy>(buffers.In(a.input), buffers.In(a.w), dout, d.m, d.k, d.n,
                                          buffers.Out(a.dinput), buffers.Out(a.dw))));
      buffers.Finish();
      return absl::OkStatus();
    });
  }

 private:
  int64_t in_num_col_dims_ = 1;
};

// Out = exp(X - max) / sum(exp(X - max)) along attr axis (negative counts
// from the end); same shape, exps and sums in double for float32.
template <typename Policy>
class SoftmaxKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("softmax", device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return prologue::ReadAttr(op, "axis", &axis_); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const int axis, NormalizeAxis(ctx->op().type, "X", x->shape(), axis_));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), x->shape()));
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      Softmax<T, Policy>(x->data<T>(), AxisLines::Around(x->shape(), axis), out->data<T>());
      return absl::OkStatus();
    });
  }

 private:
  int64_t axis_ = -1;
};

// X@GRAD = Out * (Out@GRAD - sum(Out@GRAD * Out along axis)); Out@GRAD has
// Out's dtype and shape.
template <typename Policy>
class SoftmaxGradKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("softmax_grad", device_type).TypeConstraint("Out", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return prologue::ReadAttr(op, "axis", &axis_); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* out, ctx->InputTensor("Out"));
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    const std::string& op = ctx->op().type;
    ASSIGN_OR_RETURN(const int axis, NormalizeAxis(op, "Out", out->shape(), axis_));
    RETURN_IF_ERROR(
        CheckArgMeta(op, "Out@GRAD", dout->dtype(), dout->shape(), out->dtype(), out->shape()));
    ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("X@GRAD", out->dtype(), out->shape()));
    return DispatchType(Types(), out->dtype(), *ctx, "Out", [&](auto tag) {
      using T = typename decltype(tag)::type;
      SoftmaxGrad<T, Policy>(out->data<T>(), dout->data<T>(), AxisLines::Around(out->shape(), axis),
                             dx->data<T>());
      return absl::OkStatus();
    });
  }

 private:
  int64_t axis_ = -1;
};

// Registers every kernel above for `device_type` (see header comment).
template <typename Policy>
void RegisterNnKernels(const std::string& device_type) {
  RegisterByContract<LookupTableKernel<Policy>, LookupTableGradKernel<Policy>,
                     L2NormalizeKernel<Policy>, L2NormalizeGradKernel<Policy>, FcKernel<Policy>,
                     FcGradKernel<Policy>, SoftmaxKernel<Policy>, SoftmaxGradKernel<Policy>>(
      device_type);
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_NN_KERNELS_H_
