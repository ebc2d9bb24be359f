// gpu kernels of matmul, mul and their gradients on cuBLAS (gemm.h). mul's
// registration lines, validation and messages are the host kernels'
// (backends/common/math_kernels.h, whose argument helpers they call).
#include "backends/common/math_kernels.h"
#include "backends/cuda/gemm.h"
#include "backends/cuda/kernel_util.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace cuda {
namespace {

struct MatmulAttrs {
  bool tx = false, ty = false;
  double alpha = 1;

  absl::Status Read(const OpDesc& op) {
    ASSIGN_OR_RETURN(tx, GetAttr<bool>(op.attrs, "transpose_X", op.type));
    ASSIGN_OR_RETURN(ty, GetAttr<bool>(op.attrs, "transpose_Y", op.type));
    ASSIGN_OR_RETURN(alpha, GetAttr<double>(op.attrs, "alpha", op.type));
    return absl::OkStatus();
  }
};

class MatmulKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* y, ctx->InputTensor("Y"));
    RETURN_IF_ERROR(CheckSameDtype(ctx, *x, *y));
    ASSIGN_OR_RETURN(MatmulDims d,
                     MatmulShape(ctx->op().type, x->shape(), y->shape(), attrs_.tx, attrs_.ty));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), d.out));
    Gemm g;
    g.trans_a = attrs_.tx;
    g.trans_b = attrs_.ty;
    g.m = d.m;
    g.n = d.n;
    g.k = d.k;
    g.batch = d.batch;
    g.a = x->raw_data();
    g.stride_a = d.x_batched ? d.m * d.k : 0;
    g.b = y->raw_data();
    g.stride_b = d.y_batched ? d.k * d.n : 0;
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
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* y, ctx->InputTensor("Y"));
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    RETURN_IF_ERROR(CheckSameDtype(ctx, *x, *y));
    const bool tx = attrs_.tx, ty = attrs_.ty;
    ASSIGN_OR_RETURN(MatmulDims d, MatmulShape(ctx->op().type, x->shape(), y->shape(), tx, ty));
    RETURN_IF_ERROR(CheckOutGrad(ctx, *dout, x->dtype(), d.out));
    const int64_t m = d.m, n = d.n, k = d.k;
    const int64_t x_stride = d.x_batched ? m * k : 0;
    const int64_t y_stride = d.y_batched ? k * n : 0;
    return DispatchFloat(x->dtype(), [&](auto) -> absl::Status {
      if (ctx->OutputVar("X@GRAD") != nullptr) {
        ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("X@GRAD", x->dtype(), x->shape()));
        Gemm g;     // a product over n of G (m x n) and Y
        if (!tx) {  // dX = G op(Y)^T: m x k
          g.m = m, g.n = k, g.k = n;
          g.a = dout->raw_data(), g.stride_a = m * n, g.trans_a = false;
          g.b = y->raw_data(), g.stride_b = y_stride, g.trans_b = !ty;
        } else {  // dX = op(Y) G^T: k x m
          g.m = k, g.n = m, g.k = n;
          g.a = y->raw_data(), g.stride_a = y_stride, g.trans_a = ty;
          g.b = dout->raw_data(), g.stride_b = m * n, g.trans_b = true;
        }
        g.batch = d.x_batched || d.y_batched ? d.batch : 1;
        g.alpha = attrs_.alpha;
        g.sum_batches = !d.x_batched;
        RETURN_IF_ERROR(RunGemm(ctx, g, dx));
      }
      if (ctx->OutputVar("Y@GRAD") != nullptr) {
        ASSIGN_OR_RETURN(Tensor * dy, ctx->AllocateOutput("Y@GRAD", y->dtype(), y->shape()));
        Gemm g;     // a product over m of op(X) and G (m x n)
        if (!ty) {  // dY = op(X)^T G: k x n
          g.m = k, g.n = n, g.k = m;
          g.a = x->raw_data(), g.stride_a = x_stride, g.trans_a = !tx;
          g.b = dout->raw_data(), g.stride_b = m * n, g.trans_b = false;
        } else {  // dY = G^T op(X): n x k
          g.m = n, g.n = k, g.k = m;
          g.a = dout->raw_data(), g.stride_a = m * n, g.trans_a = true;
          g.b = x->raw_data(), g.stride_b = x_stride, g.trans_b = tx;
        }
        g.batch = d.x_batched || d.y_batched ? d.batch : 1;
        g.alpha = attrs_.alpha;
        g.sum_batches = !d.y_batched;
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
  absl::Status Init(const OpDesc& op) override {
    return math_kernels_internal::ReadNumColDims(op, &xn_, &yn_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* y, ctx->InputTensor("Y"));
    ASSIGN_OR_RETURN(const FlatMatmulDims d,
                     math_kernels_internal::GetMulDims(*ctx, *x, *y, xn_, yn_));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), d.out));
    return RunFlatMatmul(ctx, *x, *y, d.m, d.k, d.n, out);
  }

 private:
  int64_t xn_ = 1, yn_ = 1;
};

REGISTER_KERNEL(KernelDef("mul", "gpu").TypeConstraint("X", kFloatTypes), MulKernel);

// X@GRAD = Out@GRAD * Y^T and Y@GRAD = X^T * Out@GRAD as matrices, each only
// when bound.
class MulGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    return math_kernels_internal::ReadNumColDims(op, &xn_, &yn_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* y, ctx->InputTensor("Y"));
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    ASSIGN_OR_RETURN(const FlatMatmulDims d,
                     math_kernels_internal::GetMulDims(*ctx, *x, *y, xn_, yn_));
    RETURN_IF_ERROR(math_kernels_internal::CheckOutGrad(*ctx, *dout, x->dtype(), d.out));
    Tensor* dx = nullptr;
    Tensor* dy = nullptr;
    if (ctx->OutputVar("X@GRAD") != nullptr) {
      ASSIGN_OR_RETURN(dx, ctx->AllocateOutput("X@GRAD", x->dtype(), x->shape()));
    }
    if (ctx->OutputVar("Y@GRAD") != nullptr) {
      ASSIGN_OR_RETURN(dy, ctx->AllocateOutput("Y@GRAD", y->dtype(), y->shape()));
    }
    return RunFlatMatmulGrad(ctx, *x, *y, *dout, d.m, d.k, d.n, dx, dy);
  }

 private:
  int64_t xn_ = 1, yn_ = 1;
};

REGISTER_KERNEL(KernelDef("mul_grad", "gpu").TypeConstraint("X", kFloatTypes), MulGradKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
