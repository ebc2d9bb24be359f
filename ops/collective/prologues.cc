#include "ops/collective/prologues.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/attr.h"
#include "framework/types/shape.h"

namespace tandem {

absl::Status CollectiveAttrs::Read(const OpDesc& op) {
  ASSIGN_OR_RETURN(ring_id, GetAttr<int64_t>(op.attrs, "ring_id", op.type));
  ASSIGN_OR_RETURN(nranks, GetAttr<int64_t>(op.attrs, "nranks", op.type));
  ASSIGN_OR_RETURN(rank, GetAttr<int64_t>(op.attrs, "rank", op.type));
  if (op.attrs.count("scale")) {
    ASSIGN_OR_RETURN(scale, GetAttr<double>(op.attrs, "scale", op.type));
  }
  if (op.attrs.count("root")) {
    ASSIGN_OR_RETURN(root, GetAttr<int64_t>(op.attrs, "root", op.type));
  }
  if (nranks < 1 || rank < 0 || rank >= nranks || (ring_id == -1 && nranks != 1)) {
    return absl::InvalidArgumentError(absl::StrCat("op '", op.type, "': ring_id ", ring_id,
                                                   ", nranks ", nranks, ", rank ", rank,
                                                   " do not make a rank of a group"));
  }
  return absl::OkStatus();
}

namespace prologue {

absl::StatusOr<AllGatherArgs> GetAllGatherArgs(KernelContext* ctx, int64_t nranks) {
  AllGatherArgs a;
  a.in = ctx->InputVar("X");
  a.out = ctx->OutputVar("Out");
  if (a.in == nullptr || a.out == nullptr) return ctx->InvalidArgument("X and Out must be bound");
  a.sparse = a.in->is_selected_rows();
  if (a.sparse) {
    a.x = &a.in->selected_rows().value();
  } else {
    ASSIGN_OR_RETURN(a.x, ctx->InputTensor("X"));
  }
  if (a.x->shape().rank() == 0) return ctx->InvalidArgument("X must have at least one dimension");
  Shape::Dims dims = a.x->shape().dims();
  dims[0] *= nranks;
  ASSIGN_OR_RETURN(a.value, ctx->AllocateOutput("Out", a.x->dtype(), Shape(dims)));
  return a;
}

}  // namespace prologue
}  // namespace tandem
