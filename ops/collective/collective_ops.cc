// The collective ops of data parallelism (framework/parallel): each runs on
// every rank of a group, rank `rank` of `nranks`, the group being the one
// registered as `ring_id` (CollectiveGroup; NCCL communicators on gpu). With
// ring_id -1 there is no group: nranks must be 1 and the op acts on its own
// inputs (a collective of one rank). The ranks' calls meet by the name of
// the op's first output, which the replicated programs share.
//
// The data-parallel transform inserts them after the backward pass and into
// the startup program (gradients all-reduced, parameters broadcast), so none
// has a gradient maker: nothing differentiates through them.
#include <limits>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"

namespace tandem {
namespace {

// nranks >= 1, 0 <= rank < nranks, ring_id >= -1, and ring -1 means one rank.
absl::Status CheckGroupAttrs(InferShapeContext* ctx) {
  ASSIGN_OR_RETURN(int64_t ring, ctx->Attr<int64_t>("ring_id"));
  ASSIGN_OR_RETURN(int64_t nranks, ctx->Attr<int64_t>("nranks"));
  ASSIGN_OR_RETURN(int64_t rank, ctx->Attr<int64_t>("rank"));
  if (nranks < 1 || rank < 0 || rank >= nranks || ring < -1) {
    return ctx->Error(absl::StrCat("ring_id ", ring, ", nranks ", nranks, ", rank ", rank,
                                   ": need ring_id >= -1, nranks >= 1 and 0 <= rank < nranks"));
  }
  if (ring == -1 && nranks != 1) {
    return ctx->Error(absl::StrCat("ring_id -1 (no group) takes nranks 1, got ", nranks));
  }
  return absl::OkStatus();
}

// Out[i] has X[i]'s meta, dense numbers only (a collective moves values);
// Out holds as many variables as X.
absl::Status SameAsInputs(InferShapeContext* ctx, bool floating_only) {
  RETURN_IF_ERROR(CheckGroupAttrs(ctx));
  const int n = ctx->InputCount("X");
  if (n == 0) return ctx->Error("X holds no variable");
  auto out = ctx->op().outputs.find("Out");
  const int outs = out == ctx->op().outputs.end() ? 0 : static_cast<int>(out->second.size());
  if (outs != n) {
    return ctx->Error(absl::StrCat("Out holds ", outs, " variable(s) for X's ", n,
                                   ": each X[i] needs its Out[i]"));
  }
  for (int i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X", i));
    const bool floating = x.dtype == DataType::kFloat32 || x.dtype == DataType::kFloat64;
    const bool integer = x.dtype == DataType::kInt32 || x.dtype == DataType::kInt64;
    if (x.selected_rows || !(floating || (integer && !floating_only))) {
      return ctx->Error(absl::StrCat(
          "X[", i, "] must be a dense ", floating_only ? "floating-point" : "numeric",
          " tensor, got ", x.selected_rows ? "SelectedRows of " : "", DataTypeName(x.dtype)));
    }
    ctx->SetOutput("Out", x, i);
  }
  return absl::OkStatus();
}

REGISTER_OP("c_allreduce_sum")
    .Doc(
        "Out[i] = scale * (X[i] of rank 0 + ... + X[i] of rank nranks-1), on every rank; summed "
        "in rank order where the implementation fixes one (host, sim), so every rank gets the "
        "same bits. Out may be X (in place). scale 1/nranks averages.")
    .DuplicableInput("X")
    .DuplicableOutput("Out")
    .Attr<int64_t>("ring_id", -1)
    .Attr<int64_t>("nranks", 1)
    .Attr<int64_t>("rank", 0)
    .Attr<double>("scale", 1.0)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(double scale, ctx->Attr<double>("scale"));
      RETURN_IF_ERROR(SameAsInputs(ctx, /*floating_only=*/scale != 1.0));
      return absl::OkStatus();
    });

REGISTER_OP("c_broadcast")
    .Doc("Out[i] = X[i] of rank `root`, on every rank (Out may be X: in place).")
    .DuplicableInput("X")
    .DuplicableOutput("Out")
    .Attr<int64_t>("ring_id", -1)
    .Attr<int64_t>("nranks", 1)
    .Attr<int64_t>("rank", 0)
    .Attr<int64_t>("root", 0)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      RETURN_IF_ERROR(SameAsInputs(ctx, /*floating_only=*/false));
      ASSIGN_OR_RETURN(int64_t root, ctx->Attr<int64_t>("root"));
      ASSIGN_OR_RETURN(int64_t nranks, ctx->Attr<int64_t>("nranks"));
      if (root < 0 || root >= nranks) {
        return ctx->Error(absl::StrCat("root ", root, " is not a rank of 0..", nranks - 1));
      }
      return absl::OkStatus();
    });

REGISTER_OP("c_allgather")
    .Doc(
        "Out = the ranks' X concatenated along axis 0 in rank order, on every rank, times "
        "scale. A dense X [d0, ...] gives [nranks * d0, ...] (every rank's X has one shape); a "
        "SelectedRows X (a sparse gradient) gives the SelectedRows of every rank's rows and "
        "values, in rank order, values times scale (1/nranks averages sparse gradients).")
    .Input("X")
    .Output("Out")
    .Attr<int64_t>("ring_id", -1)
    .Attr<int64_t>("nranks", 1)
    .Attr<int64_t>("rank", 0)
    .Attr<double>("scale", 1.0)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      RETURN_IF_ERROR(CheckGroupAttrs(ctx));
      ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
      ASSIGN_OR_RETURN(int64_t nranks, ctx->Attr<int64_t>("nranks"));
      ASSIGN_OR_RETURN(double scale, ctx->Attr<double>("scale"));
      const bool floating = x.dtype == DataType::kFloat32 || x.dtype == DataType::kFloat64;
      if (x.dtype == DataType::kBool || (scale != 1.0 && !floating)) {
        return ctx->Error(absl::StrCat("X must be ", scale != 1.0 ? "floating-point" : "numeric",
                                       " (scale ", scale, "), got ", DataTypeName(x.dtype)));
      }
      if (x.shape.rank() == 0)
        return ctx->Error("X must have at least one dimension, got a scalar");
      if (!x.selected_rows && x.shape.dim(0) >= 0) {
        auto dims = x.shape.dims();
        if (dims[0] > std::numeric_limits<int64_t>::max() / nranks) {
          return ctx->Error(absl::StrCat("X's first dim ", dims[0], " times nranks ", nranks,
                                         " overflows int64"));
        }
        dims[0] *= nranks;
        x.shape = Shape(dims);
      }
      ctx->SetOutput("Out", x);
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
