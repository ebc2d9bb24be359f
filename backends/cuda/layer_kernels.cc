// gpu kernels of dropout, conv2d, pool2d, layer_norm and their gradients,
// with the host kernels' registration lines (the union of the cpu's
// oneDNN float32 and portable float64 ones for conv2d and pool2d) and,
// through the shared prologues (ops/nn/prologues.h), their
// validation and messages.
//
// dropout draws the host kernels' mask (the counter-based generator keyed
// by seed and the kernel's run count): bit-identical. conv2d is im2col
// (conv_launchers.h) and strided-batched cuBLAS products over the samples
// (gemm.h), in chunks of samples whose columns fit kColumnBudget; a 1x1
// filter with stride 1 and no padding multiplies the input directly. Its
// input gradient gathers the columns back without atomics; its filter
// gradient sums the per-sample products with the reduction kernel. pool2d
// and layer_norm: pool_launchers.h and layer_norm_launchers.h.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

#include "backends/common/dropout_stream.h"
#include "backends/cuda/broadcast_launchers.h"
#include "backends/cuda/broadcast_plan.h"
#include "backends/cuda/conv_launchers.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/elementwise_launchers.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/kernel_util.h"
#include "backends/cuda/layer_norm_launchers.h"
#include "backends/cuda/pool_launchers.h"
#include "backends/cuda/random_launchers.h"
#include "backends/cuda/scratch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "ops/math/prologues.h"
#include "ops/nn/prologues.h"

namespace tandem {
namespace cuda {
namespace {

class DropoutKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return dropout_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::DropoutArgs a, prologue::GetDropoutArgs(ctx));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    if (!dropout_.attrs().is_test) {
      // Checked before the key advances: the step then runs eagerly with
      // the key an eager run would have drawn.
      cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
      CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream, &capture));
      if (capture != cudaStreamCaptureStatusNone) {
        return absl::FailedPreconditionError(
            "dropout draws a new mask on each training run, which a replay of a captured "
            "graph would not");
      }
    }
    const uint64_t key = dropout_.NextKey();
    const prologue::DropoutAttrs& attrs = dropout_.attrs();
    const int64_t n = a.x->NumElements();
    return DispatchFloatWith16Bit(a.x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      using C = ComputeTypeOf<T>;
      if (attrs.is_test) {
        CUDA_RETURN_IF_ERROR(
            LaunchMaskedScale<T>(a.x->data<T>(), nullptr, n, C(1), a.out->data<T>(), stream));
        CUDA_RETURN_IF_ERROR(LaunchFill<bool>(a.mask->data<bool>(), n, true, stream));
        return absl::OkStatus();
      }
      CUDA_RETURN_IF_ERROR(LaunchDropout<T>(a.x->data<T>(), n, key, attrs.prob, attrs.Scale<C>(),
                                            a.out->data<T>(), a.mask->data<bool>(), stream));
      return absl::OkStatus();
    });
  }

 private:
  DropoutForward dropout_;
};

REGISTER_KERNEL(KernelDef("dropout", "gpu").TypeConstraint("X", kFloatTypesWith16Bit),
                DropoutKernel);

class DropoutGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::DropoutGradArgs a, prologue::GetDropoutGradArgs(ctx));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloatWith16Bit(a.dout->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(
          LaunchMaskedScale<T>(a.dout->data<T>(), a.mask->data<bool>(), a.dx->NumElements(),
                               attrs_.Scale<ComputeTypeOf<T>>(), a.dx->data<T>(), stream));
      return absl::OkStatus();
    });
  }

 private:
  prologue::DropoutAttrs attrs_;
};

REGISTER_KERNEL(KernelDef("dropout_grad", "gpu").TypeConstraint("Out@GRAD", kFloatTypesWith16Bit),
                DropoutGradKernel);

// Most elements of a conv2d scratch buffer (im2col columns, per-sample
// filter products): samples are processed in chunks that fit.
constexpr int64_t kColumnBudget = int64_t{1} << 26;

// conv2d's sizes (the host's ConvDims): per group, Output[n, gi] [mg, P] =
// Filter[gi] [mg, K] x col[n, gi] [K, P]; plus the samples per chunk.
struct ConvPlan : prologue::ConvDims {
  ConvShape shape;
  int64_t n, c, m;
  int64_t chunk;  // samples per chunk

  explicit ConvPlan(const Conv2DGeometry& g) : ConvDims(g), n(g.n), c(g.c), m(g.m) {
    shape.c = g.c, shape.h = g.h, shape.w = g.w;
    shape.kh = g.kh, shape.kw = g.kw, shape.oh = g.oh, shape.ow = g.ow;
    shape.stride_h = g.p.stride_h, shape.stride_w = g.p.stride_w;
    shape.pad_h = g.p.pad_h, shape.pad_w = g.p.pad_w;
    shape.dilation_h = g.p.dilation_h, shape.dilation_w = g.p.dilation_w;
    const int64_t per_sample = std::max<int64_t>(1, std::max(groups * k * p, m * k));
    chunk = std::max<int64_t>(1, std::min(n, kColumnBudget / per_sample));
  }

  int64_t col_per_sample() const { return groups * k * p; }
  int64_t Samples(int64_t n0) const { return std::min(chunk, n - n0); }
};

// Columns of a chunk of samples: im2col into `col`, or the input itself.
// Returns where group gi's [K, P] matrix of sample n0 starts and the
// stride between samples.
template <typename T>
absl::StatusOr<std::pair<const T*, int64_t>> Columns(KernelContext* ctx, const ConvPlan& cp,
                                                     const T* x, int64_t n0, Tensor* col) {
  const T* xs = x + n0 * cp.c * cp.plane;
  if (cp.direct) return std::make_pair(xs, cp.c * cp.plane);
  CUDA_RETURN_IF_ERROR(
      LaunchIm2Col<T>(cp.shape, cp.Samples(n0), xs, col->data<T>(), CudaStreamOf(ctx->stream())));
  return std::make_pair(static_cast<const T*>(col->data<T>()), cp.col_per_sample());
}

// Allocates a chunk's im2col columns into *col (nothing when direct).
absl::Status ColumnScratch(KernelContext* ctx, const ConvPlan& cp, DataType dtype, Tensor* col) {
  if (cp.direct) return absl::OkStatus();
  ASSIGN_OR_RETURN(
      *col, AllocateScratch(ctx, dtype, Shape({cp.chunk * cp.col_per_sample()}), "im2col columns"));
  return absl::OkStatus();
}

class Conv2DKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    return prologue::Store(ReadConv2DParams(op), &params_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Conv c, prologue::GetConv(*ctx, params_, false));
    const DataType dtype = c.input->dtype();
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Output", dtype, c.g.output));
    if (out->NumElements() == 0) return absl::OkStatus();
    const ConvPlan cp(c.g);
    Tensor col;
    RETURN_IF_ERROR(ColumnScratch(ctx, cp, dtype, &col));
    // 16-bit: the products in 16 bits with float32 accumulation (RunGemm),
    // each output rounded once.
    return DispatchFloatWith16Bit(dtype, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      for (int64_t n0 = 0; n0 < cp.n; n0 += cp.chunk) {
        ASSIGN_OR_RETURN(const auto cols, Columns<T>(ctx, cp, c.input->data<T>(), n0, &col));
        for (int64_t gi = 0; gi < cp.groups; ++gi) {
          Gemm g;  // Output[n, gi] = Filter[gi] x col[n, gi]
          g.m = cp.mg, g.n = cp.p, g.k = cp.k, g.batch = cp.Samples(n0);
          g.a = c.filter->data<T>() + gi * cp.mg * cp.k;
          g.b = cols.first + gi * cp.k * cp.p, g.stride_b = cols.second;
          RETURN_IF_ERROR(RunGemmStrided(
              ctx, g, dtype, out->data<T>() + (n0 * cp.m + gi * cp.mg) * cp.p, cp.m * cp.p));
        }
      }
      return absl::OkStatus();
    });
  }

 private:
  Conv2DParams params_;
};

// Input@GRAD and Filter@GRAD, each only when bound.
class Conv2DGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    return prologue::Store(ReadConv2DParams(op), &params_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Conv c, prologue::GetConv(*ctx, params_, true));
    const DataType dtype = c.input->dtype();
    const ConvPlan cp(c.g);
    Tensor* dx = nullptr;
    Tensor* dw = nullptr;
    if (ctx->OutputVar("Input@GRAD") != nullptr) {
      ASSIGN_OR_RETURN(dx, ctx->AllocateOutput("Input@GRAD", dtype, c.input->shape()));
    }
    if (ctx->OutputVar("Filter@GRAD") != nullptr) {
      ASSIGN_OR_RETURN(dw, ctx->AllocateOutput("Filter@GRAD", dtype, c.filter->shape()));
    }
    if (IsLowPrecisionFloat(dtype)) return ComputeWidened(ctx, c, cp, dx, dw);
    return DispatchFloat(dtype, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      if (dx != nullptr) RETURN_IF_ERROR(InputGrad<T>(ctx, c, cp, dx));
      if (dw != nullptr) RETURN_IF_ERROR(FilterGrad<T>(ctx, c, cp, dw));
      return absl::OkStatus();
    });
  }

 private:
  // The 16-bit gradients as the host computes them: in float32 on widened
  // copies of Input, Filter and Output@GRAD, each rounded once.
  static absl::Status ComputeWidened(KernelContext* ctx, const prologue::Conv& c,
                                     const ConvPlan& cp, Tensor* dx, Tensor* dw) {
    ASSIGN_OR_RETURN(const Tensor input, WidenedCopy(ctx, *c.input));
    ASSIGN_OR_RETURN(const Tensor filter, WidenedCopy(ctx, *c.filter));
    ASSIGN_OR_RETURN(const Tensor dout, WidenedCopy(ctx, *c.dout));
    prologue::Conv wide = c;
    wide.input = &input, wide.filter = &filter, wide.dout = &dout;
    for (auto [grad, run] : {std::pair{dx, &InputGrad<float>}, std::pair{dw, &FilterGrad<float>}}) {
      if (grad == nullptr) continue;
      ASSIGN_OR_RETURN(Tensor wide_grad, AllocateScratch(ctx, DataType::kFloat32, grad->shape(),
                                                         "a float32 gradient"));
      RETURN_IF_ERROR(run(ctx, wide, cp, &wide_grad));
      RETURN_IF_ERROR(NarrowInto(ctx, wide_grad, grad));
    }
    return absl::OkStatus();
  }

  // dcol[n, gi] = Filter[gi]^T x dOutput[n, gi], gathered back into dx.
  template <typename T>
  static absl::Status InputGrad(KernelContext* ctx, const prologue::Conv& c, const ConvPlan& cp,
                                Tensor* dx) {
    if (dx->NumElements() == 0) return absl::OkStatus();
    Tensor dcol;
    RETURN_IF_ERROR(ColumnScratch(ctx, cp, dx->dtype(), &dcol));
    for (int64_t n0 = 0; n0 < cp.n; n0 += cp.chunk) {
      T* dxs = dx->data<T>() + n0 * cp.c * cp.plane;
      T* target = cp.direct ? dxs : dcol.data<T>();
      const int64_t target_stride = cp.direct ? cp.c * cp.plane : cp.col_per_sample();
      for (int64_t gi = 0; gi < cp.groups; ++gi) {
        Gemm g;
        g.m = cp.k, g.n = cp.p, g.k = cp.mg, g.batch = cp.Samples(n0);
        g.a = c.filter->data<T>() + gi * cp.mg * cp.k, g.trans_a = true;
        g.b = c.dout->data<T>() + (n0 * cp.m + gi * cp.mg) * cp.p, g.stride_b = cp.m * cp.p;
        RETURN_IF_ERROR(
            RunGemmStrided(ctx, g, dx->dtype(), target + gi * cp.k * cp.p, target_stride));
      }
      if (!cp.direct) {
        CUDA_RETURN_IF_ERROR(LaunchCol2Im<T>(cp.shape, cp.Samples(n0), dcol.data<T>(), dxs,
                                             CudaStreamOf(ctx->stream())));
      }
    }
    return absl::OkStatus();
  }

  // dFilter[gi] = the sum over samples of dOutput[n, gi] x col[n, gi]^T:
  // per-sample products summed by the reduction kernel, chunk sums added up.
  template <typename T>
  static absl::Status FilterGrad(KernelContext* ctx, const prologue::Conv& c, const ConvPlan& cp,
                                 Tensor* dw) {
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    if (dw->NumElements() == 0) return absl::OkStatus();
    if (cp.n == 0) {
      CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dw->raw_data(), 0, dw->NumBytes(), stream));
      return absl::OkStatus();
    }
    const int64_t slice = cp.mg * cp.k;
    Tensor col;
    RETURN_IF_ERROR(ColumnScratch(ctx, cp, dw->dtype(), &col));
    ASSIGN_OR_RETURN(Tensor products, AllocateScratch(ctx, dw->dtype(), Shape({cp.chunk * slice}),
                                                      "per-sample filter gradients"));
    Tensor chunk_sum;
    if (cp.chunk < cp.n) {
      ASSIGN_OR_RETURN(chunk_sum, AllocateScratch(ctx, dw->dtype(), Shape({slice}),
                                                  "a chunk's filter gradient"));
    }
    for (int64_t n0 = 0; n0 < cp.n; n0 += cp.chunk) {
      const int64_t samples = cp.Samples(n0);
      ASSIGN_OR_RETURN(const auto cols, Columns<T>(ctx, cp, c.input->data<T>(), n0, &col));
      ASSIGN_OR_RETURN(const ReduceGeometry sum,
                       PlanReduceTo(ctx->op().type, Shape({samples, slice}), Shape({slice})));
      for (int64_t gi = 0; gi < cp.groups; ++gi) {
        Gemm g;  // products[s] = dOutput[n0 + s, gi] x col[s, gi]^T: [mg, K]
        g.m = cp.mg, g.n = cp.k, g.k = cp.p, g.batch = samples;
        g.a = c.dout->data<T>() + (n0 * cp.m + gi * cp.mg) * cp.p, g.stride_a = cp.m * cp.p;
        g.b = cols.first + gi * cp.k * cp.p, g.stride_b = cols.second, g.trans_b = true;
        RETURN_IF_ERROR(RunGemmStrided(ctx, g, dw->dtype(), products.data<T>(), slice));
        T* dwg = dw->data<T>() + gi * slice;
        if (n0 == 0) {
          CUDA_RETURN_IF_ERROR(LaunchReduceSum<T>(products.data<T>(), dwg, sum, stream));
        } else {
          CUDA_RETURN_IF_ERROR(
              LaunchReduceSum<T>(products.data<T>(), chunk_sum.data<T>(), sum, stream));
          CUDA_RETURN_IF_ERROR(
              LaunchBinarySame<T>(BinaryOp::kAdd, dwg, chunk_sum.data<T>(), dwg, slice, stream));
        }
      }
    }
    return absl::OkStatus();
  }

  Conv2DParams params_;
};

// conv2d(_grad)'s plan for Input and Filter of these metas; nullopt when
// they make none (Compute then fails before it allocates).
std::optional<ConvPlan> PlanFromMetas(const OpDesc& op, const ArgMetas& in, DataType* dtype) {
  const TensorMeta* x = FirstMeta(in, "Input");
  const TensorMeta* w = FirstMeta(in, "Filter");
  absl::StatusOr<Conv2DParams> params = ReadConv2DParams(op);
  if (x == nullptr || w == nullptr || !params.ok()) return std::nullopt;
  absl::StatusOr<Conv2DGeometry> g = Conv2DShape(op.type, x->shape, w->shape, *params);
  if (!g.ok()) return std::nullopt;
  *dtype = x->dtype;
  return ConvPlan(*g);
}

// A chunk's im2col columns (ColumnScratch).
int64_t ColumnBytes(const ConvPlan& cp, DataType dtype) {
  return cp.direct ? 0 : cp.chunk * cp.col_per_sample() * static_cast<int64_t>(SizeOf(dtype));
}

int64_t Conv2DScratch(const OpDesc& op, const ArgMetas& in, const ArgMetas&) {
  DataType dtype = DataType::kFloat32;
  const std::optional<ConvPlan> cp = PlanFromMetas(op, in, &dtype);
  if (!cp.has_value() || cp->n * cp->m * cp->p == 0) return 0;
  return ColumnBytes(*cp, dtype);
}

// InputGrad's columns, then FilterGrad's columns, products and chunk sum;
// for the 16-bit types, in float32, plus the widened copies of Input,
// Filter and Output@GRAD and a float32 gradient.
int64_t Conv2DGradScratch(const OpDesc& op, const ArgMetas& in, const ArgMetas& out) {
  DataType dtype = DataType::kFloat32;
  const std::optional<ConvPlan> cp = PlanFromMetas(op, in, &dtype);
  if (!cp.has_value()) return 0;
  int64_t widened = 0;
  if (IsLowPrecisionFloat(dtype)) {
    dtype = DataType::kFloat32;
    for (const char* arg : {"Input", "Filter", "Output@GRAD"}) {
      if (const TensorMeta* m = FirstMeta(in, arg)) widened += m->shape.num_elements();
    }
    int64_t largest_grad = 0;
    for (const char* arg : {"Input@GRAD", "Filter@GRAD"}) {
      if (const TensorMeta* m = FirstMeta(out, arg)) {
        largest_grad = std::max(largest_grad, m->shape.num_elements());
      }
    }
    widened = (widened + largest_grad) * static_cast<int64_t>(sizeof(float));
  }
  const int64_t size = static_cast<int64_t>(SizeOf(dtype));
  const TensorMeta* dx = FirstMeta(out, "Input@GRAD");
  const TensorMeta* dw = FirstMeta(out, "Filter@GRAD");
  const int64_t input_grad =
      dx != nullptr && dx->shape.num_elements() > 0 ? ColumnBytes(*cp, dtype) : 0;
  const int64_t slice = cp->mg * cp->k;
  const int64_t filter_grad = dw != nullptr && dw->shape.num_elements() > 0 && cp->n > 0
                                  ? ColumnBytes(*cp, dtype) + cp->chunk * slice * size +
                                        (cp->chunk < cp->n ? slice * size : 0)
                                  : 0;
  return widened + std::max(input_grad, filter_grad);
}

REGISTER_KERNEL(
    KernelDef("conv2d", "gpu").TypeConstraint("Input", kFloatTypesWith16Bit).Scratch(Conv2DScratch),
    Conv2DKernel);
REGISTER_KERNEL(KernelDef("conv2d_grad", "gpu")
                    .TypeConstraint("Input", kFloatTypesWith16Bit)
                    .Scratch(Conv2DGradScratch),
                Conv2DGradKernel);

PoolWindows WindowsOf(const Pool2DGeometry& g) {
  PoolWindows w;
  w.planes = g.n * g.c;
  w.h = g.h, w.w = g.w, w.oh = g.oh, w.ow = g.ow;
  w.kh = g.p.kh, w.kw = g.p.kw;
  w.stride_h = g.p.stride_h, w.stride_w = g.p.stride_w;
  w.pad_h = g.p.pad_h, w.pad_w = g.p.pad_w;
  w.max = g.p.max;
  w.exclusive = g.p.exclusive;
  return w;
}

class Pool2DKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    return prologue::Store(ReadPool2DParams(op), &params_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Pool p, prologue::GetPool(*ctx, params_, false));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", p.x->dtype(), p.g.out));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(p.x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchPool2D<T>(WindowsOf(p.g), p.x->data<T>(), out->data<T>(), stream));
      return absl::OkStatus();
    });
  }

 private:
  Pool2DParams params_;
};

class Pool2DGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    return prologue::Store(ReadPool2DParams(op), &params_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Pool p, prologue::GetPool(*ctx, params_, true));
    ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("X@GRAD", p.x->dtype(), p.x->shape()));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(p.x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchPool2DGrad<T>(WindowsOf(p.g), p.x->data<T>(), p.out->data<T>(),
                                               p.dout->data<T>(), dx->data<T>(), stream));
      return absl::OkStatus();
    });
  }

 private:
  Pool2DParams params_;
};

REGISTER_KERNEL(KernelDef("pool2d", "gpu").TypeConstraint("X", kFloatTypes), Pool2DKernel);
REGISTER_KERNEL(KernelDef("pool2d_grad", "gpu").TypeConstraint("X", kFloatTypes), Pool2DGradKernel);

template <typename T>
const T* DataOrNull(const Tensor* t) {
  return t == nullptr ? nullptr : t->data<T>();
}

class LayerNormKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Norm n,
                     prologue::GetNorm(*ctx, attrs_.begin_norm_axis, false));
    ASSIGN_OR_RETURN(const prologue::NormOutputs o, prologue::AllocateNormOutputs(ctx, n));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(n.x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchLayerNorm<T>(
          n.x->data<T>(), DataOrNull<T>(n.scale), DataOrNull<T>(n.bias), n.d.rows, n.d.cols,
          attrs_.epsilon, o.y->data<T>(), o.mean->data<T>(), o.var->data<T>(), stream));
      return absl::OkStatus();
    });
  }

 private:
  prologue::NormAttrs attrs_;
};

// X@GRAD, Scale@GRAD and Bias@GRAD, each only when bound.
class LayerNormGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Norm n, prologue::GetNorm(*ctx, attrs_.begin_norm_axis, true));
    ASSIGN_OR_RETURN(const prologue::NormGrads grads, prologue::AllocateNormGrads(ctx, n));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(n.x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      auto data = [](Tensor* t) { return t == nullptr ? nullptr : t->data<T>(); };
      const T* x = n.x->data<T>();
      if (grads.dx != nullptr) {
        CUDA_RETURN_IF_ERROR(LaunchLayerNormGradX<T>(
            x, DataOrNull<T>(n.scale), n.mean->data<T>(), n.var->data<T>(), n.dy->data<T>(),
            n.d.rows, n.d.cols, attrs_.epsilon, grads.dx->data<T>(), stream));
      }
      if (grads.dscale == nullptr && grads.dbias == nullptr) return absl::OkStatus();
      const int64_t chunks = LayerNormRowChunks(n.d.rows);
      ASSIGN_OR_RETURN(Tensor partials,
                       AllocateScratch(ctx, DataType::kFloat64, Shape({2 * chunks * n.d.cols}),
                                       "partial column sums"));
      CUDA_RETURN_IF_ERROR(
          LaunchLayerNormParamGrads<T>(x, n.mean->data<T>(), n.var->data<T>(), n.dy->data<T>(),
                                       n.d.rows, n.d.cols, attrs_.epsilon, partials.data<double>(),
                                       chunks, data(grads.dscale), data(grads.dbias), stream));
      return absl::OkStatus();
    });
  }

 private:
  prologue::NormAttrs attrs_;
};

REGISTER_KERNEL(KernelDef("layer_norm", "gpu").TypeConstraint("X", kFloatTypes), LayerNormKernel);
// The partial column sums of Scale@GRAD and Bias@GRAD, when either is bound.
int64_t LayerNormGradScratch(const OpDesc& op, const ArgMetas& in, const ArgMetas& out) {
  const TensorMeta* x = FirstMeta(in, "X");
  prologue::NormAttrs attrs;
  if (x == nullptr || !attrs.Read(op).ok()) return 0;
  if (FirstMeta(out, "Scale@GRAD") == nullptr && FirstMeta(out, "Bias@GRAD") == nullptr) return 0;
  absl::StatusOr<LayerNormDims> d = LayerNormShape(op.type, x->shape, attrs.begin_norm_axis);
  if (!d.ok()) return 0;
  return 2 * LayerNormRowChunks(d->rows) * d->cols * static_cast<int64_t>(sizeof(double));
}

REGISTER_KERNEL(KernelDef("layer_norm_grad", "gpu")
                    .TypeConstraint("X", kFloatTypes)
                    .Scratch(LayerNormGradScratch),
                LayerNormGradKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
