// gpu kernels of matmul and matmul_grad on cuBLAS (float32: Sgemm, float64:
// Dgemm, strided-batched). Tensors are row-major and cuBLAS column-major: a
// row-major C = A * B is computed as the column-major C^T = B^T * A^T, which
// reads the same memory, so A and B swap places and no data moves.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <type_traits>

#include "absl/strings/str_cat.h"
#include "backends/cuda/broadcast_launchers.h"
#include "backends/cuda/broadcast_plan.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_device_guard.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/kernel_util.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace cuda {
namespace {

// C[b] = alpha * op(A[b]) * op(B[b]) for b < batch, all row-major: C[b] is
// m x n; A[b] is stored m x k, or k x m when trans_a; B[b] is stored k x n,
// or n x k when trans_b. A stride of 0 shares one matrix across the batch.
// With sum_batches, C (one m x n matrix) = the sum over b instead.
struct Gemm {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  const void* a = nullptr;
  int64_t stride_a = 0;
  const void* b = nullptr;
  int64_t stride_b = 0;
  double alpha = 1;
  bool sum_batches = false;
};

template <typename T>
cublasStatus_t GemmStridedBatched(cublasHandle_t h, const Gemm& g, T* c, int64_t stride_c) {
  const T alpha = static_cast<T>(g.alpha), beta = 0;
  const cublasOperation_t op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int64_t lda = g.trans_a ? g.m : g.k;
  const int64_t ldb = g.trans_b ? g.k : g.n;
  const T* a = static_cast<const T*>(g.a);
  const T* b = static_cast<const T*>(g.b);
  // Column-major: C^T (n x m) = op(B)^T (n x k) * op(A)^T (k x m).
  if constexpr (std::is_same_v<T, float>) {
    return cublasSgemmStridedBatched_64(h, op_b, op_a, g.n, g.m, g.k, &alpha, b, ldb, g.stride_b, a,
                                        lda, g.stride_a, &beta, c, g.n, stride_c, g.batch);
  } else {
    return cublasDgemmStridedBatched_64(h, op_b, op_a, g.n, g.m, g.k, &alpha, b, ldb, g.stride_b, a,
                                        lda, g.stride_a, &beta, c, g.n, stride_c, g.batch);
  }
}

// Runs `g` into `c` (m x n, or batch x m x n without sum_batches) on the
// context's stream. Summing over a batch folds it into k when A and B are
// stacked along k in memory; otherwise the products go to a temporary and are
// summed with a reduction kernel.
template <typename T>
absl::Status RunGemm(KernelContext* ctx, Gemm g, Tensor* c) {
  const cudaStream_t stream = CudaStreamOf(ctx->stream());
  if (c->NumElements() == 0) return absl::OkStatus();
  if (g.k == 0 || g.batch == 0) {  // empty sums
    CUDA_RETURN_IF_ERROR(cudaMemsetAsync(c->raw_data(), 0, c->NumBytes(), stream));
    return absl::OkStatus();
  }
  if (g.sum_batches && g.batch > 1 && g.trans_a && !g.trans_b && g.stride_a == g.k * g.m &&
      g.stride_b == g.k * g.n) {
    g.k *= g.batch;  // sum_b A[b]^T B[b] == [A[0]; A[1]; ...]^T [B[0]; B[1]; ...]
    g.batch = 1;
  }
  CudaDevice* device = CudaDeviceOf(ctx->device());
  if (!g.sum_batches || g.batch == 1) {
    return device->WithCublas(ctx->stream(), [&](cublasHandle_t h) -> absl::Status {
      CUBLAS_RETURN_IF_ERROR(GemmStridedBatched<T>(h, g, c->data<T>(), g.m * g.n));
      return absl::OkStatus();
    });
  }
  // The temporary is released when this returns, while the work is still
  // queued; later users of the memory are ordered after this stream.
  const Shape products_shape({g.batch, g.m * g.n});
  absl::StatusOr<Tensor> temp = Tensor::Allocate(device->allocator(), c->dtype(), products_shape);
  if (!temp.ok()) {
    return absl::Status(temp.status().code(),
                        absl::StrCat("op '", ctx->op().type, "': temporary ",
                                     DataTypeName(c->dtype()), products_shape.ToString(),
                                     " for the sum over the batch: ", temp.status().message()));
  }
  Tensor& products = *temp;
  RETURN_IF_ERROR(device->WithCublas(ctx->stream(), [&](cublasHandle_t h) -> absl::Status {
    CUBLAS_RETURN_IF_ERROR(GemmStridedBatched<T>(h, g, products.data<T>(), g.m * g.n));
    return absl::OkStatus();
  }));
  ASSIGN_OR_RETURN(ReduceGeometry sum,
                   PlanReduceTo(ctx->op().type, products_shape, Shape({g.m * g.n})));
  CUDA_RETURN_IF_ERROR(LaunchReduceSum<T>(products.data<T>(), c->data<T>(), sum, stream));
  return absl::OkStatus();
}

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
    CudaDeviceGuard guard(ctx->place().index());
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
    return DispatchFloat(x->dtype(), [&](auto tag) -> absl::Status {
      return RunGemm<typename decltype(tag)::type>(ctx, g, out);
    });
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
    CudaDeviceGuard guard(ctx->place().index());
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
    return DispatchFloat(x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
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
        RETURN_IF_ERROR(RunGemm<T>(ctx, g, dx));
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
        RETURN_IF_ERROR(RunGemm<T>(ctx, g, dy));
      }
      return absl::OkStatus();
    });
  }

 private:
  MatmulAttrs attrs_;
};

REGISTER_KERNEL(KernelDef("matmul_grad", "gpu").TypeConstraint("X", kFloatTypes), MatmulGradKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
