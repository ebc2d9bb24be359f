// Launchers of the CUDA backend's sgd kernels, implemented in
// sgd_launchers.cu. Plain C++: included by that .cu file and by
// sgd_kernels.cc.
//
//   CUDA_RETURN_IF_ERROR(LaunchSgdDense<float, float>(param, grad, n, lr, 1.0f, stream));
//   int64_t bytes;
//   CUDA_RETURN_IF_ERROR(SgdSparseWorkspaceBytes(n, height, &bytes));
//   ... workspace: `bytes` of device memory (scratch.h) ...
//   CUDA_RETURN_IF_ERROR(LaunchSgdSparse<float>(param, value, width, lr, rows, n, height,
//                                               workspace, bytes, stream));
//
// Each launcher enqueues its kernels on `stream` and returns at once (async)
// with the launch status, never synchronising or reading device memory;
// nothing is launched when there is no element. Pointers are device memory
// of the stream's GPU. Instantiated for float and double. Thread-safe.
//
// Rounding matches the host kernels (backends/common/optimizer_kernels.h),
// whose `p -= lr * g` the host compiler contracts into one fused
// multiply-add: here too each update is fma(-lr, g, p), rounded once, and
// repeated sparse rows are applied in their order in the gradient, so
// results are bit-identical to the cpu and sim backends.
#ifndef TANDEM_BACKENDS_CUDA_SGD_LAUNCHERS_H_
#define TANDEM_BACKENDS_CUDA_SGD_LAUNCHERS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "framework/types/float16.h"

namespace tandem {
namespace cuda {

// param[i] = fma(-lr, g, param[i]), lr converted to T first, where g is
// grad[i] as T: a 16-bit G (bfloat16, float16: the gradient of a float32
// parameter in a mixed-precision step) widened exactly, then times *scale
// unless `scale` is null (gradient clipping's factor, in device memory:
// read by the kernel, never by the host), rounded once in T as the
// host kernels' block does: no scratch copy of the gradient. Instantiated
// for (float, float), (float, bfloat16), (float, float16), (double, double).
template <typename T, typename G>
cudaError_t LaunchSgdDense(T* param, const G* grad, int64_t n, float lr, const T* scale,
                           cudaStream_t stream);

// A slice of a sparse gradient's updates, grouped by table row, passed by
// value as a kernel argument (momentum and adam, optimizer_launchers.h): the
// launch copies it, so no host buffer has to outlive the call and no
// host-to-device copy is made (about 3.8 KiB, within every driver's kernel
// parameter limit). Group g updates table row rows[g] with the value rows
// positions[begin[g]] .. positions[begin[g + 1] - 1], in that order. The rows
// of one chunk are distinct; a row whose updates do not fit continues in the
// next chunk (launched after it on the same stream).
constexpr int kSgdEntriesPerLaunch = 192;
struct SgdRowChunk {
  int groups = 0;
  int64_t rows[kSgdEntriesPerLaunch];
  int32_t begin[kSgdEntriesPerLaunch + 1];
  int64_t positions[kSgdEntriesPerLaunch];
};
static_assert(sizeof(SgdRowChunk) <= 4096 - 64, "kernel arguments must stay within 4 KiB");

// The device workspace LaunchSgdSparse needs for n (0 < n < 2^31) rows of a
// table of `height` rows, in *bytes: the grouping's arrays and CUB's
// temporary storage. Synchronous; makes no allocation (CUB's size queries
// read the current device's properties, hence the status).
cudaError_t SgdSparseWorkspaceBytes(int64_t n, int64_t height, int64_t* bytes);

// The sparse update of a SelectedRows gradient, its rows grouped on the
// device: rows[0, n) (device int64, each in [0, height), checked by the
// caller) are radix-sorted with their positions (CUB, stable, only the bits
// that height needs) and one launch of n * width threads applies each
// group of equal rows, without the host waiting. Up to 4096 rows of at
// most 256 columns, one launch finds each row's positions by comparing ids
// (no sort); up to 4096 wider rows (ids below 2^32) one block sorts them
// (two launches in all); more go through CUB's device-wide sort, a
// run-length encoding and a scan. Every path applies the same order:
//   for each table row r of the gradient, each column j < width:
//     p = param[r * width + j];
//     for each position q with rows[q] == r, increasing: p = fma(-lr, value[q * width + j], p);
// `workspace` holds `workspace_bytes` (SgdSparseWorkspaceBytes) of device
// memory, in use until the enqueued work has run.
template <typename T>
cudaError_t LaunchSgdSparse(T* param, const T* value, int64_t width, float lr, const int64_t* rows,
                            int32_t n, int64_t height, void* workspace, int64_t workspace_bytes,
                            cudaStream_t stream);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_SGD_LAUNCHERS_H_
