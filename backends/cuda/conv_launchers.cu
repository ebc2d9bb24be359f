// im2col and col2im kernels of conv2d. See conv_launchers.h.
#include "backends/cuda/conv_launchers.h"
#include "backends/cuda/device_float16.h"
#include "backends/cuda/device_reduce.h"

namespace tandem {
namespace cuda {
namespace {

using device::Blocks;
using device::kThreads;

template <typename T>
__global__ void Im2ColKernel(ConvShape s, const T* x, T* col, int64_t total) {
  const int64_t p = s.oh * s.ow, rows = s.c * s.kh * s.kw;
  TANDEM_GRID_LOOP(e, total) {
    const int64_t sample = e / (rows * p);
    const int64_t rest = e - sample * rows * p;
    const int64_t row = rest / p, at = rest - row * p;
    const int64_t ch = row / (s.kh * s.kw), tap = row - ch * s.kh * s.kw;
    const int64_t i = tap / s.kw, j = tap - i * s.kw;
    const int64_t oy = at / s.ow, ox = at - oy * s.ow;
    const int64_t iy = oy * s.stride_h - s.pad_h + i * s.dilation_h;
    const int64_t ix = ox * s.stride_w - s.pad_w + j * s.dilation_w;
    col[e] = iy >= 0 && iy < s.h && ix >= 0 && ix < s.w
                 ? x[((sample * s.c + ch) * s.h + iy) * s.w + ix]
                 : device::Narrow<T>(device::ComputeOf<T>(0));
  }
}

// The output position whose tap `k` (stride, pad, dilation along one dim)
// reads input position `in`, or -1.
__device__ __forceinline__ int64_t TapSource(int64_t in, int64_t k, int64_t stride, int64_t pad,
                                             int64_t dilation, int64_t outs) {
  const int64_t t = in + pad - k * dilation;
  if (t < 0 || t % stride != 0) return -1;
  const int64_t o = t / stride;
  return o < outs ? o : -1;
}

template <typename T>
__global__ void Col2ImKernel(ConvShape s, const T* col, T* dx, int64_t total) {
  const int64_t p = s.oh * s.ow, rows = s.c * s.kh * s.kw;
  TANDEM_GRID_LOOP(e, total) {
    const int64_t plane = e / (s.h * s.w);  // sample * c + ch
    const int64_t rest = e - plane * s.h * s.w;
    const int64_t y = rest / s.w, x = rest - y * s.w;
    const int64_t sample = plane / s.c, ch = plane - sample * s.c;
    const T* c = col + sample * rows * p;
    T acc = T(0);
    for (int64_t i = 0; i < s.kh; ++i) {
      const int64_t oy = TapSource(y, i, s.stride_h, s.pad_h, s.dilation_h, s.oh);
      if (oy < 0) continue;
      for (int64_t j = 0; j < s.kw; ++j) {
        const int64_t ox = TapSource(x, j, s.stride_w, s.pad_w, s.dilation_w, s.ow);
        if (ox < 0) continue;
        acc += c[((ch * s.kh + i) * s.kw + j) * p + oy * s.ow + ox];
      }
    }
    dx[e] = acc;
  }
}

}  // namespace

template <typename T>
cudaError_t LaunchIm2Col(const ConvShape& s, int64_t samples, const T* x, T* col,
                         cudaStream_t stream) {
  const int64_t total = samples * s.c * s.kh * s.kw * s.oh * s.ow;
  if (total == 0) return cudaSuccess;
  Im2ColKernel<T><<<Blocks(total), kThreads, 0, stream>>>(s, x, col, total);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchCol2Im(const ConvShape& s, int64_t samples, const T* col, T* dx,
                         cudaStream_t stream) {
  const int64_t total = samples * s.c * s.h * s.w;
  if (total == 0) return cudaSuccess;
  Col2ImKernel<T><<<Blocks(total), kThreads, 0, stream>>>(s, col, dx, total);
  return cudaGetLastError();
}

#define TANDEM_INSTANTIATE(T)                                                                  \
  template cudaError_t LaunchIm2Col<T>(const ConvShape&, int64_t, const T*, T*, cudaStream_t); \
  template cudaError_t LaunchCol2Im<T>(const ConvShape&, int64_t, const T*, T*, cudaStream_t);
TANDEM_INSTANTIATE(float)
TANDEM_INSTANTIATE(double)
#undef TANDEM_INSTANTIATE
// conv2d's 16-bit forward gathers 16-bit columns (its gradient runs in float32).
template cudaError_t LaunchIm2Col<bfloat16>(const ConvShape&, int64_t, const bfloat16*, bfloat16*,
                                            cudaStream_t);
template cudaError_t LaunchIm2Col<float16>(const ConvShape&, int64_t, const float16*, float16*,
                                           cudaStream_t);

}  // namespace cuda
}  // namespace tandem
