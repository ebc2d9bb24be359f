// fill_constant: Out = a tensor of `shape` filled with `value`, as `dtype`.
#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"

namespace tandem {
namespace {

REGISTER_OP("fill_constant")
    .Doc("Out: a tensor of `shape` with every element `value`, of type `dtype`.")
    .Output("Out")
    .RequiredAttr("shape", AttrType::kInts, "dims of Out, each >= 0")
    .Attr<double>("value", 0.0, "fill value, converted to dtype")
    .Attr<DataType>("dtype", DataType::kFloat32)
    .Constant()
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(std::vector<int64_t> dims, ctx->Attr<std::vector<int64_t>>("shape"));
      ASSIGN_OR_RETURN(DataType dtype, ctx->Attr<DataType>("dtype"));
      absl::StatusOr<Shape> shape = Shape::Make(dims);
      if (!shape.ok()) {
        return ctx->Error(absl::StrCat("attribute 'shape': ", shape.status().message()));
      }
      ctx->SetOutput("Out", TensorMeta{dtype, *shape});
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
