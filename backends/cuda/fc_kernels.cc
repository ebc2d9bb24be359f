// gpu kernels of fc and fc_grad: the products on cuBLAS (gemm.h), the bias
// added to every row and its gradient summed over the rows by the
// broadcasting kernels (bfloat16 / float16: both inside the products'
// float32 sums, by cuBLASLt epilogues where cuBLASLt has an algorithm). Registration lines are the
// host kernels'; validation and messages come from the shared prologues (ops/nn/prologues.h).
#include <cuda_runtime_api.h>

#include <algorithm>

#include "backends/cuda/broadcast_launchers.h"
#include "backends/cuda/broadcast_plan.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/elementwise_launchers.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/kernel_util.h"
#include "backends/cuda/scratch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "ops/math/prologues.h"
#include "ops/nn/prologues.h"

namespace tandem {
namespace cuda {
namespace {

// Out = Input * W, then Bias added to every row (K == 0: Bias or zeros).
class FcKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    return prologue::ReadAttr(op, "in_num_col_dims", &in_num_col_dims_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::FcArgs a, prologue::GetFcArgs(ctx, in_num_col_dims_));
    const FlatMatmulDims& d = a.d;
    if (IsLowPrecisionFloat(a.input->dtype())) return Compute16Bit(ctx, a);
    RETURN_IF_ERROR(RunFlatMatmul(ctx, *a.input, *a.w, d.m, d.k, d.n, a.out));
    if (a.bias == nullptr) return absl::OkStatus();
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(a.input->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchBinaryRow<T>(BinaryOp::kAdd, a.out->data<T>(), a.bias->data<T>(),
                                              /*row_is_x=*/false, a.out->data<T>(), d.m * d.n, d.n,
                                              stream));
      return absl::OkStatus();
    });
  }

 private:
  // bfloat16 / float16: Input * W + Bias summed in float32 and rounded once,
  // as on the host: the bias added by the cuBLASLt product's epilogue, or
  // where cuBLASLt has no algorithm, Out starts as Bias in every row and the
  // product is added to it inside the GEMM.
  absl::Status Compute16Bit(KernelContext* ctx, const prologue::FcArgs& a) {
    const FlatMatmulDims& d = a.d;
    if (a.bias == nullptr) return RunFlatMatmul(ctx, *a.input, *a.w, d.m, d.k, d.n, a.out);
    if (d.k > 0 && d.m > 0 && d.n > 0) {  // the bias in the product's epilogue
      bool done = false;
      RETURN_IF_ERROR(RunFlatMatmulBias(ctx, *a.input, *a.w, *a.bias, d.m, d.k, d.n, a.out, &done));
      if (done) return absl::OkStatus();
    }
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    RETURN_IF_ERROR(Dispatch16BitFloat(a.input->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(
          LaunchRepeatRow<T>(a.bias->data<T>(), d.m, d.n, a.out->data<T>(), stream));
      return absl::OkStatus();
    }));
    if (d.k == 0) return absl::OkStatus();  // Out = Bias
    Gemm g;
    g.m = d.m, g.n = d.n, g.k = d.k;
    g.a = a.input->raw_data();
    g.b = a.w->raw_data();
    g.accumulate = true;
    return RunGemm(ctx, g, a.out);
  }

  int64_t in_num_col_dims_ = 1;
};

REGISTER_KERNEL(KernelDef("fc", "gpu").TypeConstraint("Input", kFloatTypesWith16Bit), FcKernel);

// Input@GRAD = Out@GRAD * W^T, W@GRAD = Input^T * Out@GRAD, Bias@GRAD = the
// column sums of Out@GRAD (float32 in double; 16-bit types in float32, by
// W@GRAD's cuBLASLt epilogue where it has an algorithm), each only when bound.
class FcGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    return prologue::ReadAttr(op, "in_num_col_dims", &in_num_col_dims_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::FcGradArgs a, prologue::GetFcGradArgs(ctx, in_num_col_dims_));
    const FlatMatmulDims& d = a.d;
    if (a.dbias != nullptr && IsLowPrecisionFloat(a.input->dtype())) {
      if (a.dw != nullptr) {  // the bias gradient summed as W@GRAD's product reads Out@GRAD
        bool fused = false;
        RETURN_IF_ERROR(RunFlatWeightGradWithBiasGrad(ctx, *a.input, *a.dout, d.m, d.k, d.n, a.dw,
                                                      a.dbias, &fused));
        if (fused) {
          return RunFlatMatmulGrad(ctx, *a.input, *a.w, *a.dout, d.m, d.k, d.n, a.dinput,
                                   /*dy=*/nullptr);
        }
      }
      RETURN_IF_ERROR(BiasGrad16Bit(ctx, a));
    } else if (a.dbias != nullptr) {
      ASSIGN_OR_RETURN(const ReduceGeometry sum,
                       PlanReduceTo(ctx->op().type, Shape({d.m, d.n}), Shape({d.n})));
      const cudaStream_t stream = CudaStreamOf(ctx->stream());
      RETURN_IF_ERROR(DispatchFloat(a.input->dtype(), [&](auto tag) -> absl::Status {
        using T = typename decltype(tag)::type;
        CUDA_RETURN_IF_ERROR(
            LaunchReduceSum<T>(a.dout->data<T>(), a.dbias->data<T>(), sum, stream));
        return absl::OkStatus();
      }));
    }
    return RunFlatMatmulGrad(ctx, *a.input, *a.w, *a.dout, d.m, d.k, d.n, a.dinput, a.dw);
  }

 private:
  // bfloat16 / float16: Bias@GRAD [1, n] = ones [1, m] * Out@GRAD [m, n],
  // a GEMM that sums in float32 and rounds once, as on the host.
  static absl::Status BiasGrad16Bit(KernelContext* ctx, const prologue::FcGradArgs& a) {
    const FlatMatmulDims& d = a.d;
    ASSIGN_OR_RETURN(Tensor ones, AllocateScratch(ctx, a.input->dtype(), Shape({d.m}),
                                                  "the ones that sum Out@GRAD's rows"));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    RETURN_IF_ERROR(Dispatch16BitFloat(a.input->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchFill<T>(ones.data<T>(), d.m, T(1.0f), stream));
      return absl::OkStatus();
    }));
    Gemm g;
    g.m = 1, g.n = d.n, g.k = d.m;
    g.a = ones.raw_data();
    g.b = a.dout->raw_data();
    return RunGemm(ctx, g, a.dbias);
  }

  int64_t in_num_col_dims_ = 1;
};

// Scratch: fc_grad's ones for a 16-bit Bias@GRAD (2 bytes a row).
int64_t FcGradScratch(const OpDesc& op, const ArgMetas& in, const ArgMetas& out) {
  const TensorMeta* dout = FirstMeta(in, "Out@GRAD");
  const TensorMeta* dbias = FirstMeta(out, "Bias@GRAD");
  if (dout == nullptr || dbias == nullptr || !IsLowPrecisionFloat(dout->dtype)) return 0;
  const int64_t n = dbias->shape.num_elements();
  return n > 0 ? 2 * std::max<int64_t>(0, dout->shape.num_elements() / n) : 0;
}

REGISTER_KERNEL(KernelDef("fc_grad", "gpu")
                    .TypeConstraint("Input", kFloatTypesWith16Bit)
                    .Scratch(FcGradScratch),
                FcGradKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
