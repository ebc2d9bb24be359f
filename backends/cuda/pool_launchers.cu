// pool2d kernels. See pool_launchers.h.
#include "backends/cuda/device_reduce.h"
#include "backends/cuda/pool_launchers.h"

namespace tandem {
namespace cuda {
namespace {

using device::Blocks;
using device::kThreads;

// The window of output (oy, ox), clipped to the plane.
struct Window {
  int64_t y0, y1, x0, x1;
};

__device__ __forceinline__ Window WindowAt(const PoolWindows& p, int64_t oy, int64_t ox) {
  const int64_t y = oy * p.stride_h - p.pad_h, x = ox * p.stride_w - p.pad_w;
  return {y > 0 ? y : 0, y + p.kh < p.h ? y + p.kh : p.h, x > 0 ? x : 0,
          x + p.kw < p.w ? x + p.kw : p.w};
}

__device__ __forceinline__ int64_t Divisor(const PoolWindows& p, const Window& w) {
  return p.exclusive ? (w.y1 - w.y0) * (w.x1 - w.x0) : p.kh * p.kw;
}

// The outputs along one dim whose windows cover input position i: o with
// o * stride - pad <= i < o * stride - pad + k, within [0, outs).
__device__ __forceinline__ void Covering(int64_t i, int64_t k, int64_t stride, int64_t pad,
                                         int64_t outs, int64_t* first, int64_t* last) {
  const int64_t hi = i + pad;     // o * stride <= hi
  const int64_t lo = hi - k + 1;  // o * stride >= lo
  *first = lo <= 0 ? 0 : (lo + stride - 1) / stride;
  const int64_t l = hi / stride;
  *last = l < outs - 1 ? l : outs - 1;
}

template <typename T>
__global__ void PoolKernel(PoolWindows p, const T* x, T* out, int64_t total) {
  TANDEM_GRID_LOOP(i, total) {
    const int64_t plane = i / (p.oh * p.ow), rest = i - plane * p.oh * p.ow;
    const int64_t oy = rest / p.ow, ox = rest - oy * p.ow;
    const T* in = x + plane * p.h * p.w;
    const Window w = WindowAt(p, oy, ox);
    if (p.max) {
      T m = in[w.y0 * p.w + w.x0];
      for (int64_t y = w.y0; y < w.y1; ++y) {
        for (int64_t xx = w.x0; xx < w.x1; ++xx) {
          const T v = in[y * p.w + xx];
          m = m < v ? v : m;  // std::max: the first of equals stays
        }
      }
      out[i] = m;
    } else {
      double sum = 0;
      for (int64_t y = w.y0; y < w.y1; ++y) {
        for (int64_t xx = w.x0; xx < w.x1; ++xx) sum += static_cast<double>(in[y * p.w + xx]);
      }
      out[i] = static_cast<T>(sum / static_cast<double>(Divisor(p, w)));
    }
  }
}

// Whether input (y, x) is the first element of window w equal to m.
template <typename T>
__device__ __forceinline__ bool IsFirstMax(const T* in, const PoolWindows& p, const Window& w, T m,
                                           int64_t y, int64_t x) {
  for (int64_t yy = w.y0; yy < w.y1; ++yy) {
    for (int64_t xx = w.x0; xx < w.x1; ++xx) {
      if (in[yy * p.w + xx] == m) return yy == y && xx == x;
    }
  }
  return false;
}

template <typename T>
__global__ void PoolGradKernel(PoolWindows p, const T* x, const T* out, const T* dout, T* dx,
                               int64_t total) {
  TANDEM_GRID_LOOP(i, total) {
    const int64_t plane = i / (p.h * p.w), rest = i - plane * p.h * p.w;
    const int64_t y = rest / p.w, xx = rest - y * p.w;
    const T* in = x + plane * p.h * p.w;
    const int64_t o = plane * p.oh * p.ow;
    int64_t oy0, oy1, ox0, ox1;
    Covering(y, p.kh, p.stride_h, p.pad_h, p.oh, &oy0, &oy1);
    Covering(xx, p.kw, p.stride_w, p.pad_w, p.ow, &ox0, &ox1);
    T acc = T(0);
    for (int64_t oy = oy0; oy <= oy1; ++oy) {
      for (int64_t ox = ox0; ox <= ox1; ++ox) {
        const Window w = WindowAt(p, oy, ox);
        const T d = dout[o + oy * p.ow + ox];
        if (p.max) {
          if (in[rest] == out[o + oy * p.ow + ox] &&
              IsFirstMax(in, p, w, out[o + oy * p.ow + ox], y, xx)) {
            acc += d;
          }
        } else {
          acc += d / static_cast<T>(Divisor(p, w));
        }
      }
    }
    dx[i] = acc;
  }
}

}  // namespace

template <typename T>
cudaError_t LaunchPool2D(const PoolWindows& p, const T* x, T* out, cudaStream_t stream) {
  const int64_t total = p.planes * p.oh * p.ow;
  if (total == 0) return cudaSuccess;
  PoolKernel<T><<<Blocks(total), kThreads, 0, stream>>>(p, x, out, total);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchPool2DGrad(const PoolWindows& p, const T* x, const T* out, const T* dout, T* dx,
                             cudaStream_t stream) {
  const int64_t total = p.planes * p.h * p.w;
  if (total == 0) return cudaSuccess;
  PoolGradKernel<T><<<Blocks(total), kThreads, 0, stream>>>(p, x, out, dout, dx, total);
  return cudaGetLastError();
}

#define TANDEM_INSTANTIATE(T)                                                                    \
  template cudaError_t LaunchPool2D<T>(const PoolWindows&, const T*, T*, cudaStream_t);          \
  template cudaError_t LaunchPool2DGrad<T>(const PoolWindows&, const T*, const T*, const T*, T*, \
                                           cudaStream_t);
TANDEM_INSTANTIATE(float)
TANDEM_INSTANTIATE(double)
#undef TANDEM_INSTANTIATE

}  // namespace cuda
}  // namespace tandem
