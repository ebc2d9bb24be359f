// Launchers of the CUDA backend's loss kernels (square_error_cost, mean,
// l2_normalize_square_error_mean and their gradients), implemented in loss_launchers.cu. Plain C++:
// included by that .cu file and by loss_kernels.cc.
//
//   const int parts = MeanPartCount(n);
//   ... a device buffer of `parts` doubles, a zeroed device counter ...
//   CUDA_RETURN_IF_ERROR(LaunchMean<float>(x, n, partials, parts, blocks_done, out, stream));
//
// Each call enqueues its kernels on `stream` and returns at once (async)
// with the launch status; nothing is launched when there is no element.
// Pointers are device memory of the stream's GPU. Instantiated for float and
// double. Thread-safe.
#ifndef TANDEM_BACKENDS_CUDA_LOSS_LAUNCHERS_H_
#define TANDEM_BACKENDS_CUDA_LOSS_LAUNCHERS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace tandem {
namespace cuda {

// out[i] = (x[i] - y[i])^2, in T.
template <typename T>
cudaError_t LaunchSquareErrorCost(const T* x, const T* y, T* out, int64_t n, cudaStream_t stream);

// dx[i] = 2 (x[i] - y[i]) dout[i] and dy[i] = -dx[i], in T; either output
// may be null (not computed).
template <typename T>
cudaError_t LaunchSquareErrorCostGrad(const T* x, const T* y, const T* dout, T* dx, T* dy,
                                      int64_t n, cudaStream_t stream);

// The number of partial sums (blocks) LaunchMean uses for n elements:
// between 1 and 1024.
int MeanPartCount(int64_t n);

// out[0] = (sum of x[0..n)) / n, summed in double in one launch: block b
// writes partials[b] (parts = MeanPartCount(n) doubles); the last block to
// finish, counted in *blocks_done (0 before the launch, left 0 after it, so
// a kernel object can keep it), sums the partials in a fixed order
// (deterministic).
template <typename T>
cudaError_t LaunchMean(const T* x, int64_t n, double* partials, int parts,
                       unsigned int* blocks_done, T* out, cudaStream_t stream);

// dx[i] = dout[0] / n (computed once in double, then converted to T).
template <typename T>
cudaError_t LaunchMeanGrad(const T* dout, T* dx, int64_t n, cudaStream_t stream);

// l2_normalize_square_error_mean over the outer * inner lines of n elements
// of x viewed as [outer, n, inner] (the normalised axis in the middle):
// line_sums[line] = the sum over its elements of (y - label)^2 rounded to T,
// y = x / sqrt(sum(x^2 over the line, in double) + epsilon) rounded to T,
// then out[0] = the line sums' total / (lines * n), in T: the host kernels'
// arithmetic (backends/common/l2_normalize.h) with the sums in another
// order (each line reduced by a warp, device_lines.h, then one block adds
// the line sums; the same order on every run). line_sums: outer * inner
// doubles.
template <typename T>
cudaError_t LaunchL2NormalizeSquareErrorMean(const T* x, const T* label, int64_t outer, int64_t n,
                                             int64_t inner, double epsilon, double* line_sums,
                                             T* out, cudaStream_t stream);

// Its gradient for dout[0] (device memory): dcost = dout / (lines * n) in
// T, dy = 2 (y - label) dcost in T, dx = (dy - y * sum(dy * y over the
// line)) / norm and dlabel = -dy; either output may be null. A warp per
// line (device_lines.h).
template <typename T>
cudaError_t LaunchL2NormalizeSquareErrorMeanGrad(const T* x, const T* label, int64_t outer,
                                                 int64_t n, int64_t inner, double epsilon,
                                                 const T* dout, T* dx, T* dlabel,
                                                 cudaStream_t stream);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_LOSS_LAUNCHERS_H_
