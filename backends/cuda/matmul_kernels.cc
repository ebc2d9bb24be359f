// gpu kernels of matmul, mul and their gradients on cuBLAS (gemm.h), with
// the host kernels' registration lines and, through the shared prologues
// (ops/math/prologues.h), their validation and messages.
#include <algorithm>

#include "backends/cuda/gemm.h"
#include "backends/cuda/kernel_util.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "ops/math/prologues.h"
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

REGISTER_KERNEL(KernelDef("matmul", "gpu").TypeConstraint("X", kFloatTypesWith16Bit), MatmulKernel);

// With Out = alpha * op(X) * op(Y) and G = Out@GRAD (per batch, m x n):
//   X@GRAD = alpha * G op(Y)^T, or its transpose (k x m) when transpose_X;
//   Y@GRAD = alpha * op(X)^T G, or its transpose (n x k) when transpose_Y;
// summed over the batch for an input shared by every batch.
// dX's product, over n, of G (m x n) and Y.
Gemm XGradGemm(const MatmulDims& d, const MatmulAttrs& attrs, const void* dout, const void* y) {
  const int64_t m = d.m, n = d.n, k = d.k;
  const int64_t y_stride = d.y_batched ? k * n : 0;
  Gemm g;
  if (!attrs.tx) {  // dX = G op(Y)^T: m x k
    g.m = m, g.n = k, g.k = n;
    g.a = dout, g.stride_a = m * n, g.trans_a = false;
    g.b = y, g.stride_b = y_stride, g.trans_b = !attrs.ty;
  } else {  // dX = op(Y) G^T: k x m
    g.m = k, g.n = m, g.k = n;
    g.a = y, g.stride_a = y_stride, g.trans_a = attrs.ty;
    g.b = dout, g.stride_b = m * n, g.trans_b = true;
  }
  g.batch = d.x_batched || d.y_batched ? d.batch : 1;
  g.alpha = attrs.alpha;
  g.sum_batches = !d.x_batched;
  return g;
}

// dY's product, over m, of op(X) and G (m x n).
Gemm YGradGemm(const MatmulDims& d, const MatmulAttrs& attrs, const void* x, const void* dout) {
  const int64_t m = d.m, n = d.n, k = d.k;
  const int64_t x_stride = d.x_batched ? m * k : 0;
  Gemm g;
  if (!attrs.ty) {  // dY = op(X)^T G: k x n
    g.m = k, g.n = n, g.k = m;
    g.a = x, g.stride_a = x_stride, g.trans_a = !attrs.tx;
    g.b = dout, g.stride_b = m * n, g.trans_b = false;
  } else {  // dY = G^T op(X): n x k
    g.m = n, g.n = k, g.k = m;
    g.a = dout, g.stride_a = m * n, g.trans_a = true;
    g.b = x, g.stride_b = x_stride, g.trans_b = attrs.tx;
  }
  g.batch = d.x_batched || d.y_batched ? d.batch : 1;
  g.alpha = attrs.alpha;
  g.sum_batches = !d.y_batched;
  return g;
}

// With Out = alpha * op(X) * op(Y) and G = Out@GRAD (per batch, m x n):
//   X@GRAD = alpha * G op(Y)^T, or its transpose (k x m) when transpose_X;
//   Y@GRAD = alpha * op(X)^T G, or its transpose (n x k) when transpose_Y;
// summed over the batch for an input shared by every batch.
class MatmulGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::MatmulArgs a, prologue::GetMatmulArgs(*ctx, attrs_, true));
    return DispatchFloatWith16Bit(a.x->dtype(), [&](auto) -> absl::Status {
      if (ctx->OutputVar("X@GRAD") != nullptr) {
        ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("X@GRAD", a.x->dtype(), a.x->shape()));
        RETURN_IF_ERROR(
            RunGemm(ctx, XGradGemm(a.d, attrs_, a.dout->raw_data(), a.y->raw_data()), dx));
      }
      if (ctx->OutputVar("Y@GRAD") != nullptr) {
        ASSIGN_OR_RETURN(Tensor * dy, ctx->AllocateOutput("Y@GRAD", a.y->dtype(), a.y->shape()));
        RETURN_IF_ERROR(
            RunGemm(ctx, YGradGemm(a.d, attrs_, a.x->raw_data(), a.dout->raw_data()), dy));
      }
      return absl::OkStatus();
    });
  }

 private:
  MatmulAttrs attrs_;
};

// The products of a sum over the batch (gemm.h), one gradient at a time.
int64_t MatmulGradScratch(const OpDesc& op, const ArgMetas& in, const ArgMetas& out) {
  const TensorMeta* x = FirstMeta(in, "X");
  const TensorMeta* y = FirstMeta(in, "Y");
  MatmulAttrs attrs;
  if (x == nullptr || y == nullptr || !attrs.Read(op).ok()) return 0;
  absl::StatusOr<MatmulDims> d = MatmulShape(op.type, x->shape, y->shape, attrs.tx, attrs.ty);
  if (!d.ok()) return 0;
  const int64_t dx = FirstMeta(out, "X@GRAD") == nullptr
                         ? 0
                         : RunGemmScratchBytes(XGradGemm(*d, attrs, nullptr, nullptr), x->dtype);
  const int64_t dy = FirstMeta(out, "Y@GRAD") == nullptr
                         ? 0
                         : RunGemmScratchBytes(YGradGemm(*d, attrs, nullptr, nullptr), y->dtype);
  return std::max(dx, dy);
}

REGISTER_KERNEL(KernelDef("matmul_grad", "gpu")
                    .TypeConstraint("X", kFloatTypesWith16Bit)
                    .Scratch(MatmulGradScratch),
                MatmulGradKernel);

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

REGISTER_KERNEL(KernelDef("mul", "gpu").TypeConstraint("X", kFloatTypesWith16Bit), MulKernel);

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

REGISTER_KERNEL(KernelDef("mul_grad", "gpu").TypeConstraint("X", kFloatTypesWith16Bit),
                MulGradKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
