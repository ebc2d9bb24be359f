// The kernels of dropout, conv2d, pool2d, layer_norm and self_attention (ops/nn) and their
// gradients for every backend whose memory the host can address. Each is
// written once, templated on an execution policy (serial_policy.h). A
// backend registers them under its device type with one line:
//
//   const HostKernelsRegistrar<SerialPolicy> host_kernels("sim");  // host_kernels.h  //
//   host_kernels.h
//
// Each kernel class's static Contract is its registration line and RegisterNnLayerKernels lists
// them (all arguments in device memory):
//   dropout(_grad)        X / Out@GRAD: float32, float64
//   conv2d(_grad)         Input: NnLayerKernelTypes::conv2d (default float32, float64)
//   pool2d(_grad)         X: NnLayerKernelTypes::pool2d (default float32, float64)
//   layer_norm(_grad)     X: float32, float64
//   self_attention(_grad) QKV: float32, float64, bfloat16, float16
// A backend with a vendor convolution or pooling for some dtypes registers
// those kernels itself and leaves the dtypes out of NnLayerKernelTypes
// (backends/cpu: oneDNN for float32 conv2d). Kernels validate their inputs
// with ops/nn/prologues.h, as the gpu kernels do (InvalidArgument naming the op,
// the shapes and the attributes), compute synchronously through the policy and never copy
// between places. Compute is thread-safe across kernel instances.
#ifndef TANDEM_BACKENDS_COMMON_NN_LAYER_KERNELS_H_
#define TANDEM_BACKENDS_COMMON_NN_LAYER_KERNELS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "backends/common/attention.h"
#include "backends/common/conv.h"
#include "backends/common/counter_random.h"
#include "backends/common/dropout_stream.h"
#include "backends/common/elementwise.h"
#include "backends/common/layer_norm.h"
#include "backends/common/low_precision.h"
#include "backends/common/pool.h"
#include "backends/common/type_dispatch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/kernel/op_kernel.h"
#include "framework/op/op_desc.h"
#include "framework/tensor/tensor.h"
#include "ops/math/prologues.h"
#include "ops/math/shape_fns.h"
#include "ops/nn/prologues.h"
#include "ops/nn/shape_fns.h"

namespace tandem {
// Training: Mask[i] = CounterUniform(CounterStreamSeed(seed, step), i) >=
// dropout_prob, with step the number of earlier Compute calls of this
// kernel, and Out[i] = Mask[i] ? X[i] * s : 0 with s = (T)(1 / (1 -
// dropout_prob)), a product in T. Inference (is_test): Out = X, Mask all
// true.
template <typename Policy>
class DropoutKernel final : public OpKernel {
 public:
  using Types = FloatTypesWith16Bit;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("dropout", device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return dropout_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::DropoutArgs a, prologue::GetDropoutArgs(ctx));
    const uint64_t key = dropout_.NextKey();
    const prologue::DropoutAttrs& attrs = dropout_.attrs();
    return DispatchType(Types(), a.x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeTypeOf<T>;  // a 16-bit product is rounded once
      const T* xd = a.x->data<T>();
      T* o = a.out->data<T>();
      bool* m = a.mask->data<bool>();
      const C scale = attrs.Scale<C>();
      const double prob = attrs.prob;
      const bool is_test = attrs.is_test;
      Policy::ParallelFor(a.x->NumElements(), kMinElementsPerTask, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const bool keep = is_test || CounterUniform(key, static_cast<uint64_t>(i)) >= prob;
          m[i] = keep;
          o[i] = is_test ? xd[i] : keep ? T(static_cast<C>(xd[i]) * scale) : T(0);
        }
      });
      return absl::OkStatus();
    });
  }

 private:
  DropoutForward dropout_;
};

// X@GRAD[i] = Mask[i] ? Out@GRAD[i] * s : 0 with the forward's s (1 when
// is_test).
template <typename Policy>
class DropoutGradKernel final : public OpKernel {
 public:
  using Types = FloatTypesWith16Bit;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("dropout_grad", device_type).TypeConstraint("Out@GRAD", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::DropoutGradArgs a, prologue::GetDropoutGradArgs(ctx));
    return DispatchType(Types(), a.dout->dtype(), *ctx, "Out@GRAD", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeTypeOf<T>;
      const T* d = a.dout->data<T>();
      const bool* m = a.mask->data<bool>();
      T* o = a.dx->data<T>();
      const C scale = attrs_.Scale<C>();
      Policy::ParallelFor(a.dx->NumElements(), kMinElementsPerTask,
                          [&](int64_t begin, int64_t end) {
                            for (int64_t i = begin; i < end; ++i) {
                              o[i] = m[i] ? T(static_cast<C>(d[i]) * scale) : T(0);
                            }
                          });
      return absl::OkStatus();
    });
  }

 private:
  prologue::DropoutAttrs attrs_;
};

// Output = conv2d(Input, Filter) through im2col and the policy's GEMM
// (conv.h); see the conv2d schema for the formula.
template <typename Policy>
class Conv2DKernel final : public OpKernel {
 public:
  using Types = FloatTypesWith16Bit;
  // `types`: the dtypes this backend registers (NnLayerKernelTypes).
  static KernelDef Contract(const std::string& device_type,
                            std::vector<DataType> types = Types::DataTypes()) {
    return KernelDef("conv2d", device_type).TypeConstraint("Input", std::move(types));
  }

  absl::Status Init(const OpDesc& op) override {
    return prologue::Store(ReadConv2DParams(op), &params_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Conv c, prologue::GetConv(*ctx, params_, false));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Output", c.input->dtype(), c.g.output));
    return DispatchType(Types(), c.input->dtype(), *ctx, "Input", [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      ComputeBuffers<T, Policy> buffers;
      RETURN_IF_ERROR((Conv2DForward<ComputeTypeOf<T>, Policy>(
          c.g, buffers.In(c.input), buffers.In(c.filter), buffers.Out(out))));
      buffers.Finish();
      return absl::OkStatus();
    });
  }

 private:
  Conv2DParams params_;
};

// Input@GRAD and Filter@GRAD (each optional: only bound outputs are
// computed) of conv2d from Output@GRAD; Filter@GRAD sums the samples in
// order.
template <typename Policy>
class Conv2DGradKernel final : public OpKernel {
 public:
  using Types = FloatTypesWith16Bit;
  // `types`: the dtypes this backend registers (NnLayerKernelTypes).
  static KernelDef Contract(const std::string& device_type,
                            std::vector<DataType> types = Types::DataTypes()) {
    return KernelDef("conv2d_grad", device_type).TypeConstraint("Input", std::move(types));
  }

  absl::Status Init(const OpDesc& op) override {
    return prologue::Store(ReadConv2DParams(op), &params_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Conv c, prologue::GetConv(*ctx, params_, true));
    const DataType dtype = c.input->dtype();
    return DispatchType(Types(), dtype, *ctx, "Input", [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      using C = ComputeTypeOf<T>;
      ComputeBuffers<T, Policy> buffers;
      const C* dout = buffers.In(c.dout);
      if (ctx->OutputVar("Input@GRAD") != nullptr) {
        ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("Input@GRAD", dtype, c.input->shape()));
        RETURN_IF_ERROR(
            (Conv2DBackwardData<C, Policy>(c.g, buffers.In(c.filter), dout, buffers.Out(dx))));
      }
      if (ctx->OutputVar("Filter@GRAD") != nullptr) {
        ASSIGN_OR_RETURN(Tensor * dw, ctx->AllocateOutput("Filter@GRAD", dtype, c.filter->shape()));
        RETURN_IF_ERROR(
            (Conv2DBackwardFilter<C, Policy>(c.g, buffers.In(c.input), dout, buffers.Out(dw))));
      }
      buffers.Finish();
      return absl::OkStatus();
    });
  }

 private:
  Conv2DParams params_;
};

// Out = max or average pooling of X (pool.h; see the pool2d schema).
template <typename Policy>
class Pool2DKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  // `types`: the dtypes this backend registers (NnLayerKernelTypes).
  static KernelDef Contract(const std::string& device_type,
                            std::vector<DataType> types = Types::DataTypes()) {
    return KernelDef("pool2d", device_type).TypeConstraint("X", std::move(types));
  }

  absl::Status Init(const OpDesc& op) override {
    return prologue::Store(ReadPool2DParams(op), &params_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Pool p, prologue::GetPool(*ctx, params_, false));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", p.x->dtype(), p.g.out));
    return DispatchType(Types(), p.x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      Pool2DForward<T, Policy>(p.g, p.x->data<T>(), out->data<T>());
      return absl::OkStatus();
    });
  }

 private:
  Pool2DParams params_;
};

// X@GRAD of pool2d: max sends Out@GRAD to the first element of its window
// equal to Out; avg spreads it over the window.
template <typename Policy>
class Pool2DGradKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  // `types`: the dtypes this backend registers (NnLayerKernelTypes).
  static KernelDef Contract(const std::string& device_type,
                            std::vector<DataType> types = Types::DataTypes()) {
    return KernelDef("pool2d_grad", device_type).TypeConstraint("X", std::move(types));
  }

  absl::Status Init(const OpDesc& op) override {
    return prologue::Store(ReadPool2DParams(op), &params_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Pool p, prologue::GetPool(*ctx, params_, true));
    ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("X@GRAD", p.x->dtype(), p.x->shape()));
    return DispatchType(Types(), p.x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      Pool2DBackward<T, Policy>(p.g, p.x->data<T>(), p.out->data<T>(), p.dout->data<T>(),
                                dx->data<T>());
      return absl::OkStatus();
    });
  }

 private:
  Pool2DParams params_;
};

// Y, Mean and Variance of layer_norm (layer_norm.h; see the schema).
template <typename Policy>
class LayerNormKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("layer_norm", device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Norm n,
                     prologue::GetNorm(*ctx, attrs_.begin_norm_axis, false));
    ASSIGN_OR_RETURN(const prologue::NormOutputs o, prologue::AllocateNormOutputs(ctx, n));
    return DispatchType(Types(), n.x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      LayerNorm<T, Policy>(n.x->data<T>(), n.scale == nullptr ? nullptr : n.scale->data<T>(),
                           n.bias == nullptr ? nullptr : n.bias->data<T>(), n.d.rows, n.d.cols,
                           attrs_.epsilon, o.y->data<T>(), o.mean->data<T>(), o.var->data<T>());
      return absl::OkStatus();
    });
  }

 private:
  prologue::NormAttrs attrs_;
};

// X@GRAD, Scale@GRAD and Bias@GRAD (each optional: only bound outputs are
// computed) of layer_norm from Y@GRAD and the forward's Mean and Variance.
template <typename Policy>
class LayerNormGradKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("layer_norm_grad", device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Norm n, prologue::GetNorm(*ctx, attrs_.begin_norm_axis, true));
    ASSIGN_OR_RETURN(const prologue::NormGrads g, prologue::AllocateNormGrads(ctx, n));
    return DispatchType(Types(), n.x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto data = [](Tensor* t) { return t == nullptr ? nullptr : t->data<T>(); };
      LayerNormGrad<T, Policy>(n.x->data<T>(), n.scale == nullptr ? nullptr : n.scale->data<T>(),
                               n.mean->data<T>(), n.var->data<T>(), n.dy->data<T>(), n.d.rows,
                               n.d.cols, attrs_.epsilon, data(g.dx), data(g.dscale), data(g.dbias));
      return absl::OkStatus();
    });
  }

 private:
  prologue::NormAttrs attrs_;
};

// The loops' view of a prologue's attention dims.
inline AttentionLayout LayoutOf(const AttentionDims& d) {
  return AttentionLayout{d.batch, d.seq, d.heads, d.head_dim};
}

// Out and Lse of self_attention (attention.h; see the schema). 16-bit QKV
// computes in float32 (Lse is float32 then).
template <typename Policy>
class SelfAttentionKernel final : public OpKernel {
 public:
  using Types = FloatTypesWith16Bit;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("self_attention", device_type).TypeConstraint("QKV", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Attention a, prologue::GetAttention(*ctx, attrs_, false));
    ASSIGN_OR_RETURN(const prologue::AttentionOutputs o,
                     prologue::AllocateAttentionOutputs(ctx, a));
    return DispatchType(Types(), a.qkv->dtype(), *ctx, "QKV", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeTypeOf<T>;
      ComputeBuffers<T, Policy> buffers;
      SelfAttention<C, Policy>(buffers.In(a.qkv), LayoutOf(a.d), attrs_.causal, a.d.scale,
                               buffers.Out(o.out), o.lse->data<C>());
      buffers.Finish();
      return absl::OkStatus();
    });
  }

 private:
  prologue::AttentionAttrs attrs_;
};

// QKV@GRAD of self_attention from Out@GRAD and the forward's Out and Lse.
template <typename Policy>
class SelfAttentionGradKernel final : public OpKernel {
 public:
  using Types = FloatTypesWith16Bit;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("self_attention_grad", device_type).TypeConstraint("QKV", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Attention a, prologue::GetAttention(*ctx, attrs_, true));
    ASSIGN_OR_RETURN(Tensor * dqkv,
                     ctx->AllocateOutput("QKV@GRAD", a.qkv->dtype(), a.qkv->shape()));
    return DispatchType(Types(), a.qkv->dtype(), *ctx, "QKV", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeTypeOf<T>;
      ComputeBuffers<T, Policy> buffers;
      SelfAttentionGrad<C, Policy>(buffers.In(a.qkv), buffers.In(a.out), a.lse->data<C>(),
                                   buffers.In(a.dout), LayoutOf(a.d), attrs_.causal, a.d.scale,
                                   buffers.Out(dqkv));
      buffers.Finish();
      return absl::OkStatus();
    });
  }

 private:
  prologue::AttentionAttrs attrs_;
};

// The dtypes the portable conv2d(_grad) and pool2d(_grad) kernels are
// registered for; leave out those a backend serves with vendor kernels.
struct NnLayerKernelTypes {
  std::vector<DataType> conv2d = FloatTypesWith16Bit::DataTypes();
  std::vector<DataType> pool2d = FloatTypes::DataTypes();
};

// Registers every kernel above for `device_type` (see header comment).
template <typename Policy>
void RegisterNnLayerKernels(const std::string& device_type,
                            const NnLayerKernelTypes& types = NnLayerKernelTypes()) {
  RegisterByContract<DropoutKernel<Policy>, DropoutGradKernel<Policy>, LayerNormKernel<Policy>,
                     LayerNormGradKernel<Policy>, SelfAttentionKernel<Policy>,
                     SelfAttentionGradKernel<Policy>>(device_type);
  KernelRegistry& registry = KernelRegistry::Global();
  if (!types.conv2d.empty()) {
    registry.Register(Conv2DKernel<Policy>::Contract(device_type, types.conv2d),
                      MakeKernelFactory<Conv2DKernel<Policy>>());
    registry.Register(Conv2DGradKernel<Policy>::Contract(device_type, types.conv2d),
                      MakeKernelFactory<Conv2DGradKernel<Policy>>());
  }
  if (!types.pool2d.empty()) {
    registry.Register(Pool2DKernel<Policy>::Contract(device_type, types.pool2d),
                      MakeKernelFactory<Pool2DKernel<Policy>>());
    registry.Register(Pool2DGradKernel<Policy>::Contract(device_type, types.pool2d),
                      MakeKernelFactory<Pool2DGradKernel<Policy>>());
  }
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_NN_LAYER_KERNELS_H_
