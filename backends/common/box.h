// Copies between a tensor and a box-shaped region of it (ops/array/
// shape_fns.h Box), shared by the slice and crop_tensor kernels and their
// gradients:
//
//   ASSIGN_OR_RETURN(Box box, SliceBox("slice", x_shape, axes, starts, ends));
//   ExtractBox<float, Policy>(x, x_shape, box, out);   // out = x[box]
//   InsertBox<float, Policy>(dout, x_shape, box, dx);  // dx[box] = dout
//
// Pointers are to host-addressable memory; `box` lies inside the tensor
// (validated by the shape functions) and has no unknown values. Functions
// return when the work is done; every element is written by one task.
#ifndef TANDEM_BACKENDS_COMMON_BOX_H_
#define TANDEM_BACKENDS_COMMON_BOX_H_

#include <algorithm>
#include <cstdint>

#include "backends/common/broadcast.h"
#include "backends/common/elementwise.h"
#include "framework/types/shape.h"
#include "ops/array/shape_fns.h"

namespace tandem {
namespace box_internal {

// The box as loops over a row-major iteration of the box's dims: `dims`
// (coalesced: a dim the box covers whole merges into the dim outside it),
// the tensor's element strides along them, and the tensor offset of the
// box's first element.
struct BoxLoops {
  DimVector dims;
  DimVector strides;
  int64_t base = 0;
  int64_t num_elements = 1;
};

inline BoxLoops MakeBoxLoops(const Shape& x_shape, const Box& box) {
  BoxLoops loops;
  int64_t stride = 1;
  // Innermost first, reversed at the end.
  for (int d = x_shape.rank() - 1; d >= 0; --d) {
    const int64_t size = box.shape.dim(d);
    loops.base += box.offsets[d] * stride;
    loops.num_elements *= size;
    // The loop inside spans `stride` elements exactly when the box covers
    // it whole: stepping dim d is then stepping that loop past its end.
    if (!loops.dims.empty() && loops.dims.back() * loops.strides.back() == stride) {
      loops.dims.back() *= size;
    } else {
      loops.dims.push_back(size);
      loops.strides.push_back(stride);
    }
    stride *= x_shape.dim(d);
  }
  if (loops.dims.empty()) {  // rank 0
    loops.dims.push_back(1);
    loops.strides.push_back(1);
  }
  std::reverse(loops.dims.begin(), loops.dims.end());
  std::reverse(loops.strides.begin(), loops.strides.end());
  return loops;
}

// Calls fn(box_pos, x_offset, len) for runs of `len` elements that are
// contiguous in both the box (row-major) and the tensor.
template <typename Policy, typename Fn>
void ForEachBoxRun(const Shape& x_shape, const Box& box, Fn&& fn) {
  const BoxLoops loops = MakeBoxLoops(x_shape, box);
  if (loops.num_elements == 0) return;
  const DimVector strides[] = {loops.strides};
  Policy::ParallelFor(loops.num_elements, kMinElementsPerTask, [&](int64_t begin, int64_t end) {
    ForEachSegment(
        loops.dims, strides, begin, end,
        [&](int64_t pos, const int64_t* in, int64_t len) { fn(pos, loops.base + in[0], len); });
  });
}

}  // namespace box_internal

// out (box.shape, row-major) = the box of x.
template <typename T, typename Policy>
void ExtractBox(const T* x, const Shape& x_shape, const Box& box, T* out) {
  box_internal::ForEachBoxRun<Policy>(x_shape, box, [&](int64_t pos, int64_t at, int64_t len) {
    std::copy(x + at, x + at + len, out + pos);
  });
}

// The box of x = in (box.shape, row-major); x's other elements are left
// as they are.
template <typename T, typename Policy>
void InsertBox(const T* in, const Shape& x_shape, const Box& box, T* x) {
  box_internal::ForEachBoxRun<Policy>(x_shape, box, [&](int64_t pos, int64_t at, int64_t len) {
    std::copy(in + pos, in + pos + len, x + at);
  });
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_BOX_H_
