#include "ops/optimizer/shape_fns.h"

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace {

// "float32[5, 3]", "float32[5, 3] (SelectedRows)".
std::string Describe(const TensorMeta& m) {
  return absl::StrCat(DataTypeName(m.dtype), m.shape.ToString(),
                      m.selected_rows ? " (SelectedRows)" : "");
}

bool SameShape(const Shape& a, const Shape& b) {
  if (a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i) {
    if (a.dim(i) != b.dim(i) && a.dim(i) != -1 && b.dim(i) != -1) return false;
  }
  return true;
}

}  // namespace

absl::Status CheckSgdArgs(const OpDesc& op, const TensorMeta& param, const TensorMeta& grad,
                          const TensorMeta& learning_rate) {
  RETURN_IF_ERROR(CheckFloating(op.type, "Param", param.dtype));
  if (grad.dtype != param.dtype || !SameShape(grad.shape, param.shape)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "op '", op.type, "': Grad '", op.Input("Grad"), "' is ", Describe(grad), " but Param '",
        op.Input("Param"), "' is ", Describe(param), "; they must have the same dtype and shape"));
  }
  const absl::StatusOr<int64_t> lr_size = learning_rate.shape.NumElements();
  if (learning_rate.dtype != DataType::kFloat32 || (lr_size.ok() && *lr_size != 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op.type, "': LearningRate '", op.Input("LearningRate"),
                     "' must be float32 with one element, got ", Describe(learning_rate)));
  }
  return absl::OkStatus();
}

}  // namespace tandem
