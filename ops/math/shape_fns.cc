#include "ops/math/shape_fns.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"

namespace tandem {

absl::StatusOr<Shape> AlignForBroadcast(absl::string_view op, const Shape& x, const Shape& y,
                                        int64_t axis) {
  if (axis == -1 || y.rank() > x.rank()) {
    if (axis != -1) {
      return absl::InvalidArgumentError(absl::StrCat("op '", op, "': Y ", y.ToString(),
                                                     " has more dims than X ", x.ToString(),
                                                     " but axis is ", axis));
    }
    return y;
  }
  if (axis < 0 || axis > x.rank() - y.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "op '", op, "': axis ", axis, " is out of range for X ", x.ToString(), " and Y ",
        y.ToString(), " (need -1 or 0 <= axis <= ", x.rank() - y.rank(), ")"));
  }
  Shape aligned(std::vector<int64_t>(x.rank(), 1));
  for (int i = 0; i < y.rank(); ++i) aligned.set_dim(axis + i, y.dim(i));
  return aligned;
}

absl::StatusOr<Shape> BroadcastShapes(absl::string_view op, const Shape& x, const Shape& y_in,
                                      int64_t axis) {
  absl::StatusOr<Shape> y_or = AlignForBroadcast(op, x, y_in, axis);
  if (!y_or.ok()) return y_or.status();
  const Shape& y = *y_or;
  const int rank = std::max(x.rank(), y.rank());
  std::vector<int64_t> out(rank);
  for (int i = 0; i < rank; ++i) {
    const int xi = x.rank() - rank + i, yi = y.rank() - rank + i;
    const int64_t a = xi >= 0 ? x.dim(xi) : 1;
    const int64_t b = yi >= 0 ? y.dim(yi) : 1;
    if (a == b || b == 1) {
      out[i] = a;
    } else if (a == 1) {
      out[i] = b;
    } else if (a == -1 || b == -1) {
      out[i] = -1;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("op '", op, "': X ", x.ToString(), " and Y ",
                                                     y_in.ToString(), " cannot be broadcast (dim ",
                                                     i - rank, ": ", a, " vs ", b, ")"));
    }
  }
  return Shape(out);
}

absl::Status CheckFloating(absl::string_view op, absl::string_view arg, DataType dtype) {
  if (IsFloating(dtype)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "op '", op, "': ", arg, " must be float32 or float64, got ", DataTypeName(dtype)));
}

absl::Status CheckArgMeta(absl::string_view op, absl::string_view arg, DataType dtype,
                          const Shape& shape, DataType want_dtype, const Shape& want_shape) {
  if (dtype == want_dtype && shape == want_shape) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("op '", op, "': ", arg, " is ", DataTypeName(dtype), shape.ToString(),
                   ", expected ", DataTypeName(want_dtype), want_shape.ToString()));
}

absl::StatusOr<int> NormalizeAxis(absl::string_view op, absl::string_view x_arg, const Shape& x,
                                  int64_t axis) {
  const int64_t rank = x.rank();
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op, "': axis ", axis, " is out of range for ", x_arg, " ",
                     x.ToString(), " (need ", -rank, " <= axis < ", rank, ")"));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

absl::StatusOr<MatmulDims> MatmulShape(absl::string_view op, const Shape& x, const Shape& y,
                                       bool transpose_x, bool transpose_y) {
  if (x.rank() < 2 || y.rank() < 2) {
    return absl::InvalidArgumentError(absl::StrCat("op '", op, "': X ", x.ToString(), " and Y ",
                                                   y.ToString(), " must both have rank >= 2"));
  }
  MatmulDims d;
  const int xr = x.rank(), yr = y.rank();
  d.m = transpose_x ? x.dim(xr - 1) : x.dim(xr - 2);
  const int64_t kx = transpose_x ? x.dim(xr - 2) : x.dim(xr - 1);
  const int64_t ky = transpose_y ? y.dim(yr - 1) : y.dim(yr - 2);
  d.n = transpose_y ? y.dim(yr - 2) : y.dim(yr - 1);
  if (kx != ky && kx != -1 && ky != -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "op '", op, "': inner dims differ: X ", x.ToString(), transpose_x ? " (transposed)" : "",
        " has K=", kx, ", Y ", y.ToString(), transpose_y ? " (transposed)" : "", " has K=", ky));
  }
  d.k = kx;
  d.x_batched = xr > 2;
  d.y_batched = yr > 2;
  std::vector<int64_t> batch;
  if (d.x_batched && d.y_batched) {
    if (xr != yr || !std::equal(x.dims().begin(), x.dims().end() - 2, y.dims().begin())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "op '", op, "': batch dims of X ", x.ToString(), " and Y ", y.ToString(), " differ"));
    }
  }
  const Shape& batched = d.x_batched ? x : y;
  if (d.x_batched || d.y_batched) {
    batch.assign(batched.dims().begin(), batched.dims().end() - 2);
  }
  for (int64_t b : batch) d.batch *= b;
  batch.push_back(d.m);
  batch.push_back(d.n);
  d.out = Shape(batch);
  return d;
}

namespace {

// Product of dims [begin, end) of `s`; -1 if one of them is unknown.
int64_t DimProduct(const Shape& s, int begin, int end) {
  int64_t p = 1;
  for (int i = begin; i < end; ++i) {
    if (s.dim(i) < 0) return -1;
    p *= s.dim(i);
  }
  return p;
}

absl::Status CheckNumColDims(absl::string_view op, const MatrixView& v) {
  if (v.num_col_dims >= 1 && v.num_col_dims < v.shape.rank()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("op '", op, "': ", v.attr, " ", v.num_col_dims, " is out of range for ", v.arg,
                   " ", v.shape.ToString(), " (need 1 <= ", v.attr, " < ", v.shape.rank(), ")"));
}

}  // namespace

absl::StatusOr<FlatMatmulDims> FlatMatmulShape(absl::string_view op, const MatrixView& x,
                                               const MatrixView& y) {
  RETURN_IF_ERROR(CheckNumColDims(op, x));
  RETURN_IF_ERROR(CheckNumColDims(op, y));
  const int xn = static_cast<int>(x.num_col_dims), yn = static_cast<int>(y.num_col_dims);
  FlatMatmulDims d;
  d.m = DimProduct(x.shape, 0, xn);
  d.k = DimProduct(x.shape, xn, x.shape.rank());
  const int64_t ky = DimProduct(y.shape, 0, yn);
  d.n = DimProduct(y.shape, yn, y.shape.rank());
  if (d.k != ky && d.k != -1 && ky != -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op, "': inner dims differ: ", x.arg, " ", x.shape.ToString(),
                     " is a [", d.m, ", ", d.k, "] matrix (", x.attr, " ", x.num_col_dims, ") but ",
                     y.arg, " ", y.shape.ToString(), " is a [", ky, ", ", d.n, "] matrix"));
  }
  if (d.k == -1) d.k = ky;
  std::vector<int64_t> out(x.shape.dims().begin(), x.shape.dims().begin() + xn);
  out.insert(out.end(), y.shape.dims().begin() + yn, y.shape.dims().end());
  d.out = Shape(out);
  return d;
}

absl::StatusOr<FlatMatmulDims> FcShape(absl::string_view op, const TensorMeta& input,
                                       int64_t in_num_col_dims, const TensorMeta& w,
                                       const TensorMeta* bias) {
  RETURN_IF_ERROR(CheckFloating(op, "Input", input.dtype));
  if (w.dtype != input.dtype || w.shape.rank() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op, "': W must be a ", DataTypeName(input.dtype),
                     " [K, M] matrix, got ", DataTypeName(w.dtype), w.shape.ToString()));
  }
  ASSIGN_OR_RETURN(FlatMatmulDims d,
                   FlatMatmulShape(op, {"Input", input.shape, in_num_col_dims, "in_num_col_dims"},
                                   {"W", w.shape, 1, "num_col_dims"}));
  if (bias != nullptr) {
    const int64_t m = w.shape.dim(1);
    const bool ok = bias->dtype == input.dtype && bias->shape.rank() == 1 &&
                    (bias->shape.dim(0) == m || bias->shape.dim(0) == -1 || m == -1);
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "op '", op, "': Bias must be ", DataTypeName(input.dtype), "[", m, "] to match W ",
          w.shape.ToString(), ", got ", DataTypeName(bias->dtype), bias->shape.ToString()));
    }
  }
  return d;
}

absl::StatusOr<ReduceDims> ReduceShape(absl::string_view op, const Shape& x,
                                       const std::vector<int64_t>& dims, bool keep_dim,
                                       bool reduce_all) {
  const int rank = x.rank();
  std::vector<bool> reduced(rank, reduce_all || dims.empty());
  if (!reduce_all) {
    for (int64_t dim : dims) {
      if (dim < -rank || dim >= rank) {
        return absl::InvalidArgumentError(absl::StrCat("op '", op, "': dim ", dim,
                                                       " is out of range for X ", x.ToString(),
                                                       " (need ", -rank, " <= dim < ", rank, ")"));
      }
      const int d = static_cast<int>(dim < 0 ? dim + rank : dim);
      if (reduced[d]) {
        return absl::InvalidArgumentError(absl::StrCat("op '", op, "': dim ", dim, " of X ",
                                                       x.ToString(), " is listed twice in dim"));
      }
      reduced[d] = true;
    }
  }
  ReduceDims r;
  r.kept = x;
  std::vector<int64_t> out;
  for (int d = 0; d < rank; ++d) {
    if (!reduced[d]) {
      out.push_back(x.dim(d));
      continue;
    }
    r.count = r.count < 0 || x.dim(d) < 0 ? -1 : r.count * x.dim(d);
    r.kept.set_dim(d, 1);
  }
  if (keep_dim) {
    r.out = r.kept;
  } else {
    r.out = out.empty() ? Shape({1}) : Shape(out);
  }
  return r;
}

absl::Status CheckMeanCount(absl::string_view op, const Shape& x, const ReduceDims& r) {
  if (r.count != 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("op '", op, "': X ", x.ToString(), " has no elements to average over dim"));
}

}  // namespace tandem
