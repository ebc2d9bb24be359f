// Loops of the pool2d kernels (max and average over windows of NCHW
// planes), for backends without a vendor pooling and for float64:
//
//   ASSIGN_OR_RETURN(Pool2DGeometry g, Pool2DShape("pool2d", x_shape, params));
//   Pool2DForward<float, Policy>(g, x, out);
//   Pool2DBackward<float, Policy>(g, x, out, dout, dx);
//
// A window is clipped to the plane (padding is never read). Max ties go to
// the first element in row-major window order; average sums accumulate in
// AccumulatorT<T> (double for float). Planes are independent tasks, so
// results do not depend on the policy. Pointers are to host-addressable
// memory; `g` has no unknown dims. Functions return when the work is done
// and are thread-safe for disjoint outputs.
#ifndef TANDEM_BACKENDS_COMMON_POOL_H_
#define TANDEM_BACKENDS_COMMON_POOL_H_

#include <algorithm>
#include <cstdint>

#include "backends/common/elementwise.h"
#include "ops/nn/shape_fns.h"

namespace tandem {
namespace pool_internal {

// The window of output (oy, ox), clipped to the plane.
struct Window {
  int64_t y0, y1, x0, x1;
  int64_t count() const { return (y1 - y0) * (x1 - x0); }
};

inline Window WindowAt(const Pool2DGeometry& g, int64_t oy, int64_t ox) {
  const Pool2DParams& p = g.p;
  const int64_t y = oy * p.stride_h - p.pad_h, x = ox * p.stride_w - p.pad_w;
  return {std::max<int64_t>(y, 0), std::min(y + p.kh, g.h), std::max<int64_t>(x, 0),
          std::min(x + p.kw, g.w)};
}

// What an average divides by: the clipped window's count (exclusive) or
// the full window's.
inline int64_t Divisor(const Pool2DGeometry& g, const Window& w) {
  return g.p.exclusive ? w.count() : g.p.kh * g.p.kw;
}

// Calls fn(in_plane_offset, out_plane_offset) for every plane, in parallel.
template <typename Policy, typename Fn>
void ForEachPlane(const Pool2DGeometry& g, Fn&& fn) {
  const int64_t plane = g.h * g.w;
  Policy::ParallelFor(g.n * g.c, std::max<int64_t>(1, kMinElementsPerTask / plane),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t i = begin; i < end; ++i) fn(i * plane, i * g.oh * g.ow);
                      });
}

}  // namespace pool_internal

// out [N, C, OH, OW] = the max or average of each window of x.
template <typename T, typename Policy>
void Pool2DForward(const Pool2DGeometry& g, const T* x, T* out) {
  namespace pi = pool_internal;
  pi::ForEachPlane<Policy>(g, [&](int64_t in, int64_t o) {
    const T* plane = x + in;
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const pi::Window w = pi::WindowAt(g, oy, ox);
        if (g.p.max) {
          T m = plane[w.y0 * g.w + w.x0];
          for (int64_t y = w.y0; y < w.y1; ++y) {
            for (int64_t xx = w.x0; xx < w.x1; ++xx) m = std::max(m, plane[y * g.w + xx]);
          }
          out[o + oy * g.ow + ox] = m;
        } else {
          AccumulatorT<T> sum = 0;
          for (int64_t y = w.y0; y < w.y1; ++y) {
            for (int64_t xx = w.x0; xx < w.x1; ++xx) sum += plane[y * g.w + xx];
          }
          out[o + oy * g.ow + ox] = static_cast<T>(sum / pi::Divisor(g, w));
        }
      }
    }
  });
}

// dx [N, C, H, W] = the gradient of pool2d's input: max sends each dout to
// the first element of its window equal to out (row-major); avg spreads
// dout / divisor over the window. Overlapping windows add up.
template <typename T, typename Policy>
void Pool2DBackward(const Pool2DGeometry& g, const T* x, const T* out, const T* dout, T* dx) {
  namespace pi = pool_internal;
  pi::ForEachPlane<Policy>(g, [&](int64_t in, int64_t o) {
    const T* plane = x + in;
    T* dplane = dx + in;
    std::fill(dplane, dplane + g.h * g.w, T(0));
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const pi::Window w = pi::WindowAt(g, oy, ox);
        const T d = dout[o + oy * g.ow + ox];
        if (g.p.max) {
          const T m = out[o + oy * g.ow + ox];
          bool found = false;
          for (int64_t y = w.y0; y < w.y1 && !found; ++y) {
            for (int64_t xx = w.x0; xx < w.x1 && !found; ++xx) {
              if (plane[y * g.w + xx] == m) {
                dplane[y * g.w + xx] += d;
                found = true;
              }
            }
          }
        } else {
          const T share = d / static_cast<T>(pi::Divisor(g, w));
          for (int64_t y = w.y0; y < w.y1; ++y) {
            for (int64_t xx = w.x0; xx < w.x1; ++xx) dplane[y * g.w + xx] += share;
          }
        }
      }
    }
  });
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_POOL_H_
