#include "tests/conformance/reference_math.h"

#include <algorithm>

namespace tandem::reference {

Array Broadcast(const Array& x, const Array& y, int64_t axis,
                const std::function<double(double, double)>& fn) {
  Array out;
  std::vector<double> values;
  out.shape = ForEachBroadcast(x.shape, y.shape, axis, [&](int64_t, int64_t xi, int64_t yi) {
    values.push_back(fn(x.values[xi], y.values[yi]));
  });
  out.values = std::move(values);
  return out;
}

std::pair<Array, Array> BroadcastGrad(
    const Array& x, const Array& y, const Array& dout, int64_t axis,
    const std::function<std::pair<double, double>(double, double)>& d) {
  Array dx{x.shape, std::vector<double>(x.values.size(), 0.0)};
  Array dy{y.shape, std::vector<double>(y.values.size(), 0.0)};
  ForEachBroadcast(x.shape, y.shape, axis, [&](int64_t i, int64_t xi, int64_t yi) {
    const auto [ddx, ddy] = d(x.values[xi], y.values[yi]);
    dx.values[xi] += dout.values[i] * ddx;
    dy.values[yi] += dout.values[i] * ddy;
  });
  return {dx, dy};
}

Array Map(const Array& x, const std::function<double(double)>& fn) {
  Array out{x.shape, {}};
  for (double v : x.values) out.values.push_back(fn(v));
  return out;
}

namespace {

// For each element of `x`: its offset in the reduction's output and, in
// `count`, the elements summed into each output element.
std::vector<int64_t> ReducedOffsets(const Shape& x, const std::vector<int>& dims, int64_t* count) {
  std::vector<bool> reduced(x.rank(), dims.empty());
  for (int d : dims) reduced[d] = true;
  *count = 1;
  for (int d = 0; d < x.rank(); ++d) {
    if (reduced[d]) *count *= x.dim(d);
  }
  std::vector<int64_t> offsets(x.num_elements());
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    // Unravel i over x's dims and ravel the kept indices.
    int64_t rest = i, stride = 1, off = 0;
    for (int d = x.rank() - 1; d >= 0; --d) {
      const int64_t idx = rest % x.dim(d);
      rest /= x.dim(d);
      if (!reduced[d]) {
        off += idx * stride;
        stride *= x.dim(d);
      }
    }
    offsets[i] = off;
  }
  return offsets;
}

Shape ReducedShape(const Shape& x, const std::vector<int>& dims, bool keep_dim) {
  std::vector<int64_t> out;
  for (int d = 0; d < x.rank(); ++d) {
    const bool reduced = dims.empty() || std::count(dims.begin(), dims.end(), d) > 0;
    if (!reduced) {
      out.push_back(x.dim(d));
    } else if (keep_dim) {
      out.push_back(1);
    }
  }
  if (out.empty() && !(keep_dim && x.rank() == 0)) return Shape({1});
  return Shape(out);
}

}  // namespace

Array Reduce(const Array& x, const std::vector<int>& dims, bool keep_dim, bool mean) {
  int64_t count = 0;
  const std::vector<int64_t> offsets = ReducedOffsets(x.shape, dims, &count);
  Array out{ReducedShape(x.shape, dims, keep_dim), {}};
  out.values.assign(out.shape.num_elements(), 0.0);
  for (size_t i = 0; i < offsets.size(); ++i) out.values[offsets[i]] += x.values[i];
  if (mean) {
    for (double& v : out.values) v /= count;
  }
  return out;
}

Array ReduceGrad(const Array& x, const std::vector<int>& dims, const Array& dout, bool mean) {
  int64_t count = 0;
  const std::vector<int64_t> offsets = ReducedOffsets(x.shape, dims, &count);
  Array dx{x.shape, {}};
  for (int64_t off : offsets) dx.values.push_back(dout.values[off] / (mean ? count : 1));
  return dx;
}

Array AsMatrix(const Array& a, int num_col_dims) {
  int64_t rows = 1, cols = 1;
  for (int d = 0; d < a.shape.rank(); ++d) (d < num_col_dims ? rows : cols) *= a.shape.dim(d);
  return Array{Shape({rows, cols}), a.values};
}

}  // namespace tandem::reference
