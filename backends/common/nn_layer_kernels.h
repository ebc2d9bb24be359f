// The kernels of dropout, conv2d, pool2d and layer_norm (ops/nn) and their
// gradients for every backend whose memory the host can address. Each is
// written once, templated on an execution policy (serial_policy.h). A
// backend registers them under its device type with one line:
//
//   // in an anonymous namespace of the backend's kernel .cc file
//   const NnLayerKernelsRegistrar<SerialPolicy> nn_layer_kernels("sim");
//
// RegisterNnLayerKernels holds the registration lines (all arguments in
// device memory):
//   dropout(_grad)        X / Out@GRAD: float32, float64
//   conv2d(_grad)         Input: NnLayerKernelTypes::conv2d (default float32, float64)
//   pool2d(_grad)         X: NnLayerKernelTypes::pool2d (default float32, float64)
//   layer_norm(_grad)     X: float32, float64
// A backend with a vendor convolution or pooling for some dtypes registers
// those kernels itself and leaves the dtypes out of NnLayerKernelTypes
// (backends/cpu: oneDNN for float32 conv2d). Kernels validate their inputs
// with ops/nn/shape_fns.h (InvalidArgument naming the op, the shapes and
// the attributes), compute synchronously through the policy and never copy
// between places. Compute is thread-safe across kernel instances.
#ifndef TANDEM_BACKENDS_COMMON_NN_LAYER_KERNELS_H_
#define TANDEM_BACKENDS_COMMON_NN_LAYER_KERNELS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "backends/common/conv.h"
#include "backends/common/counter_random.h"
#include "backends/common/elementwise.h"
#include "backends/common/layer_norm.h"
#include "backends/common/pool.h"
#include "backends/common/type_dispatch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/kernel/op_kernel.h"
#include "framework/op/op_desc.h"
#include "framework/tensor/tensor.h"
#include "ops/math/shape_fns.h"
#include "ops/nn/shape_fns.h"

namespace tandem {
namespace nn_layer_kernels_internal {

// The inputs of conv2d(_grad) and their geometry: Input and Filter float of
// the same dtype, shapes and attrs checked by Conv2DShape; for the gradient
// (`grad`), Output@GRAD of Input's dtype and the output's shape.
struct Conv {
  const Tensor* input = nullptr;
  const Tensor* filter = nullptr;
  const Tensor* dout = nullptr;  // gradient only
  Conv2DGeometry g;
};
absl::StatusOr<Conv> GetConv(const KernelContext& ctx, const Conv2DParams& params, bool grad);

// The inputs of pool2d(_grad) and their geometry; for the gradient, Out and
// Out@GRAD of X's dtype and the output's shape.
struct Pool {
  const Tensor* x = nullptr;
  const Tensor* out = nullptr;   // gradient only
  const Tensor* dout = nullptr;  // gradient only
  Pool2DGeometry g;
};
absl::StatusOr<Pool> GetPool(const KernelContext& ctx, const Pool2DParams& params, bool grad);

// The inputs of layer_norm(_grad): X float, optional Scale (and Bias for
// the forward) [cols] of X's dtype; for the gradient, Mean and Variance
// [rows] and Y@GRAD of X's shape, all of X's dtype.
struct Norm {
  const Tensor* x = nullptr;
  const Tensor* scale = nullptr;  // null when absent
  const Tensor* bias = nullptr;   // forward only; null when absent
  const Tensor* mean = nullptr;   // gradient only
  const Tensor* var = nullptr;    // gradient only
  const Tensor* dy = nullptr;     // gradient only
  LayerNormDims d;
};
absl::StatusOr<Norm> GetNorm(const KernelContext& ctx, int64_t begin_norm_axis, bool grad);

// The attrs of dropout(_grad), validated.
struct DropoutAttrs {
  double prob = 0.5;
  bool is_test = false;

  absl::Status Read(const OpDesc& op);
  // What kept elements are multiplied by: 1 / (1 - prob) in T (1 when
  // is_test; 0 when prob is 1, as nothing is kept).
  template <typename T>
  T Scale() const {
    if (is_test) return T(1);
    return prob >= 1 ? T(0) : static_cast<T>(1.0 / (1.0 - prob));
  }
};

}  // namespace nn_layer_kernels_internal

// Training: Mask[i] = CounterUniform(CounterStreamSeed(seed, step), i) >=
// dropout_prob, with step the number of earlier Compute calls of this
// kernel, and Out[i] = Mask[i] ? X[i] * s : 0 with s = (T)(1 / (1 -
// dropout_prob)), a product in T. Inference (is_test): Out = X, Mask all
// true.
template <typename Policy>
class DropoutKernel final : public OpKernel {
 public:
  using Types = FloatTypes;

  absl::Status Init(const OpDesc& op) override {
    RETURN_IF_ERROR(attrs_.Read(op));
    ASSIGN_OR_RETURN(const int64_t seed, GetAttr<int64_t>(op.attrs, "seed", op.type));
    seed_ = static_cast<uint64_t>(seed);
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), x->shape()));
    ASSIGN_OR_RETURN(Tensor * mask, ctx->AllocateOutput("Mask", DataType::kBool, x->shape()));
    const uint64_t key = CounterStreamSeed(seed_, step_);
    if (!attrs_.is_test) ++step_;
    return DispatchType(Types(), x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* xd = x->data<T>();
      T* o = out->data<T>();
      bool* m = mask->data<bool>();
      const T scale = attrs_.Scale<T>();
      const double prob = attrs_.prob;
      const bool is_test = attrs_.is_test;
      Policy::ParallelFor(x->NumElements(), kMinElementsPerTask, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const bool keep = is_test || CounterUniform(key, static_cast<uint64_t>(i)) >= prob;
          m[i] = keep;
          o[i] = is_test ? xd[i] : keep ? xd[i] * scale : T(0);
        }
      });
      return absl::OkStatus();
    });
  }

 private:
  nn_layer_kernels_internal::DropoutAttrs attrs_;
  uint64_t seed_ = 0;
  uint64_t step_ = 0;
};

// X@GRAD[i] = Mask[i] ? Out@GRAD[i] * s : 0 with the forward's s (1 when
// is_test).
template <typename Policy>
class DropoutGradKernel final : public OpKernel {
 public:
  using Types = FloatTypes;

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* mask, ctx->InputTensor("Mask"));
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    RETURN_IF_ERROR(CheckArgMeta(ctx->op().type, "Mask", mask->dtype(), mask->shape(),
                                 DataType::kBool, dout->shape()));
    ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("X@GRAD", dout->dtype(), dout->shape()));
    return DispatchType(Types(), dout->dtype(), *ctx, "Out@GRAD", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* d = dout->data<T>();
      const bool* m = mask->data<bool>();
      T* o = dx->data<T>();
      const T scale = attrs_.Scale<T>();
      Policy::ParallelFor(dx->NumElements(), kMinElementsPerTask, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) o[i] = m[i] ? d[i] * scale : T(0);
      });
      return absl::OkStatus();
    });
  }

 private:
  nn_layer_kernels_internal::DropoutAttrs attrs_;
};

// Output = conv2d(Input, Filter) through im2col and the policy's GEMM
// (conv.h); see the conv2d schema for the formula.
template <typename Policy>
class Conv2DKernel final : public OpKernel {
 public:
  using Types = FloatTypes;

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(params_, ReadConv2DParams(op));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const nn_layer_kernels_internal::Conv c,
                     nn_layer_kernels_internal::GetConv(*ctx, params_, false));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Output", c.input->dtype(), c.g.output));
    return DispatchType(Types(), c.input->dtype(), *ctx, "Input", [&](auto tag) {
      using T = typename decltype(tag)::type;
      return Conv2DForward<T, Policy>(c.g, c.input->data<T>(), c.filter->data<T>(), out->data<T>());
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
  using Types = FloatTypes;

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(params_, ReadConv2DParams(op));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const nn_layer_kernels_internal::Conv c,
                     nn_layer_kernels_internal::GetConv(*ctx, params_, true));
    const DataType dtype = c.input->dtype();
    return DispatchType(Types(), dtype, *ctx, "Input", [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      if (ctx->OutputVar("Input@GRAD") != nullptr) {
        ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("Input@GRAD", dtype, c.input->shape()));
        RETURN_IF_ERROR((Conv2DBackwardData<T, Policy>(c.g, c.filter->data<T>(), c.dout->data<T>(),
                                                       dx->data<T>())));
      }
      if (ctx->OutputVar("Filter@GRAD") != nullptr) {
        ASSIGN_OR_RETURN(Tensor * dw, ctx->AllocateOutput("Filter@GRAD", dtype, c.filter->shape()));
        RETURN_IF_ERROR((Conv2DBackwardFilter<T, Policy>(c.g, c.input->data<T>(), c.dout->data<T>(),
                                                         dw->data<T>())));
      }
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

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(params_, ReadPool2DParams(op));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const nn_layer_kernels_internal::Pool p,
                     nn_layer_kernels_internal::GetPool(*ctx, params_, false));
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

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(params_, ReadPool2DParams(op));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const nn_layer_kernels_internal::Pool p,
                     nn_layer_kernels_internal::GetPool(*ctx, params_, true));
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

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(axis_, GetAttr<int64_t>(op.attrs, "begin_norm_axis", op.type));
    ASSIGN_OR_RETURN(epsilon_, GetAttr<double>(op.attrs, "epsilon", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const nn_layer_kernels_internal::Norm n,
                     nn_layer_kernels_internal::GetNorm(*ctx, axis_, false));
    const DataType dtype = n.x->dtype();
    ASSIGN_OR_RETURN(Tensor * y, ctx->AllocateOutput("Y", dtype, n.x->shape()));
    ASSIGN_OR_RETURN(Tensor * mean, ctx->AllocateOutput("Mean", dtype, Shape({n.d.rows})));
    ASSIGN_OR_RETURN(Tensor * var, ctx->AllocateOutput("Variance", dtype, Shape({n.d.rows})));
    return DispatchType(Types(), dtype, *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      LayerNorm<T, Policy>(n.x->data<T>(), n.scale == nullptr ? nullptr : n.scale->data<T>(),
                           n.bias == nullptr ? nullptr : n.bias->data<T>(), n.d.rows, n.d.cols,
                           epsilon_, y->data<T>(), mean->data<T>(), var->data<T>());
      return absl::OkStatus();
    });
  }

 private:
  int64_t axis_ = 1;
  double epsilon_ = 1e-5;
};

// X@GRAD, Scale@GRAD and Bias@GRAD (each optional: only bound outputs are
// computed) of layer_norm from Y@GRAD and the forward's Mean and Variance.
template <typename Policy>
class LayerNormGradKernel final : public OpKernel {
 public:
  using Types = FloatTypes;

  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(axis_, GetAttr<int64_t>(op.attrs, "begin_norm_axis", op.type));
    ASSIGN_OR_RETURN(epsilon_, GetAttr<double>(op.attrs, "epsilon", op.type));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const nn_layer_kernels_internal::Norm n,
                     nn_layer_kernels_internal::GetNorm(*ctx, axis_, true));
    const DataType dtype = n.x->dtype();
    Tensor* grads[3] = {nullptr, nullptr, nullptr};
    const char* args[3] = {"X@GRAD", "Scale@GRAD", "Bias@GRAD"};
    const Shape shapes[3] = {n.x->shape(), Shape({n.d.cols}), Shape({n.d.cols})};
    for (int i = 0; i < 3; ++i) {
      if (ctx->OutputVar(args[i]) == nullptr) continue;
      ASSIGN_OR_RETURN(grads[i], ctx->AllocateOutput(args[i], dtype, shapes[i]));
    }
    return DispatchType(Types(), dtype, *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto data = [](Tensor* t) { return t == nullptr ? nullptr : t->data<T>(); };
      LayerNormGrad<T, Policy>(n.x->data<T>(), n.scale == nullptr ? nullptr : n.scale->data<T>(),
                               n.mean->data<T>(), n.var->data<T>(), n.dy->data<T>(), n.d.rows,
                               n.d.cols, epsilon_, data(grads[0]), data(grads[1]), data(grads[2]));
      return absl::OkStatus();
    });
  }

 private:
  int64_t axis_ = 1;
  double epsilon_ = 1e-5;
};

// The dtypes the portable conv2d(_grad) and pool2d(_grad) kernels are
// registered for; leave out those a backend serves with vendor kernels.
struct NnLayerKernelTypes {
  std::vector<DataType> conv2d = FloatTypes::DataTypes();
  std::vector<DataType> pool2d = FloatTypes::DataTypes();
};

// Registers every kernel above for `device_type` (see header comment).
template <typename Policy>
void RegisterNnLayerKernels(const std::string& device_type,
                            const NnLayerKernelTypes& types = NnLayerKernelTypes()) {
  KernelRegistry& registry = KernelRegistry::Global();
  const std::vector<DataType> floats = FloatTypes::DataTypes();
  registry.Register(KernelDef("dropout", device_type).TypeConstraint("X", floats),
                    MakeKernelFactory<DropoutKernel<Policy>>());
  registry.Register(KernelDef("dropout_grad", device_type).TypeConstraint("Out@GRAD", floats),
                    MakeKernelFactory<DropoutGradKernel<Policy>>());
  if (!types.conv2d.empty()) {
    registry.Register(KernelDef("conv2d", device_type).TypeConstraint("Input", types.conv2d),
                      MakeKernelFactory<Conv2DKernel<Policy>>());
    registry.Register(KernelDef("conv2d_grad", device_type).TypeConstraint("Input", types.conv2d),
                      MakeKernelFactory<Conv2DGradKernel<Policy>>());
  }
  if (!types.pool2d.empty()) {
    registry.Register(KernelDef("pool2d", device_type).TypeConstraint("X", types.pool2d),
                      MakeKernelFactory<Pool2DKernel<Policy>>());
    registry.Register(KernelDef("pool2d_grad", device_type).TypeConstraint("X", types.pool2d),
                      MakeKernelFactory<Pool2DGradKernel<Policy>>());
  }
  registry.Register(KernelDef("layer_norm", device_type).TypeConstraint("X", floats),
                    MakeKernelFactory<LayerNormKernel<Policy>>());
  registry.Register(KernelDef("layer_norm_grad", device_type).TypeConstraint("X", floats),
                    MakeKernelFactory<LayerNormGradKernel<Policy>>());
}

// Calls RegisterNnLayerKernels<Policy>(device_type, types) during static
// initialisation; define one in the backend's kernel .cc file, whose
// cc_library must have alwayslink = True.
template <typename Policy>
struct NnLayerKernelsRegistrar {
  explicit NnLayerKernelsRegistrar(const std::string& device_type,
                                   const NnLayerKernelTypes& types = NnLayerKernelTypes()) {
    RegisterNnLayerKernels<Policy>(device_type, types);
  }
};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_NN_LAYER_KERNELS_H_
