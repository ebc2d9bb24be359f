// Launchers of the CUDA backend's nn kernels (lookup_table and its gradient,
// l2_normalize and its gradient), implemented in nn_launchers.cu. Plain C++:
// included by that .cu file and by nn_kernels.cc.
//
//   CUDA_RETURN_IF_ERROR(LaunchLookup<float>(ids, n, w, rows, dim, padding_row, out,
//                                            check_slot, stream));
//
// Each call enqueues its kernels on `stream` and returns at once (async)
// with the launch status; nothing is launched when there is no element to
// write. Pointers are device memory of the stream's GPU. Instantiated for
// float and double. Thread-safe.
#ifndef TANDEM_BACKENDS_CUDA_NN_LAUNCHERS_H_
#define TANDEM_BACKENDS_CUDA_NN_LAUNCHERS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/check_slot.h"

namespace tandem {
namespace cuda {

// out[p, j] = w[ids[p], j] for p < n, j < dim, or 0 when ids[p] ==
// padding_row (-1: none). An id outside [0, rows) writes 0 and is noted in
// `check` (an armed slot, deferred_checks.h): the kernel reports the first
// bad position and its id there. No trap: the GPU stays usable.
template <typename T>
cudaError_t LaunchLookup(const int64_t* ids, int64_t n, const T* w, int64_t rows, int64_t dim,
                         int64_t padding_row, T* out, const CheckSlot& check, cudaStream_t stream);

// Only the id check of LaunchLookup, for a table with no columns (dim 0),
// where there is nothing to copy but bad ids are still an error.
cudaError_t LaunchCheckIds(const int64_t* ids, int64_t n, int64_t rows, const CheckSlot& check,
                           cudaStream_t stream);

// The dense gradient of lookup_table, deterministic: for each segment s <
// segments, dw[rows[s], j] = the sum, in order, of dout[order[k], j] for k in
// [starts[s], starts[s + 1]). The caller groups the positions by id
// (ascending positions within an id; padding positions left out), so each
// row is summed in position order, as the host kernels do; rows with no
// segment are not written (zero `dw` first). All pointers are on the device.
template <typename T>
cudaError_t LaunchLookupGradDense(const int64_t* order, const int64_t* starts, const int64_t* rows,
                                  int64_t segments, const T* dout, int64_t dim, T* dw,
                                  cudaStream_t stream);

// value[p, j] = ids[p] == padding_row ? 0 : dout[p, j]: the value of a
// sparse gradient with a padding row (ids already checked on the host).
template <typename T>
cudaError_t LaunchLookupGradSparseValue(const int64_t* ids, int64_t n, const T* dout, int64_t dim,
                                        int64_t padding_row, T* value, cudaStream_t stream);

// A tensor viewed as [outer, n, inner] around the normalized axis: row
// (o, i) is the n elements at (o * n + k) * inner + i, k < n.
struct AxisGeometry {
  int64_t outer = 1;
  int64_t n = 1;
  int64_t inner = 1;
};

// out = x / sqrt(sum(x^2 over the row) + epsilon), per row; sums in double.
template <typename T>
cudaError_t LaunchL2Normalize(const T* x, T* out, const AxisGeometry& g, double epsilon,
                              cudaStream_t stream);

// dx = (dout - out * sum(dout * out over the row)) / sqrt(sum(x^2) + epsilon),
// per row; sums in double.
template <typename T>
cudaError_t LaunchL2NormalizeGrad(const T* x, const T* out, const T* dout, T* dx,
                                  const AxisGeometry& g, double epsilon, cudaStream_t stream);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_NN_LAUNCHERS_H_
