// Launchers of the CUDA backend's sgd kernels, implemented in
// sgd_launchers.cu. Plain C++: included by that .cu file and by
// sgd_kernels.cc.
//
//   CUDA_RETURN_IF_ERROR(LaunchSgdDense<float>(param, grad, n, lr, stream));
//   SgdRowGroups groups = ...;  // a sparse gradient's rows grouped (row_groups.h), on the device
//   CUDA_RETURN_IF_ERROR(LaunchSgdRowGroups<float>(param, value, width, lr, groups, stream));
//
// Each call enqueues one kernel on `stream` and returns at once (async) with
// the launch status; nothing is launched when there is no element. Pointers
// are device memory of the stream's GPU. Instantiated for float and double.
// Thread-safe.
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

namespace tandem {
namespace cuda {

// param[i] = fma(-lr, grad[i], param[i]), lr converted to T first.
template <typename T>
cudaError_t LaunchSgdDense(T* param, const T* grad, int64_t n, float lr, cudaStream_t stream);

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

// All of a sparse gradient's updates grouped by table row (RowGrouper,
// row_groups.h), in device memory: group g < groups updates table row
// rows[g] with the value rows head[g], next[head[g]], ... (increasing, -1
// ends).
struct SgdRowGroups {
  int64_t groups = 0;
  const int64_t* rows = nullptr;
  const int32_t* head = nullptr;
  const int32_t* next = nullptr;
};

// One launch, one thread per (group, column j < width):
//   p = param[rows[g] * width + j];
//   for each position q of the group, in order: p = fma(-lr, value[q * width + j], p);
// Rows and positions must be valid (checked on the host).
template <typename T>
cudaError_t LaunchSgdRowGroups(T* param, const T* value, int64_t width, float lr,
                               const SgdRowGroups& groups, cudaStream_t stream);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_SGD_LAUNCHERS_H_
