// Launchers of the CUDA backend's conv2d data movement (im2col and its
// inverse), implemented in conv_launchers.cu; the products run on cuBLAS
// (layer_kernels.cc). Plain C++: included by that .cu file and by
// layer_kernels.cc.
//
//   CUDA_RETURN_IF_ERROR(LaunchIm2Col<float>(shape, samples, x, col, stream));
//   ... col [samples, C * KH * KW, OH * OW] times the filter ...
//   CUDA_RETURN_IF_ERROR(LaunchCol2Im<float>(shape, samples, dcol, dx, stream));
//
// Each call enqueues one kernel on `stream` and returns at once (async)
// with the launch status; nothing is launched when there is no element.
// Pointers are device memory of the stream's GPU, NCHW. Instantiated for
// float and double. Thread-safe.
#ifndef TANDEM_BACKENDS_CUDA_CONV_LAUNCHERS_H_
#define TANDEM_BACKENDS_CUDA_CONV_LAUNCHERS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace tandem {
namespace cuda {

// One sample's geometry: input [c, h, w], filter taps kh x kw, output
// planes oh x ow.
struct ConvShape {
  int64_t c = 0, h = 0, w = 0;
  int64_t kh = 1, kw = 1, oh = 0, ow = 0;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
};

// For each of `samples` samples (x [samples, c, h, w]): col [c * kh * kw,
// oh * ow] with col[(ch * kh + i) * kw + j, oy * ow + ox] = x[ch, oy *
// stride_h - pad_h + i * dilation_h, ox * stride_w - pad_w + j *
// dilation_w], 0 outside the plane (so a group's rows are contiguous).
template <typename T>
cudaError_t LaunchIm2Col(const ConvShape& s, int64_t samples, const T* x, T* col,
                         cudaStream_t stream);

// The inverse gather: dx[ch, y, x] = the sum of the col entries Im2Col read
// from (ch, y, x), in (i, j) row-major tap order (the host's order, so the
// sums round alike); no atomics.
template <typename T>
cudaError_t LaunchCol2Im(const ConvShape& s, int64_t samples, const T* col, T* dx,
                         cudaStream_t stream);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_CONV_LAUNCHERS_H_
