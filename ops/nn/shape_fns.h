// Shape functions of the nn ops (lookup_table, l2_normalize), used by their
// schemas (ops/nn/*_op.cc) and by kernels, so both agree.
//
//   ASSIGN_OR_RETURN(Shape out, LookupTableShape("lookup_table", ids, w));
//   ASSIGN_OR_RETURN(int64_t pad, PaddingRow("lookup_table", padding_idx, rows));
#ifndef TANDEM_OPS_NN_SHAPE_FNS_H_
#define TANDEM_OPS_NN_SHAPE_FNS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
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

}  // namespace tandem

#endif  // TANDEM_OPS_NN_SHAPE_FNS_H_
