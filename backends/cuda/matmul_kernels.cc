// gpu kernels of matmul, mul and their gradients on cuBLAS (gemm.h), with
// the host kernels' registration lines and, through the shared prologues
// (backends/common/math_prologues.h), their validation and messages.
#include "backends/common/math_prologues.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/kernel_util.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace cuda {
namespace {

using prologue::MatmulAttrs;

class MatmulKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::MatmulArgs a, prologue::GetMatmulArgs(*ctx, attrs_, false));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", a.x->dtype(), a.d.out));
    Gemm g;
    g.trans_a = attrs_.tx;
    g.trans_b = attrs_.ty;
    g.m = a.d.m;
    g.n = a.d.n;
    g.k = a.d.k;
    g.batch = a.d.batch;
    g.a = a.x->raw_data();
    g.stride_a = a.d.x_batched ? a.d.m * a.d.k : 0;
    g.b = a.y->raw_data();
    g.stride_b = a.d.y_batched ? a.d.k * a.d.n : 0;
    g.alpha = attrs_.alpha;
    return RunGemm(ctx, g, out);
  }

 private:
  MatmulAttrs attrs_;
};

REGISTER_KERNEL(KernelDef("matmul", "gpu").TypeConstraint("X", kFloatTypes), MatmulKernel);

// With Out = alpha * op(X) * op(Y) and G = Out@GRAD (per batch, m x n):
//   X@GRAD = alpha * G op(Y)^T, or its transpose (k x m) when transpose_X;
//   Y@GRAD = alpha * op(X)^T G, or its transpose (n x k) when transpose_Y;
// summed over the batch for an input shared by every batch.
class MatmulGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::MatmulArgs a, prologue::GetMatmulArgs(*ctx, attrs_, true));
    const bool tx = attrs_.tx, ty = attrs_.ty;
    const int64_t m = a.d.m, n = a.d.n, k = a.d.k;
    const int64_t x_stride = a.d.x_batched ? m * k : 0;
    const int64_t y_stride = a.d.y_batched ? k * n : 0;
    return DispatchFloat(a.x->dtype(), [&](auto) -> absl::Status {
      if (ctx->OutputVar("X@GRAD") != nullptr) {
        ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("X@GRAD", a.x->dtype(), a.x->shape()));
        Gemm g;     // a product over n of G (m x n) and Y
        if (!tx) {  // dX = G op(Y)^T: m x k
          g.m = m, g.n = k, g.k = n;
          g.a = a.dout->raw_data(), g.stride_a = m * n, g.trans_a = false;
          g.b = a.y->raw_data(), g.stride_b = y_stride, g.trans_b = !ty;
        } else {  // dX = op(Y) G^T: k x m
          g.m = k, g.n = m, g.k = n;
          g.a = a.y->raw_data(), g.stride_a = y_stride, g.trans_a = ty;
          g.b = a.dout->raw_data(), g.stride_b = m * n, g.trans_b = true;
        }
        g.batch = a.d.x_batched || a.d.y_batched ? a.d.batch : 1;
        g.alpha = attrs_.alpha;
        g.sum_batches = !a.d.x_batched;
        RETURN_IF_ERROR(RunGemm(ctx, g, dx));
      }
      if (ctx->OutputVar("Y@GRAD") != nullptr) {
        ASSIGN_OR_RETURN(Tensor * dy, ctx->AllocateOutput("Y@GRAD", a.y->dtype(), a.y->shape()));
        Gemm g;     // a product over m of op(X) and G (m x n)
        if (!ty) {  // dY = op(X)^T G: k x n
          g.m = k, g.n = n, g.k = m;
          g.a = a.x->raw_data(), g.stride_a = x_stride, g.trans_a = !tx;
          g.b = a.dout->raw_data(), g.stride_b = m * n, g.trans_b = false;
        } else {  // dY = G^T op(X): n x k
          g.m = n, g.n = k, g.k = m;
          g.a = a.dout->raw_data(), g.stride_a = m * n, g.trans_a = true;
          g.b = a.x->raw_data(), g.stride_b = x_stride, g.trans_b = tx;
        }
        g.batch = a.d.x_batched || a.d.y_batched ? a.d.batch : 1;
        g.alpha = attrs_.alpha;
        g.sum_batches = !a.d.y_batched;
        RETURN_IF_ERROR(RunGemm(ctx, g, dy));
      }
      return absl::OkStatus();
    });
  }

 private:
  MatmulAttrs attrs_;
};

REGISTER_KERNEL(KernelDef("matmul_grad", "gpu").TypeConstraint("X", kFloatTypes), MatmulGradKernel);

class MulKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return cols_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::MulArgs a, prologue::GetMulArgs(ctx, cols_));
    return RunFlatMatmul(ctx, *a.x, *a.y, a.d.m, a.d.k, a.d.n, a.out);
  }

 private:
  prologue::NumColDims cols_;
};

REGISTER_KERNEL(KernelDef("mul", "gpu").TypeConstraint("X", kFloatTypes), MulKernel);

// X@GRAD = Out@GRAD * Y^T and Y@GRAD = X^T * Out@GRAD as matrices, each only
// when bound.
class MulGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return cols_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::MulGradArgs a, prologue::GetMulGradArgs(ctx, cols_));
    return RunFlatMatmulGrad(ctx, *a.x, *a.y, *a.dout, a.d.m, a.d.k, a.d.n, a.dx, a.dy);
  }

 private:
  prologue::NumColDims cols_;
};

REGISTER_KERNEL(KernelDef("mul_grad", "gpu").TypeConstraint("X", kFloatTypes), MulGradKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
