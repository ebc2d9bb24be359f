// Row-major matrix products on cuBLAS for the CUDA backend's kernels
// (matmul, mul, fc, conv2d): float32 through Sgemm, float64 through Dgemm,
// bfloat16 and float16 through GemmEx with float32 accumulation,
// strided-batched. Tensors are row-major and cuBLAS column-major: a
// row-major C = A * B is computed as the column-major C^T = B^T * A^T, which
// reads the same memory, so A and B swap places and no data moves.
//
//   Gemm g;
//   g.m = m, g.n = n, g.k = k;
//   g.a = x->raw_data(), g.b = w->raw_data();
//   RETURN_IF_ERROR(RunGemm(ctx, g, out));   // out: m x n
//
// RunGemm enqueues the work on the context's stream (cuBLAS through
// CudaDevice::WithCublas) and returns at once. Thread-safe.
#ifndef TANDEM_BACKENDS_CUDA_GEMM_H_
#define TANDEM_BACKENDS_CUDA_GEMM_H_

#include <cstdint>

#include "absl/status/status.h"
#include "framework/kernel/kernel_context.h"
#include "framework/tensor/tensor.h"

namespace tandem {
namespace cuda {

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
  // C += the product instead of C = (bfloat16 / float16 only: fc adds its
  // bias this way, in the product's float32 sum).
  bool accumulate = false;
};

// Runs `g` into `c` (m x n, or batch x m x n without sum_batches; float32,
// float64, bfloat16 or float16, A and B of c's dtype) on the context's
// stream. The 16-bit types multiply on the tensor cores, accumulate in
// float32 and round once (cublasGemmEx, CUBLAS_COMPUTE_32F). An empty sum
// (k or batch 0) gives zeros. Summing over a batch folds it into k when A
// and B are stacked along k in memory; otherwise the products go to a
// scratch tensor and are summed with a reduction kernel.
absl::Status RunGemm(KernelContext* ctx, Gemm g, Tensor* c);
// The bytes of scratch RunGemm takes for `g` into c of `dtype` (its
// products, when it sums over a batch it cannot fold); 0 otherwise. For
// the kernels' KernelDef::Scratch.
int64_t RunGemmScratchBytes(Gemm g, DataType dtype);

// Runs `g` (not summing over the batch) into raw device memory of `dtype`:
// C[b] is the m x n matrix at c + b * stride_c elements, stride_c >= m * n.
// An empty sum (k 0) gives zeros.
absl::Status RunGemmStrided(KernelContext* ctx, const Gemm& g, DataType dtype, void* c,
                            int64_t stride_c);

// As RunGemmStrided with A and B of `dtype` and C of its compute type:
// float32 for the 16-bit types (their float32 sums kept, not rounded to 16
// bits; self_attention's scores), `dtype` otherwise.
absl::Status RunGemmStridedWide(KernelContext* ctx, const Gemm& g, DataType dtype, void* c,
                                int64_t stride_c);

// The flattened products of mul and fc (backends/common/flat_matmul.h), all
// row-major of one dtype: out [m, n] = x [m, k] * y [k, n].
absl::Status RunFlatMatmul(KernelContext* ctx, const Tensor& x, const Tensor& y, int64_t m,
                           int64_t k, int64_t n, Tensor* out);
// bfloat16 / float16 only: out [m, n] = x [m, k] * y [k, n] + bias [n] in
// one cuBLASLt product whose epilogue adds the bias to the float32 sums
// before the one rounding. *done false (nothing enqueued) where cuBLASLt
// offers no algorithm for the shapes: the caller computes it another way.
absl::Status RunFlatMatmulBias(KernelContext* ctx, const Tensor& x, const Tensor& y,
                               const Tensor& bias, int64_t m, int64_t k, int64_t n, Tensor* out,
                               bool* done);
// bfloat16 / float16 only: dy [k, n] = x^T * dout and dbias [n] = the column
// sums of dout [m, n], in one cuBLASLt product whose epilogue sums the bias
// gradient in float32 as it reads dout (one pass over dout instead of two).
// *done false (nothing enqueued) where cuBLASLt offers no algorithm.
absl::Status RunFlatWeightGradWithBiasGrad(KernelContext* ctx, const Tensor& x, const Tensor& dout,
                                           int64_t m, int64_t k, int64_t n, Tensor* dy,
                                           Tensor* dbias, bool* done);
// RunFlatMatmul's gradients from dout [m, n]: dx [m, k] = dout * y^T and dy [k, n] =
// x^T * dout, each skipped when null.
absl::Status RunFlatMatmulGrad(KernelContext* ctx, const Tensor& x, const Tensor& y,
                               const Tensor& dout, int64_t m, int64_t k, int64_t n, Tensor* dx,
                               Tensor* dy);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_GEMM_H_
