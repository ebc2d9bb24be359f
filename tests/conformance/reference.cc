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
    case DataType::kFloat32: return static_cast<double>(static_cast<float>(v));
    case DataType::kFloat64: return v;
    case DataType::kInt32: return static_cast<double>(static_cast<int32_t>(v));
    case DataType::kInt64: return static_cast<double>(static_cast<int64_t>(v));
    case DataType::kBool: return v != 0 ? 1.0 : 0.0;
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
    out.values[i] = x.values[BroadcastOffset(idx, od, xd)] +
                    y.values[BroadcastOffset(idx, od, yd)];
  }
  return out;
}

std::pair<Array, Array> AddGrad(const Array& x, const Array& y, const Array& dout,
                                int64_t axis) {
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

std::pair<Array, Array> MatmulGrad(const Array& x, const Array& y, const Array& dout,
                                   bool tx, bool ty, double alpha) {
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
