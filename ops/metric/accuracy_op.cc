// accuracy: the fraction of rows whose label is among the top-k scores.
#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/loss/shape_fns.h"

namespace tandem {
namespace {

REGISTER_OP("accuracy")
    .Doc(
        "Out holds scores [..., C] (float32 or float64), Label the int64 classes [..., 1] or "
        "[...]. A row is correct when fewer than k classes rank above its label, ranking by "
        "score, ties broken by the lower class index. Correct (int64 [1]) counts the correct "
        "rows, Total (int64 [1]) the rows, Accuracy (float32 [1]) = Correct / Total, or 0 "
        "when there are no rows. A label outside [0, C) is InvalidArgument. No gradient.")
    .Input("Out")
    .Input("Label")
    .Output("Accuracy")
    .Output("Correct")
    .Output("Total")
    .Attr<int64_t>("k", 1, "how many top scores a label may be among; >= 1")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta out, ctx->Input("Out"));
      ASSIGN_OR_RETURN(TensorMeta label, ctx->Input("Label"));
      RETURN_IF_ERROR(ClassRowsShape(ctx->op().type, "Out", out, label).status());
      ASSIGN_OR_RETURN(int64_t k, ctx->Attr<int64_t>("k"));
      if (k < 1) return ctx->Error(absl::StrCat("k must be >= 1, got ", k));
      ctx->SetOutput("Accuracy", TensorMeta{DataType::kFloat32, Shape({1})});
      ctx->SetOutput("Correct", TensorMeta{DataType::kInt64, Shape({1})});
      ctx->SetOutput("Total", TensorMeta{DataType::kInt64, Shape({1})});
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
