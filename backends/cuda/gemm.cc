#include "backends/cuda/gemm.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "backends/cuda/broadcast_launchers.h"
#include "backends/cuda/broadcast_plan.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_device_guard.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/elementwise_launchers.h"
#include "backends/cuda/kernel_util.h"
#include "backends/cuda/scratch.h"
#include "framework/base/status_macros.h"

namespace tandem {
namespace cuda {
namespace {

// cuBLAS's name of a 16-bit type, or of float32 (the products' scratch).
template <typename T>
constexpr cudaDataType_t CudaDataType() {
  if constexpr (std::is_same_v<T, bfloat16>) return CUDA_R_16BF;
  if constexpr (std::is_same_v<T, float16>) return CUDA_R_16F;
  return CUDA_R_32F;
}

// As GemmStridedBatched below for 16-bit A and B, into C of type `C` (T,
// or float for products summed afterwards): tensor cores, float32 sums.
template <typename T, typename C>
cublasStatus_t GemmStridedBatchedEx(cublasHandle_t h, const Gemm& g, C* c, int64_t stride_c) {
  const float alpha = static_cast<float>(g.alpha), beta = g.accumulate ? 1.0f : 0.0f;
  const cublasOperation_t op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int64_t lda = g.trans_a ? g.m : g.k;
  const int64_t ldb = g.trans_b ? g.k : g.n;
  constexpr cudaDataType_t ab = CudaDataType<T>(), ct = CudaDataType<C>();
  if (g.batch == 1) {
    return cublasGemmEx_64(h, op_b, op_a, g.n, g.m, g.k, &alpha, g.b, ab, ldb, g.a, ab, lda, &beta,
                           c, ct, g.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  }
  return cublasGemmStridedBatchedEx_64(h, op_b, op_a, g.n, g.m, g.k, &alpha, g.b, ab, ldb,
                                       g.stride_b, g.a, ab, lda, g.stride_a, &beta, c, ct, g.n,
                                       stride_c, g.batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

template <typename T>
cublasStatus_t GemmStridedBatched(cublasHandle_t h, const Gemm& g, T* c, int64_t stride_c) {
  if constexpr (kIsLowPrecisionFloat<T>) {
    return GemmStridedBatchedEx<T, T>(h, g, c, stride_c);
  } else {
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
      return cublasSgemmStridedBatched_64(h, op_b, op_a, g.n, g.m, g.k, &alpha, b, ldb, g.stride_b,
                                          a, lda, g.stride_a, &beta, c, g.n, stride_c, g.batch);
    } else {
      return cublasDgemmStridedBatched_64(h, op_b, op_a, g.n, g.m, g.k, &alpha, b, ldb, g.stride_b,
                                          a, lda, g.stride_a, &beta, c, g.n, stride_c, g.batch);
    }
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

// A 16-bit sum over the batch: the products in float32, summed in float32,
// then rounded once into `c`.
template <typename T>
absl::Status SumProductsIn32Bit(KernelContext* ctx, const Gemm& g, Tensor* c) {
  const cudaStream_t stream = CudaStreamOf(ctx->stream());
  const Shape products_shape({g.batch, g.m * g.n});
  ASSIGN_OR_RETURN(Tensor products,
                   AllocateScratch(ctx, DataType::kFloat32, products_shape,
                                   "the float32 products of a sum over the batch"));
  ASSIGN_OR_RETURN(Tensor sum, AllocateScratch(ctx, DataType::kFloat32, Shape({g.m * g.n}),
                                               "the float32 sum over the batch"));
  RETURN_IF_ERROR(
      CudaDeviceOf(ctx->device())->WithCublas(ctx->stream(), [&](cublasHandle_t h) -> absl::Status {
        CUBLAS_RETURN_IF_ERROR(
            (GemmStridedBatchedEx<T, float>(h, g, products.data<float>(), g.m * g.n)));
        return absl::OkStatus();
      }));
  ASSIGN_OR_RETURN(ReduceGeometry geometry,
                   PlanReduceTo(ctx->op().type, products_shape, Shape({g.m * g.n})));
  CUDA_RETURN_IF_ERROR(
      LaunchReduceSum<float>(products.data<float>(), sum.data<float>(), geometry, stream));
  CUDA_RETURN_IF_ERROR((LaunchCast<float, T>(sum.data<float>(), c->data<T>(), g.m * g.n, stream)));
  return absl::OkStatus();
}

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
  if constexpr (kIsLowPrecisionFloat<T>) {
    return SumProductsIn32Bit<T>(ctx, g, c);
  } else {
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
}

}  // namespace

int64_t RunGemmScratchBytes(Gemm g, DataType dtype) {
  if (g.m * g.n == 0 || g.k == 0 || g.batch == 0) return 0;
  g = FoldBatchSum(g);
  if (!SumsProducts(g)) return 0;
  // 16-bit: float32 products and their float32 sum (SumProductsIn32Bit).
  return IsLowPrecisionFloat(dtype) ? (g.batch + 1) * g.m * g.n * int64_t{4}
                                    : g.batch * g.m * g.n * static_cast<int64_t>(SizeOf(dtype));
}

absl::Status RunGemm(KernelContext* ctx, Gemm g, Tensor* c) {
  return DispatchFloatWith16Bit(
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
  return DispatchFloatWith16Bit(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return CudaDeviceOf(ctx->device())
        ->WithCublas(ctx->stream(), [&](cublasHandle_t h) -> absl::Status {
          CUBLAS_RETURN_IF_ERROR(GemmStridedBatched<T>(h, g, static_cast<T*>(c), stride_c));
          return absl::OkStatus();
        });
  });
}

absl::Status RunGemmStridedWide(KernelContext* ctx, const Gemm& g, DataType dtype, void* c,
                                int64_t stride_c) {
  if (!IsLowPrecisionFloat(dtype)) return RunGemmStrided(ctx, g, dtype, c, stride_c);
  if (g.sum_batches || g.k == 0) {
    return absl::InternalError(absl::StrCat(
        "op '", ctx->op().type, "': RunGemmStridedWide needs k > 0 and no sum over the batch"));
  }
  if (g.m * g.n == 0 || g.batch == 0) return absl::OkStatus();
  return Dispatch16BitFloat(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return CudaDeviceOf(ctx->device())
        ->WithCublas(ctx->stream(), [&](cublasHandle_t h) -> absl::Status {
          CUBLAS_RETURN_IF_ERROR(
              (GemmStridedBatchedEx<T, float>(h, g, static_cast<float*>(c), stride_c)));
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

namespace {

// The current device's cuBLASLt handle, made on first use (the stream is
// given per product, so one handle serves every stream). Thread-safe.
absl::StatusOr<cublasLtHandle_t> LtHandle() {
  static std::mutex* mu = new std::mutex;
  static auto* handles = new std::map<int, cublasLtHandle_t>;
  int device = 0;
  CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(*mu);
  auto it = handles->find(device);
  if (it != handles->end()) return it->second;
  cublasLtHandle_t handle = nullptr;
  CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&handle));
  handles->emplace(device, handle);
  return handle;
}

// The descriptors of one cuBLASLt product, destroyed with it.
struct LtProduct {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  ~LtProduct() {
    if (preference != nullptr) cublasLtMatmulPreferenceDestroy(preference);
    if (d != nullptr) cublasLtMatrixLayoutDestroy(d);
    if (b != nullptr) cublasLtMatrixLayoutDestroy(b);
    if (a != nullptr) cublasLtMatrixLayoutDestroy(a);
    if (op != nullptr) cublasLtMatmulDescDestroy(op);
  }
};

// One cuBLASLt product of 16-bit matrices with an epilogue, column-major:
// D (d_rows x d_cols) = op(A) * op(B), A and B stored a_rows x a_cols and
// b_rows x b_cols (packed), transposed when trans_a / trans_b. `vector` is
// the epilogue's bias (read) or bias gradient (written), of D's type.
struct LtCall {
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* a = nullptr;
  int64_t a_rows = 0, a_cols = 0;
  bool trans_a = false;
  const void* b = nullptr;
  int64_t b_rows = 0, b_cols = 0;
  bool trans_b = false;
  void* d = nullptr;
  int64_t d_rows = 0, d_cols = 0;
  const void* vector = nullptr;
};

// Enqueues `call` on the context's stream with the algorithm cuBLASLt's
// heuristics rank first, with no workspace (capturable in a graph, no
// scratch to hold). *done false (nothing enqueued) where they offer none.
absl::Status RunLt(KernelContext* ctx, DataType dtype, const LtCall& call, bool* done) {
  *done = false;
  const cudaDataType_t type = dtype == DataType::kBFloat16 ? CUDA_R_16BF : CUDA_R_16F;
  CudaDeviceGuard guard(ctx->device()->place().index());
  ASSIGN_OR_RETURN(const cublasLtHandle_t handle, LtHandle());
  LtProduct p;
  CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t op_a = call.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = call.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
  CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
  CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                        &call.epilogue, sizeof(call.epilogue)));
  CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                        &call.vector, sizeof(call.vector)));
  CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                        &type, sizeof(type)));
  CUBLAS_RETURN_IF_ERROR(
      cublasLtMatrixLayoutCreate(&p.a, type, call.a_rows, call.a_cols, call.a_rows));
  CUBLAS_RETURN_IF_ERROR(
      cublasLtMatrixLayoutCreate(&p.b, type, call.b_rows, call.b_cols, call.b_rows));
  CUBLAS_RETURN_IF_ERROR(
      cublasLtMatrixLayoutCreate(&p.d, type, call.d_rows, call.d_cols, call.d_rows));
  CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&p.preference));
  const size_t no_workspace = 0;
  CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(
      p.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &no_workspace, sizeof(no_workspace)));
  cublasLtMatmulHeuristicResult_t result = {};
  int found = 0;
  const cublasStatus_t heuristic = cublasLtMatmulAlgoGetHeuristic(handle, p.op, p.a, p.b, p.d, p.d,
                                                                  p.preference, 1, &result, &found);
  // An epilogue this cuBLASLt cannot apply to these layouts is reported as
  // NOT_SUPPORTED (or no algorithm): the caller takes its unfused path.
  if (heuristic == CUBLAS_STATUS_NOT_SUPPORTED ||
      (heuristic == CUBLAS_STATUS_SUCCESS && found == 0)) {
    return absl::OkStatus();
  }
  CUBLAS_RETURN_IF_ERROR(heuristic);
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS_RETURN_IF_ERROR(cublasLtMatmul(handle, p.op, &alpha, call.a, p.a, call.b, p.b, &beta,
                                        call.d, p.d, call.d, p.d, &result.algo, nullptr, 0,
                                        CudaStreamOf(ctx->stream())));
  *done = true;
  return absl::OkStatus();
}

}  // namespace

absl::Status RunFlatMatmulBias(KernelContext* ctx, const Tensor& x, const Tensor& y,
                               const Tensor& bias, int64_t m, int64_t k, int64_t n, Tensor* out,
                               bool* done) {
  *done = false;
  if (!IsLowPrecisionFloat(x.dtype())) return absl::OkStatus();
  // Column-major, as RunGemm: D^T [n, m] = Y^T [n, k] * X^T [k, m] + bias
  // along D^T's rows.
  LtCall call;
  call.epilogue = CUBLASLT_EPILOGUE_BIAS;
  call.a = y.raw_data(), call.a_rows = n, call.a_cols = k;
  call.b = x.raw_data(), call.b_rows = k, call.b_cols = m;
  call.d = out->raw_data(), call.d_rows = n, call.d_cols = m;
  call.vector = bias.raw_data();
  return RunLt(ctx, x.dtype(), call, done);
}

absl::Status RunFlatWeightGradWithBiasGrad(KernelContext* ctx, const Tensor& x, const Tensor& dout,
                                           int64_t m, int64_t k, int64_t n, Tensor* dy,
                                           Tensor* dbias, bool* done) {
  *done = false;
  if (!IsLowPrecisionFloat(x.dtype()) || m == 0 || k == 0 || n == 0) return absl::OkStatus();
  // Column-major: D [n, k] (dy, row-major [k, n]) = dout^T [n, m] * X [m, k]
  // (X stored k x m, transposed); the epilogue sums A = dout^T over the
  // product's k (dout's m rows) into dbias [n], in float32, rounded once.
  LtCall call;
  call.epilogue = CUBLASLT_EPILOGUE_BGRADA;
  call.a = dout.raw_data(), call.a_rows = n, call.a_cols = m;
  call.b = x.raw_data(), call.b_rows = k, call.b_cols = m, call.trans_b = true;
  call.d = dy->raw_data(), call.d_rows = n, call.d_cols = k;
  call.vector = dbias->raw_data();
  return RunLt(ctx, x.dtype(), call, done);
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
