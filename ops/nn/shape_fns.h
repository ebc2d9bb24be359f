// Shape functions of the nn ops (lookup_table, l2_normalize, dropout,
// conv2d, pool2d, layer_norm), used by their schemas (ops/nn/*_op.cc) and by
// kernels, so both agree.
//
//   ASSIGN_OR_RETURN(Shape out, LookupTableShape("lookup_table", ids, w));
//   ASSIGN_OR_RETURN(int64_t pad, PaddingRow("lookup_table", padding_idx, rows));
#ifndef TANDEM_OPS_NN_SHAPE_FNS_H_
#define TANDEM_OPS_NN_SHAPE_FNS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "framework/op/op_desc.h"
#include "framework/op/op_schema.h"
#include "framework/types/shape.h"

namespace tandem {

// Out of lookup_table: Ids' shape + [dim] (rank-0 Ids give [dim]). Ids must
// be int64 and W a float32/float64 [rows, dim] table; InvalidArgument naming
// the op and the offending argument otherwise.
absl::StatusOr<Shape> LookupTableShape(absl::string_view op, const TensorMeta& ids,
                                       const TensorMeta& w);

// The table row that attr padding_idx designates in a table of `rows` rows,
// or -1 for none: -1 means none, other negative values count from the end
// (rows + padding_idx, as in Paddle). InvalidArgument naming the op, the
// attribute and the range when the row is outside [0, rows).
absl::StatusOr<int64_t> PaddingRow(absl::string_view op, int64_t padding_idx, int64_t rows);

// OK if 0 <= dropout_prob <= 1; InvalidArgument naming the op and the
// value otherwise.
absl::Status CheckDropoutProb(absl::string_view op, double dropout_prob);

// The attrs of conv2d(_grad), validated: strides, paddings and dilations
// have two values (height, width), strides and dilations >= 1, paddings
// >= 0 (added on both sides), groups >= 1.
struct Conv2DParams {
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
};
absl::StatusOr<Conv2DParams> ReadConv2DParams(const OpDesc& op);

// The geometry of conv2d: Input [n, c, h, w] (NCHW), Filter [m, c / groups,
// kh, kw], Output [n, m, oh, ow] with
//   oh = (h + 2 * pad_h - (dilation_h * (kh - 1) + 1)) / stride_h + 1
// (floor), likewise ow. Dims not known yet (-1, at build time) give -1.
struct Conv2DGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t m = 0, kh = 0, kw = 0;
  int64_t oh = 0, ow = 0;
  Conv2DParams p;
  Shape output;
};
// InvalidArgument naming the op, the shapes and the attrs for ranks other
// than 4, c != Filter.dim(1) * groups, m not a multiple of groups, or an
// output dim below 1.
absl::StatusOr<Conv2DGeometry> Conv2DShape(absl::string_view op, const Shape& input,
                                           const Shape& filter, const Conv2DParams& p);

// The attrs of pool2d(_grad), validated: pooling_type "max" or "avg";
// ksize, strides and paddings of two values (height, width) with ksize and
// strides >= 1 and 0 <= padding < ksize; with global_pooling the window is
// the whole plane (ksize is ignored, may be empty; no padding).
struct Pool2DParams {
  bool max = true;
  int64_t kh = 1, kw = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  bool global = false;
  bool exclusive = true;
};
absl::StatusOr<Pool2DParams> ReadPool2DParams(const OpDesc& op);

// The geometry of pool2d on X [n, c, h, w]: Out [n, c, oh, ow] with
// oh = (h + 2 * pad_h - kh) / stride_h + 1 (floor), likewise ow; for global
// pooling kh = h, kw = w, no padding, oh = ow = 1. Unknown dims give -1.
struct Pool2DGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t oh = 0, ow = 0;
  Pool2DParams p;  // with the window of global pooling filled in
  Shape out;
};
// InvalidArgument naming the op, X's shape and the attrs for a rank other
// than 4 or a window larger than the padded plane.
absl::StatusOr<Pool2DGeometry> Pool2DShape(absl::string_view op, const Shape& x,
                                           const Pool2DParams& p);

// layer_norm of X normalizes each of `rows` = prod(X.dims[:axis]) rows of
// `cols` = prod(X.dims[axis:]) elements (-1 if a dim is not known yet);
// axis is attr begin_norm_axis, negative counting from the end.
struct LayerNormDims {
  int axis = 1;
  int64_t rows = 1, cols = 1;
};
// InvalidArgument naming the op and X's shape for an axis outside
// [-rank, rank) or empty rows (cols == 0).
absl::StatusOr<LayerNormDims> LayerNormShape(absl::string_view op, const Shape& x,
                                             int64_t begin_norm_axis);

// self_attention of QKV [batch, seq, 3 * width]: `heads` heads of head_dim =
// width / heads columns each (-1 where a dim is not known yet). scale is the
// attr, or 1 / sqrt(head_dim) where the attr is 0.
struct AttentionDims {
  int64_t batch = 0, seq = 0, width = 0, heads = 1, head_dim = 0;
  double scale = 0;
  // Out's shape [batch, seq, width] and Lse's [batch, heads, seq].
  Shape OutShape() const { return Shape({batch, seq, width}); }
  Shape LseShape() const { return Shape({batch, heads, seq}); }
};
// InvalidArgument naming the op for a QKV that is not rank 3, a last dim not
// divisible by 3 * num_heads, num_heads < 1, or a scale that is negative or
// not finite.
absl::StatusOr<AttentionDims> AttentionShape(absl::string_view op, const Shape& qkv,
                                             int64_t num_heads, double scale);

}  // namespace tandem

#endif  // TANDEM_OPS_NN_SHAPE_FNS_H_
