// Launchers of the CUDA backend's softmax, softmax_with_cross_entropy and
// accuracy kernels, implemented in softmax_launchers.cu. Plain C++: included
// by that .cu file and by the OpKernels.
//
//   CUDA_RETURN_IF_ERROR(LaunchSoftmax<float>(x, out, AxisGeometry{outer, n, inner}, stream));
//   CUDA_RETURN_IF_ERROR(LaunchCheckLabels(labels, rows, classes, true, -100, slot, stream));
//   CUDA_RETURN_IF_ERROR(LaunchSoftmaxCrossEntropy<float>(logits, labels, rows, classes, -100,
//                                                         softmax, loss, stream));
//
// Each call enqueues its kernels on `stream` and returns at once (async)
// with the launch status; nothing is launched when there is no element.
// Pointers are device memory of the stream's GPU. Instantiated for float and
// double. Thread-safe.
//
// The math is the host kernels' (backends/common/softmax.h): the line's max
// is subtracted before exp, exps and sums run in double, the loss is
// log(sum(exp(x - max))) + max - x[label]. A line is reduced by a warp
// (short lines), a block (long lines) or one thread (lines strided by 32 or
// more, so that neighbouring threads read neighbouring memory); sums are in
// a different order than on the host, so results agree to rounding.
#ifndef TANDEM_BACKENDS_CUDA_SOFTMAX_LAUNCHERS_H_
#define TANDEM_BACKENDS_CUDA_SOFTMAX_LAUNCHERS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/check_slot.h"
#include "backends/cuda/nn_launchers.h"

namespace tandem {
namespace cuda {

// out = exp(x - max) / sum(exp(x - max)) along each line of `g`.
template <typename T>
cudaError_t LaunchSoftmax(const T* x, T* out, const AxisGeometry& g, cudaStream_t stream);

// dx = out * (dout - sum(dout * out)) along each line of `g`.
template <typename T>
cudaError_t LaunchSoftmaxGrad(const T* out, const T* dout, T* dx, const AxisGeometry& g,
                              cudaStream_t stream);

// Reports in `check` (a deferred check, deferred_checks.h) the first row
// r < rows whose label is outside [0, classes) and (with has_ignore) not
// ignore_index, and that label.
cudaError_t LaunchCheckLabels(const int64_t* labels, int64_t rows, int64_t classes, bool has_ignore,
                              int64_t ignore_index, const CheckSlot& check, cudaStream_t stream);

// Per row of `classes` > 0 logits: softmax, and loss = log(sum(exp(x -
// max))) + max - x[label], or 0 where the label is ignore_index or out of
// range (which LaunchCheckLabels reports).
template <typename T>
cudaError_t LaunchSoftmaxCrossEntropy(const T* logits, const int64_t* labels, int64_t rows,
                                      int64_t classes, int64_t ignore_index, T* softmax, T* loss,
                                      cudaStream_t stream);

// dlogits = (softmax - onehot(label)) * dloss[row], zero rows where the
// label is ignore_index (or out of range).
template <typename T>
cudaError_t LaunchSoftmaxCrossEntropyGrad(const T* softmax, const int64_t* labels, const T* dloss,
                                          int64_t rows, int64_t classes, int64_t ignore_index,
                                          T* dlogits, cudaStream_t stream);

// accuracy: a row is correct when fewer than k classes rank above its label
// (a higher score, or an equal one at a lower class index). Writes
// correct[0] (the count, summed with integer atomics: exact), total[0] =
// rows and accuracy[0] = float(double(correct) / rows), or 0 without rows.
// Rows with an out-of-range label count as wrong (LaunchCheckLabels reports
// them).
template <typename T>
cudaError_t LaunchAccuracy(const T* scores, const int64_t* labels, int64_t rows, int64_t classes,
                           int64_t k, int64_t* correct, int64_t* total, float* accuracy,
                           cudaStream_t stream);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_SOFTMAX_LAUNCHERS_H_
