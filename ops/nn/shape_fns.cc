#include "ops/nn/shape_fns.h"

#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/base/status_macros.h"
#include "ops/math/shape_fns.h"

namespace tandem {

absl::StatusOr<Shape> LookupTableShape(absl::string_view op, const TensorMeta& ids,
                                       const TensorMeta& w) {
  if (ids.dtype != DataType::kInt64) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op, "': Ids must be int64, got ", DataTypeName(ids.dtype)));
  }
  RETURN_IF_ERROR(CheckFloating(op, "W", w.dtype));
  if (w.shape.rank() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op, "': W must be a [rows, dim] table, got ", w.shape.ToString()));
  }
  std::vector<int64_t> out = ids.shape.ToVector();
  out.push_back(w.shape.dim(1));
  return Shape(out);
}

absl::StatusOr<int64_t> PaddingRow(absl::string_view op, int64_t padding_idx, int64_t rows) {
  if (padding_idx == -1) return -1;
  const int64_t row = padding_idx < 0 ? rows + padding_idx : padding_idx;
  if (row < 0 || row >= rows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "op '", op, "': attribute 'padding_idx' ", padding_idx, " is out of range for a table of ",
        rows, " rows (need -1 for none, or ", -rows, " <= padding_idx < ", rows, ")"));
  }
  return row;
}

namespace {

// A two-value (height, width) ints attribute whose values are >= `min`.
absl::Status ReadPair(const OpDesc& op, absl::string_view name, int64_t min, int64_t* h,
                      int64_t* w) {
  ASSIGN_OR_RETURN(std::vector<int64_t> v, GetAttr<std::vector<int64_t>>(op.attrs, name, op.type));
  if (v.size() != 2 || v[0] < min || v[1] < min) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op.type, "': attribute ", name, " [", absl::StrJoin(v, ", "),
                     "] must be two values (height, width) >= ", min));
  }
  *h = v[0];
  *w = v[1];
  return absl::OkStatus();
}

// (size + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1, or -1 if size or kernel is unknown;
// 0 when the window does not fit. Computed in 128 bits: attributes and dims come from
// program files, and an output that does not fit in int64 is an error, not a wrap.
absl::StatusOr<int64_t> OutputSize(absl::string_view op, absl::string_view axis, int64_t size,
                                   int64_t pad, int64_t kernel, int64_t dilation, int64_t stride) {
  if (size < 0 || kernel < 0) return -1;
  const __int128 window = static_cast<__int128>(dilation) * (kernel - 1) + 1;
  const __int128 span = static_cast<__int128>(size) + 2 * static_cast<__int128>(pad) - window;
  if (span < 0) return 0;
  const __int128 out = span / stride + 1;
  if (out > std::numeric_limits<int64_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op, "': the output ", axis, " of an input ", axis, " ", size,
                     " with padding ", pad, ", window ", kernel, ", dilation ", dilation,
                     " and stride ", stride, " does not fit in int64"));
  }
  return static_cast<int64_t>(out);
}

absl::Status CheckRank4(absl::string_view op, absl::string_view arg, const Shape& s,
                        absl::string_view layout) {
  if (s.rank() == 4) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("op '", op, "': ", arg, " must be 4-D ", layout, ", got ", s.ToString()));
}

}  // namespace

absl::Status CheckDropoutProb(absl::string_view op, double dropout_prob) {
  if (dropout_prob >= 0 && dropout_prob <= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("op '", op, "': attribute dropout_prob is ",
                                                 dropout_prob, ", need 0 <= dropout_prob <= 1"));
}

absl::StatusOr<Conv2DParams> ReadConv2DParams(const OpDesc& op) {
  Conv2DParams p;
  RETURN_IF_ERROR(ReadPair(op, "strides", 1, &p.stride_h, &p.stride_w));
  RETURN_IF_ERROR(ReadPair(op, "paddings", 0, &p.pad_h, &p.pad_w));
  RETURN_IF_ERROR(ReadPair(op, "dilations", 1, &p.dilation_h, &p.dilation_w));
  ASSIGN_OR_RETURN(p.groups, GetAttr<int64_t>(op.attrs, "groups", op.type));
  if (p.groups < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op.type, "': attribute groups is ", p.groups, ", need >= 1"));
  }
  return p;
}

absl::StatusOr<Conv2DGeometry> Conv2DShape(absl::string_view op, const Shape& input,
                                           const Shape& filter, const Conv2DParams& p) {
  RETURN_IF_ERROR(CheckRank4(op, "Input", input, "[N, C, H, W]"));
  RETURN_IF_ERROR(CheckRank4(op, "Filter", filter, "[M, C / groups, KH, KW]"));
  Conv2DGeometry g;
  g.p = p;
  g.n = input.dim(0);
  g.c = input.dim(1);
  g.h = input.dim(2);
  g.w = input.dim(3);
  g.m = filter.dim(0);
  g.kh = filter.dim(2);
  g.kw = filter.dim(3);
  const std::string shapes = absl::StrCat("Input ", input.ToString(), " and Filter ",
                                          filter.ToString(), " with groups ", p.groups);
  if (g.c >= 0 && filter.dim(1) >= 0 && g.c != static_cast<__int128>(filter.dim(1)) * p.groups) {
    return absl::InvalidArgumentError(absl::StrCat(
        "op '", op, "': ", shapes, ": Input's channels must equal Filter.dim(1) * groups"));
  }
  if (g.m >= 0 && g.m % p.groups != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op, "': ", shapes, ": Filter.dim(0) must be a multiple of groups"));
  }
  if (g.m == 0 || g.kh == 0 || g.kw == 0 || filter.dim(1) == 0 || g.h == 0 || g.w == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op, "': ", shapes, ": Filter and Input's planes must not be empty"));
  }
  ASSIGN_OR_RETURN(g.oh, OutputSize(op, "height", g.h, p.pad_h, g.kh, p.dilation_h, p.stride_h));
  ASSIGN_OR_RETURN(g.ow, OutputSize(op, "width", g.w, p.pad_w, g.kw, p.dilation_w, p.stride_w));
  if ((g.kh >= 0 && g.oh == 0) || (g.kw >= 0 && g.ow == 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op, "': ", shapes, ", paddings [", p.pad_h, ", ", p.pad_w,
                     "] and dilations [", p.dilation_h, ", ", p.dilation_w,
                     "]: the (dilated) filter is larger than the padded input"));
  }
  if (g.kh < 0) g.oh = -1;
  if (g.kw < 0) g.ow = -1;
  g.output = Shape({g.n, g.m, g.oh, g.ow});
  return g;
}

absl::StatusOr<Pool2DParams> ReadPool2DParams(const OpDesc& op) {
  Pool2DParams p;
  ASSIGN_OR_RETURN(std::string type, GetAttr<std::string>(op.attrs, "pooling_type", op.type));
  if (type != "max" && type != "avg") {
    return absl::InvalidArgumentError(absl::StrCat("op '", op.type, "': attribute pooling_type \"",
                                                   type, "\" must be \"max\" or \"avg\""));
  }
  p.max = type == "max";
  ASSIGN_OR_RETURN(p.global, GetAttr<bool>(op.attrs, "global_pooling", op.type));
  ASSIGN_OR_RETURN(p.exclusive, GetAttr<bool>(op.attrs, "exclusive", op.type));
  RETURN_IF_ERROR(ReadPair(op, "strides", 1, &p.stride_h, &p.stride_w));
  if (p.global) {
    p.stride_h = p.stride_w = 1;
    return p;
  }
  RETURN_IF_ERROR(ReadPair(op, "ksize", 1, &p.kh, &p.kw));
  RETURN_IF_ERROR(ReadPair(op, "paddings", 0, &p.pad_h, &p.pad_w));
  if (p.pad_h >= p.kh || p.pad_w >= p.kw) {
    return absl::InvalidArgumentError(absl::StrCat("op '", op.type, "': paddings [", p.pad_h, ", ",
                                                   p.pad_w, "] must be smaller than ksize [", p.kh,
                                                   ", ", p.kw, "]"));
  }
  return p;
}

absl::StatusOr<Pool2DGeometry> Pool2DShape(absl::string_view op, const Shape& x,
                                           const Pool2DParams& p) {
  RETURN_IF_ERROR(CheckRank4(op, "X", x, "[N, C, H, W]"));
  Pool2DGeometry g;
  g.p = p;
  g.n = x.dim(0);
  g.c = x.dim(1);
  g.h = x.dim(2);
  g.w = x.dim(3);
  if (g.h == 0 || g.w == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op, "': X ", x.ToString(), " has empty planes"));
  }
  if (p.global) {
    g.p.kh = g.h;
    g.p.kw = g.w;
    g.oh = g.ow = 1;
  } else {
    ASSIGN_OR_RETURN(g.oh, OutputSize(op, "height", g.h, p.pad_h, p.kh, 1, p.stride_h));
    ASSIGN_OR_RETURN(g.ow, OutputSize(op, "width", g.w, p.pad_w, p.kw, 1, p.stride_w));
    if (g.oh == 0 || g.ow == 0) {
      return absl::InvalidArgumentError(absl::StrCat("op '", op, "': ksize [", p.kh, ", ", p.kw,
                                                     "] with paddings [", p.pad_h, ", ", p.pad_w,
                                                     "] does not fit X ", x.ToString()));
    }
  }
  g.out = Shape({g.n, g.c, g.oh, g.ow});
  return g;
}

absl::StatusOr<LayerNormDims> LayerNormShape(absl::string_view op, const Shape& x,
                                             int64_t begin_norm_axis) {
  LayerNormDims d;
  ASSIGN_OR_RETURN(d.axis, NormalizeAxis(op, "X", x, begin_norm_axis));
  for (int i = 0; i < x.rank(); ++i) {
    int64_t& product = i < d.axis ? d.rows : d.cols;
    product = product < 0 || x.dim(i) < 0 ? -1 : product * x.dim(i);
  }
  if (d.cols == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "op '", op, "': X ", x.ToString(), " has no elements to normalize from dim ", d.axis));
  }
  return d;
}

absl::StatusOr<AttentionDims> AttentionShape(absl::string_view op, const Shape& qkv,
                                             int64_t num_heads, double scale) {
  if (num_heads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op, "': num_heads must be at least 1, got ", num_heads));
  }
  if (!(scale >= 0) || std::isinf(scale)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "op '", op, "': scale must be finite and >= 0 (0: 1 / sqrt(head dim)), got ", scale));
  }
  if (qkv.rank() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op, "': QKV must be [batch, seq, 3 * width], got ", qkv.ToString()));
  }
  AttentionDims d;
  d.batch = qkv.dim(0);
  d.seq = qkv.dim(1);
  d.heads = num_heads;
  const int64_t packed = qkv.dim(2);
  // (packed / 3) % num_heads, not packed % (3 * num_heads): num_heads is an
  // attribute from a program file and may be as large as int64 allows.
  if (packed >= 0 && (packed == 0 || packed % 3 != 0 || packed / 3 % num_heads != 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "op '", op, "': QKV ", qkv.ToString(), ": the last dim must be 3 * width with width a ",
        "positive multiple of num_heads ", num_heads, ", got ", packed));
  }
  d.width = packed < 0 ? -1 : packed / 3;
  d.head_dim = packed < 0 ? -1 : d.width / num_heads;
  d.scale = scale != 0 || d.head_dim < 0 ? scale : 1 / std::sqrt(static_cast<double>(d.head_dim));
  return d;
}

}  // namespace tandem
