// Launchers of the CUDA backend's broadcasting kernels (elementwise_add,
// _sub, _mul, _div and the sums of their gradients, reduce_sum/mean and
// their gradients), implemented in broadcast_launchers.cu, and the geometry
// they take. Plain C++: included by that .cu file, by broadcast_plan.h
// (which computes the geometry) and by the OpKernels.
//
//   AddGeometry g = ...;   // from PlanAdd (broadcast_plan.h)
//   CUDA_RETURN_IF_ERROR(LaunchBinaryStrided<float>(BinaryOp::kSub, x, y, out, g, stream));
//
// Each call enqueues one kernel on `stream` and returns at once (async) with
// the launch status; nothing is launched when there is no output element.
// Pointers are device memory of the stream's GPU. Instantiated for float,
// double, int32_t and int64_t. Thread-safe.
#ifndef TANDEM_BACKENDS_CUDA_BROADCAST_LAUNCHERS_H_
#define TANDEM_BACKENDS_CUDA_BROADCAST_LAUNCHERS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/common/binary_op.h"

namespace tandem {
namespace cuda {

// Most dims a strided kernel handles (after merging dims that broadcast
// alike, which leaves few).
constexpr int kMaxBroadcastDims = 8;

// out (contiguous, `rank` dims) = x <op> y, where x and y are read with
// element strides, 0 along the dims they are broadcast on.
struct AddGeometry {
  int rank = 0;
  int64_t dims[kMaxBroadcastDims] = {};
  int64_t x_strides[kMaxBroadcastDims] = {};
  int64_t y_strides[kMaxBroadcastDims] = {};
};

// out = in summed over some dims. `in` is contiguous; output element j
// (row-major over keep_dims) sums in[base(j) + offset(r)] for r over the
// reduced dims, base and offset from the strides of `in`, then divided by
// `divisor` in T (a mean; 1 for a sum). No reduced element (reduce_count 0)
// gives 0.
struct ReduceGeometry {
  int keep_rank = 0;
  int64_t keep_dims[kMaxBroadcastDims] = {};
  int64_t keep_strides[kMaxBroadcastDims] = {};
  int reduce_rank = 0;
  int64_t reduce_dims[kMaxBroadcastDims] = {};
  int64_t reduce_strides[kMaxBroadcastDims] = {};
  int64_t out_count = 1;     // product of keep_dims
  int64_t reduce_count = 1;  // product of reduce_dims
  int64_t divisor = 1;
};

// `op` is the arithmetic of elementwise_add, _sub, _mul and _div, the one
// definition the host kernels use too (backends/common/binary_op.h).

// out[i] = x[i] <op> y[i], i < n. `out` may be x or y (in place).
template <typename T>
cudaError_t LaunchBinarySame(BinaryOp op, const T* x, const T* y, T* out, int64_t n,
                             cudaStream_t stream);
// A full operand and a row repeated over it (cols 1: a scalar), i < n:
// out[i] = full[i] <op> row[i % cols], or row[i % cols] <op> full[i] when
// row_is_x. `out` may be `full`.
template <typename T>
cudaError_t LaunchBinaryRow(BinaryOp op, const T* full, const T* row, bool row_is_x, T* out,
                            int64_t n, int64_t cols, cudaStream_t stream);
// The general case described by `g`.
template <typename T>
cudaError_t LaunchBinaryStrided(BinaryOp op, const T* x, const T* y, T* out, const AddGeometry& g,
                                cudaStream_t stream);
// out (contiguous, g.dims) = `in` read with g.x_strides (0 where it is
// broadcast), divided by `divisor` in T: the gradient of a sum (divisor 1)
// or a mean.
template <typename T>
cudaError_t LaunchBroadcastDivide(const T* in, T* out, const AddGeometry& g, int64_t divisor,
                                  cudaStream_t stream);
// out = sum of `in` as described by `g`. Float sums accumulate in double,
// int32 in int64; one block per output element for long sums (a tree sum in
// shared memory), one thread per output element for short ones, and for
// long column sums (the rows of a matrix summed, as for a bias gradient) a
// block per 8 columns reading whole rows of them.
template <typename T>
cudaError_t LaunchReduceSum(const T* in, T* out, const ReduceGeometry& g, cudaStream_t stream);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_BROADCAST_LAUNCHERS_H_
