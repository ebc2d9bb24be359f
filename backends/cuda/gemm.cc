#include "backends/cuda/gemm.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <type_traits>

#include "absl/strings/str_cat.h"
#include "backends/cuda/broadcast_launchers.h"
#include "backends/cuda/broadcast_plan.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/kernel_util.h"
#include "backends/cuda/scratch.h"
#include "framework/base/status_macros.h"

namespace tandem {
namespace cuda {
namespace {

template <typename T>
cublasStatus_t GemmStridedBatched(cublasHandle_t h, const Gemm& g, T* c, int64_t stride_c) {
  const T alpha = static_cast<T>(g.alpha), beta = 0;
  const cublasOperation_t op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int64_t lda = g.trans_a ? g.m : g.k;
  const int64_t ldb = g.trans_b ? g.k : g.n;
  const T* a = static_cast<const T*>(g.a);
  const T* b = static_cast<const T*>(g.b);
  // Column-major: C^T (n x m) = op(B)^T (n x k) * op(A)^T (k x m). One
  // product goes through the plain gemm, as torch.mm does: cuBLAS's
  // heuristics may choose other kernels for a strided batch of one.
  if (g.batch == 1) {
    if constexpr (std::is_same_v<T, float>) {
      return cublasSgemm_64(h, op_b, op_a, g.n, g.m, g.k, &alpha, b, ldb, a, lda, &beta, c, g.n);
    } else {
      return cublasDgemm_64(h, op_b, op_a, g.n, g.m, g.k, &alpha, b, ldb, a, lda, &beta, c, g.n);
    }
  }
  if constexpr (std::is_same_v<T, float>) {
    return cublasSgemmStridedBatched_64(h, op_b, op_a, g.n, g.m, g.k, &alpha, b, ldb, g.stride_b, a,
                                        lda, g.stride_a, &beta, c, g.n, stride_c, g.batch);
  } else {
    return cublasDgemmStridedBatched_64(h, op_b, op_a, g.n, g.m, g.k, &alpha, b, ldb, g.stride_b, a,
                                        lda, g.stride_a, &beta, c, g.n, stride_c, g.batch);
  }
}

// A sum over the batch of A and B stacked along k in memory as one product:
// sum_b A[b]^T B[b] == [A[0]; A[1]; ...]^T [B[0]; B[1]; ...].
Gemm FoldBatchSum(Gemm g) {
  if (g.sum_batches && g.batch > 1 && g.trans_a && !g.trans_b && g.stride_a == g.k * g.m &&
      g.stride_b == g.k * g.n) {
    g.k *= g.batch;
    g.batch = 1;
  }
  return g;
}

// Whether the products of `g` (folded) go to scratch to be summed.
bool SumsProducts(const Gemm& g) { return g.sum_batches && g.batch > 1; }

template <typename T>
absl::Status RunGemmOf(KernelContext* ctx, Gemm g, Tensor* c) {
  const cudaStream_t stream = CudaStreamOf(ctx->stream());
  if (c->NumElements() == 0) return absl::OkStatus();
  if (g.k == 0 || g.batch == 0) {  // empty sums
    CUDA_RETURN_IF_ERROR(cudaMemsetAsync(c->raw_data(), 0, c->NumBytes(), stream));
    return absl::OkStatus();
  }
  g = FoldBatchSum(g);
  CudaDevice* device = CudaDeviceOf(ctx->device());
  if (!SumsProducts(g)) {
    return device->WithCublas(ctx->stream(), [&](cublasHandle_t h) -> absl::Status {
      CUBLAS_RETURN_IF_ERROR(GemmStridedBatched<T>(h, g, c->data<T>(), g.m * g.n));
      return absl::OkStatus();
    });
  }
  const Shape products_shape({g.batch, g.m * g.n});
  ASSIGN_OR_RETURN(Tensor products,
                   AllocateScratch(ctx, c->dtype(), products_shape, "the sum over the batch"));
  RETURN_IF_ERROR(device->WithCublas(ctx->stream(), [&](cublasHandle_t h) -> absl::Status {
    CUBLAS_RETURN_IF_ERROR(GemmStridedBatched<T>(h, g, products.data<T>(), g.m * g.n));
    return absl::OkStatus();
  }));
  ASSIGN_OR_RETURN(ReduceGeometry sum,
                   PlanReduceTo(ctx->op().type, products_shape, Shape({g.m * g.n})));
  CUDA_RETURN_IF_ERROR(LaunchReduceSum<T>(products.data<T>(), c->data<T>(), sum, stream));
  return absl::OkStatus();
}

}  // namespace

int64_t RunGemmScratchBytes(Gemm g, DataType dtype) {
  if (g.m * g.n == 0 || g.k == 0 || g.batch == 0) return 0;
  g = FoldBatchSum(g);
  return SumsProducts(g) ? g.batch * g.m * g.n * static_cast<int64_t>(SizeOf(dtype)) : 0;
}

absl::Status RunGemm(KernelContext* ctx, Gemm g, Tensor* c) {
  return DispatchFloat(
      c->dtype(), [&](auto tag) { return RunGemmOf<typename decltype(tag)::type>(ctx, g, c); });
}

absl::Status RunGemmStrided(KernelContext* ctx, const Gemm& g, DataType dtype, void* c,
                            int64_t stride_c) {
  if (g.sum_batches) {
    return absl::InternalError(
        absl::StrCat("op '", ctx->op().type, "': RunGemmStrided cannot sum over the batch"));
  }
  if (g.m * g.n == 0 || g.batch == 0) return absl::OkStatus();
  if (g.k == 0) {  // empty sums
    const size_t row = static_cast<size_t>(g.m * g.n) * SizeOf(dtype);
    CUDA_RETURN_IF_ERROR(cudaMemset2DAsync(c, stride_c * SizeOf(dtype), 0, row, g.batch,
                                           CudaStreamOf(ctx->stream())));
    return absl::OkStatus();
  }
  return DispatchFloat(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return CudaDeviceOf(ctx->device())
        ->WithCublas(ctx->stream(), [&](cublasHandle_t h) -> absl::Status {
          CUBLAS_RETURN_IF_ERROR(GemmStridedBatched<T>(h, g, static_cast<T*>(c), stride_c));
          return absl::OkStatus();
        });
  });
}

absl::Status RunFlatMatmul(KernelContext* ctx, const Tensor& x, const Tensor& y, int64_t m,
                           int64_t k, int64_t n, Tensor* out) {
  Gemm g;
  g.m = m, g.n = n, g.k = k;
  g.a = x.raw_data();
  g.b = y.raw_data();
  return RunGemm(ctx, g, out);
}

absl::Status RunFlatMatmulGrad(KernelContext* ctx, const Tensor& x, const Tensor& y,
                               const Tensor& dout, int64_t m, int64_t k, int64_t n, Tensor* dx,
                               Tensor* dy) {
  if (dx != nullptr) {  // [m, k] = [m, n] * [k, n]^T
    Gemm g;
    g.m = m, g.n = k, g.k = n;
    g.a = dout.raw_data();
    g.b = y.raw_data(), g.trans_b = true;
    RETURN_IF_ERROR(RunGemm(ctx, g, dx));
  }
  if (dy != nullptr) {  // [k, n] = [m, k]^T * [m, n]
    Gemm g;
    g.m = k, g.n = n, g.k = m;
    g.a = x.raw_data(), g.trans_a = true;
    g.b = dout.raw_data();
    RETURN_IF_ERROR(RunGemm(ctx, g, dy));
  }
  return absl::OkStatus();
}

}  // namespace cuda
}  // namespace tandem
