#include "tests/conformance/reference.h"

#include <algorithm>
#include <cmath>

#include "glog/logging.h"

namespace tandem::reference {
namespace {

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

// Offset into an array of `in` dims (right-aligned to `out`, size-1 dims
// broadcast) for the out-index `idx`.
int64_t BroadcastOffset(const std::vector<int64_t>& idx, const std::vector<int64_t>& out,
                        const std::vector<int64_t>& in) {
  const std::vector<int64_t> strides = Strides(in);
  int64_t off = 0;
  const int shift = static_cast<int>(out.size() - in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != 1) off += idx[i + shift] * strides[i];
  }
  return off;
}

std::vector<int64_t> Unravel(int64_t linear, const std::vector<int64_t>& dims) {
  std::vector<int64_t> idx(dims.size());
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    idx[i] = dims[i] == 0 ? 0 : linear % dims[i];
    linear = dims[i] == 0 ? 0 : linear / dims[i];
  }
  return idx;
}

std::vector<int64_t> BroadcastDims(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i + a.size() >= r ? a[i + a.size() - r] : 1;
    const int64_t db = i + b.size() >= r ? b[i + b.size() - r] : 1;
    CHECK(da == db || da == 1 || db == 1) << "reference: bad broadcast";
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace

double Convert(double v, DataType to) {
  switch (to) {
    case DataType::kFloat32:
      return static_cast<double>(static_cast<float>(v));
    case DataType::kFloat64:
      return v;
    case DataType::kInt32:
      return static_cast<double>(static_cast<int32_t>(v));
    case DataType::kInt64:
      return static_cast<double>(static_cast<int64_t>(v));
    case DataType::kBool:
      return v != 0 ? 1.0 : 0.0;
    case DataType::kBFloat16:
      return static_cast<double>(bfloat16(v));
    case DataType::kFloat16:
      return static_cast<double>(float16(v));
  }
  return v;
}

std::vector<double> Convert(const std::vector<double>& v, DataType to) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = Convert(v[i], to);
  return out;
}

Shape AlignY(const Shape& x, const Shape& y, int64_t axis) {
  if (axis == -1 || y.rank() > x.rank()) return y;
  std::vector<int64_t> dims(x.rank(), 1);
  for (int i = 0; i < y.rank(); ++i) dims[axis + i] = y.dim(i);
  return Shape(dims);
}

Array Add(const Array& x, const Array& y, int64_t axis) {
  const std::vector<int64_t> xd = x.shape.ToVector();
  const std::vector<int64_t> yd = AlignY(x.shape, y.shape, axis).ToVector();
  const std::vector<int64_t> od = BroadcastDims(xd, yd);
  Array out{Shape(od), {}};
  const int64_t n = out.shape.num_elements();
  out.values.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    const std::vector<int64_t> idx = Unravel(i, od);
    out.values[i] = x.values[BroadcastOffset(idx, od, xd)] + y.values[BroadcastOffset(idx, od, yd)];
  }
  return out;
}

std::pair<Array, Array> AddGrad(const Array& x, const Array& y, const Array& dout, int64_t axis) {
  const std::vector<int64_t> xd = x.shape.ToVector();
  const std::vector<int64_t> yd = AlignY(x.shape, y.shape, axis).ToVector();
  const std::vector<int64_t> od = dout.shape.ToVector();
  Array dx{x.shape, std::vector<double>(x.values.size(), 0.0)};
  Array dy{y.shape, std::vector<double>(y.values.size(), 0.0)};
  for (int64_t i = 0; i < static_cast<int64_t>(dout.values.size()); ++i) {
    const std::vector<int64_t> idx = Unravel(i, od);
    dx.values[BroadcastOffset(idx, od, xd)] += dout.values[i];
    dy.values[BroadcastOffset(idx, od, yd)] += dout.values[i];
  }
  return {dx, dy};
}

Shape ForEachBroadcast(const Shape& x, const Shape& y, int64_t axis,
                       const std::function<void(int64_t, int64_t, int64_t)>& fn) {
  const std::vector<int64_t> xd = x.ToVector();
  const std::vector<int64_t> yd = AlignY(x, y, axis).ToVector();
  const std::vector<int64_t> od = BroadcastDims(xd, yd);
  const Shape out(od);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    const std::vector<int64_t> idx = Unravel(i, od);
    fn(i, BroadcastOffset(idx, od, xd), BroadcastOffset(idx, od, yd));
  }
  return out;
}

namespace {

// Geometry of Out[b] = op(X[b]) op(Y[b]) for the reference loops.
struct Geometry {
  int64_t batch = 1, m = 0, k = 0, n = 0;
  bool xb = false, yb = false;
  std::vector<int64_t> out_dims;
};

Geometry Geo(const Shape& x, const Shape& y, bool tx, bool ty) {
  Geometry g;
  const int xr = x.rank(), yr = y.rank();
  g.m = tx ? x.dim(xr - 1) : x.dim(xr - 2);
  g.k = tx ? x.dim(xr - 2) : x.dim(xr - 1);
  g.n = ty ? y.dim(yr - 2) : y.dim(yr - 1);
  g.xb = xr > 2;
  g.yb = yr > 2;
  const Shape& bs = g.xb ? x : y;
  if (g.xb || g.yb) {
    for (int i = 0; i < bs.rank() - 2; ++i) {
      g.batch *= bs.dim(i);
      g.out_dims.push_back(bs.dim(i));
    }
  }
  g.out_dims.push_back(g.m);
  g.out_dims.push_back(g.n);
  return g;
}

// Offset of op(X)[b][i][kk] in X's storage.
int64_t XOffset(const Geometry& g, bool tx, int64_t b, int64_t i, int64_t kk) {
  const int64_t base = g.xb ? b * g.m * g.k : 0;
  return base + (tx ? kk * g.m + i : i * g.k + kk);
}
int64_t YOffset(const Geometry& g, bool ty, int64_t b, int64_t kk, int64_t j) {
  const int64_t base = g.yb ? b * g.k * g.n : 0;
  return base + (ty ? j * g.k + kk : kk * g.n + j);
}

}  // namespace

Array Matmul(const Array& x, const Array& y, bool tx, bool ty, double alpha) {
  const Geometry g = Geo(x.shape, y.shape, tx, ty);
  Array out{Shape(g.out_dims), std::vector<double>(g.batch * g.m * g.n, 0.0)};
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double acc = 0;
        for (int64_t kk = 0; kk < g.k; ++kk) {
          acc += x.values[XOffset(g, tx, b, i, kk)] * y.values[YOffset(g, ty, b, kk, j)];
        }
        out.values[(b * g.m + i) * g.n + j] = alpha * acc;
      }
  return out;
}

std::pair<Array, Array> MatmulGrad(const Array& x, const Array& y, const Array& dout, bool tx,
                                   bool ty, double alpha) {
  const Geometry g = Geo(x.shape, y.shape, tx, ty);
  Array dx{x.shape, std::vector<double>(x.values.size(), 0.0)};
  Array dy{y.shape, std::vector<double>(y.values.size(), 0.0)};
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        const double d = alpha * dout.values[(b * g.m + i) * g.n + j];
        for (int64_t kk = 0; kk < g.k; ++kk) {
          dx.values[XOffset(g, tx, b, i, kk)] += d * y.values[YOffset(g, ty, b, kk, j)];
          dy.values[YOffset(g, ty, b, kk, j)] += d * x.values[XOffset(g, tx, b, i, kk)];
        }
      }
  return {dx, dy};
}

}  // namespace tandem::reference

namespace tandem::reference {
namespace {

// Row-major offset of `idx` in an array of dims `dims`.
int64_t Ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  int64_t off = 0;
  for (size_t i = 0; i < dims.size(); ++i) off = off * dims[i] + idx[i];
  return off;
}

// [outer, n, inner] views of `shape` around `axis`.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};
AxisView ViewAround(const Shape& shape, int axis) {
  AxisView v;
  for (int d = 0; d < shape.rank(); ++d) {
    (d < axis ? v.outer : d == axis ? v.n : v.inner) *= shape.dim(d);
  }
  return v;
}

// Per-dim start and size of a slice, numpy style, computed directly.
void SliceRegion(const Shape& x, const std::vector<int64_t>& axes,
                 const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                 std::vector<int64_t>* begin, std::vector<int64_t>* size) {
  begin->assign(x.rank(), 0);
  *size = x.ToVector();
  for (size_t i = 0; i < axes.size(); ++i) {
    const int a = static_cast<int>(axes[i] < 0 ? axes[i] + x.rank() : axes[i]);
    const int64_t dim = x.dim(a);
    int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
    s = std::min(std::max<int64_t>(s, 0), dim);
    e = std::min(std::max<int64_t>(e, 0), dim);
    (*begin)[a] = s;
    (*size)[a] = e > s ? e - s : 0;
  }
}

void CropRegion(const Shape& x, const std::vector<int64_t>& sizes,
                const std::vector<int64_t>& offsets, std::vector<int64_t>* begin,
                std::vector<int64_t>* size) {
  begin->assign(x.rank(), 0);
  size->resize(x.rank());
  for (int d = 0; d < x.rank(); ++d) {
    if (!offsets.empty()) (*begin)[d] = offsets[d];
    (*size)[d] = sizes[d] == -1 ? x.dim(d) - (*begin)[d] : sizes[d];
  }
}

// out = x[begin : begin + size] (copy of a region).
Array Region(const Array& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& size) {
  Array out{Shape(size), {}};
  const std::vector<int64_t> xd = x.shape.ToVector();
  for (int64_t i = 0; i < out.shape.num_elements(); ++i) {
    std::vector<int64_t> idx = Unravel(i, size);
    for (size_t d = 0; d < idx.size(); ++d) idx[d] += begin[d];
    out.values.push_back(x.values[Ravel(idx, xd)]);
  }
  return out;
}

// zeros of `x_shape` with the region = dout.
Array Unregion(const Shape& x_shape, const Array& dout, const std::vector<int64_t>& begin) {
  Array dx{x_shape, std::vector<double>(x_shape.num_elements(), 0.0)};
  const std::vector<int64_t> xd = x_shape.ToVector();
  const std::vector<int64_t> od = dout.shape.ToVector();
  for (int64_t i = 0; i < dout.shape.num_elements(); ++i) {
    std::vector<int64_t> idx = Unravel(i, od);
    for (size_t d = 0; d < idx.size(); ++d) idx[d] += begin[d];
    dx.values[Ravel(idx, xd)] = dout.values[i];
  }
  return dx;
}

}  // namespace

Array Densify(int64_t height, const std::vector<int64_t>& rows, const Array& value) {
  std::vector<int64_t> dims = value.shape.ToVector();
  dims[0] = height;
  const int64_t width = rows.empty() ? 0 : value.values.size() / rows.size();
  Array dense{Shape(dims), std::vector<double>(Shape(dims).num_elements(), 0.0)};
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int64_t j = 0; j < width; ++j) {
      dense.values[rows[i] * width + j] += value.values[i * width + j];
    }
  }
  return dense;
}

Array LookupTable(const Array& ids, const Array& w, int64_t padding_row) {
  const int64_t dim = w.shape.dim(1);
  std::vector<int64_t> dims = ids.shape.ToVector();
  dims.push_back(dim);
  Array out{Shape(dims), {}};
  for (double id : ids.values) {
    const int64_t row = static_cast<int64_t>(id);
    for (int64_t j = 0; j < dim; ++j) {
      out.values.push_back(row == padding_row ? 0.0 : w.values[row * dim + j]);
    }
  }
  return out;
}

Array LookupTableGrad(const Array& ids, const Shape& w_shape, const Array& dout,
                      int64_t padding_row) {
  const int64_t dim = w_shape.dim(1);
  Array dw{w_shape, std::vector<double>(w_shape.num_elements(), 0.0)};
  for (size_t i = 0; i < ids.values.size(); ++i) {
    const int64_t row = static_cast<int64_t>(ids.values[i]);
    if (row == padding_row) continue;
    for (int64_t j = 0; j < dim; ++j) dw.values[row * dim + j] += dout.values[i * dim + j];
  }
  return dw;
}

Array L2Normalize(const Array& x, int axis, double epsilon) {
  const AxisView v = ViewAround(x.shape, axis);
  Array out{x.shape, std::vector<double>(x.values.size())};
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t in = 0; in < v.inner; ++in) {
      double sq = 0;
      for (int64_t k = 0; k < v.n; ++k) {
        const double e = x.values[(o * v.n + k) * v.inner + in];
        sq += e * e;
      }
      const double norm = std::sqrt(sq + epsilon);
      for (int64_t k = 0; k < v.n; ++k) {
        const int64_t at = (o * v.n + k) * v.inner + in;
        out.values[at] = x.values[at] / norm;
      }
    }
  }
  return out;
}

Array L2NormalizeGrad(const Array& x, const Array& dout, int axis, double epsilon) {
  // d/dx_j (x_i / r) with r = sqrt(sum x^2 + eps): delta_ij / r - x_i x_j / r^3.
  const AxisView v = ViewAround(x.shape, axis);
  Array dx{x.shape, std::vector<double>(x.values.size())};
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t in = 0; in < v.inner; ++in) {
      double sq = 0, dot = 0;
      for (int64_t k = 0; k < v.n; ++k) {
        const int64_t at = (o * v.n + k) * v.inner + in;
        sq += x.values[at] * x.values[at];
        dot += x.values[at] * dout.values[at];
      }
      const double r = std::sqrt(sq + epsilon);
      for (int64_t k = 0; k < v.n; ++k) {
        const int64_t at = (o * v.n + k) * v.inner + in;
        dx.values[at] = dout.values[at] / r - x.values[at] * dot / (r * r * r);
      }
    }
  }
  return dx;
}

Array SquareErrorCost(const Array& x, const Array& y) {
  Array out{x.shape, {}};
  for (size_t i = 0; i < x.values.size(); ++i) {
    out.values.push_back((x.values[i] - y.values[i]) * (x.values[i] - y.values[i]));
  }
  return out;
}

std::pair<Array, Array> SquareErrorCostGrad(const Array& x, const Array& y, const Array& dout) {
  Array dx{x.shape, {}}, dy{y.shape, {}};
  for (size_t i = 0; i < x.values.size(); ++i) {
    dx.values.push_back(2 * (x.values[i] - y.values[i]) * dout.values[i]);
    dy.values.push_back(-2 * (x.values[i] - y.values[i]) * dout.values[i]);
  }
  return {dx, dy};
}

Array Mean(const Array& x) {
  double sum = 0;
  for (double v : x.values) sum += v;
  return Array{Shape({1}), {sum / x.values.size()}};
}

Array MeanGrad(const Array& x, const Array& dout) {
  return Array{x.shape, std::vector<double>(x.values.size(), dout.values[0] / x.values.size())};
}

Array SgdDense(const Array& param, const Array& grad, double lr) {
  Array out = param;
  for (size_t i = 0; i < out.values.size(); ++i) out.values[i] -= lr * grad.values[i];
  return out;
}

Array SgdSparse(const Array& param, const std::vector<int64_t>& rows, const Array& value,
                double lr) {
  Array out = param;
  const int64_t width =
      param.shape.dim(0) == 0 ? 0 : param.shape.num_elements() / param.shape.dim(0);
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int64_t j = 0; j < width; ++j) {
      out.values[rows[i] * width + j] -= lr * value.values[i * width + j];
    }
  }
  return out;
}

Array Slice(const Array& x, const std::vector<int64_t>& axes, const std::vector<int64_t>& starts,
            const std::vector<int64_t>& ends) {
  std::vector<int64_t> begin, size;
  SliceRegion(x.shape, axes, starts, ends, &begin, &size);
  return Region(x, begin, size);
}

Array SliceGrad(const Shape& x_shape, const Array& dout, const std::vector<int64_t>& axes,
                const std::vector<int64_t>& starts, const std::vector<int64_t>& ends) {
  std::vector<int64_t> begin, size;
  SliceRegion(x_shape, axes, starts, ends, &begin, &size);
  return Unregion(x_shape, dout, begin);
}

Array Crop(const Array& x, const std::vector<int64_t>& sizes, const std::vector<int64_t>& offsets) {
  std::vector<int64_t> begin, size;
  CropRegion(x.shape, sizes, offsets, &begin, &size);
  return Region(x, begin, size);
}

Array CropGrad(const Shape& x_shape, const Array& dout, const std::vector<int64_t>& sizes,
               const std::vector<int64_t>& offsets) {
  std::vector<int64_t> begin, size;
  CropRegion(x_shape, sizes, offsets, &begin, &size);
  return Unregion(x_shape, dout, begin);
}

Array UniformRandom(const Shape& shape, DataType dtype, double min, double max, int64_t seed) {
  Array out{shape, {}};
  for (uint64_t i = 0; i < static_cast<uint64_t>(shape.num_elements()); ++i) {
    // SplitMix64 of the counter i + 1, offset by the seed.
    uint64_t z = static_cast<uint64_t>(seed) + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const double u = static_cast<double>(z >> 11) * 0x1.0p-53;
    out.values.push_back(Convert(min + (max - min) * u, dtype));
  }
  return out;
}

}  // namespace tandem::reference
