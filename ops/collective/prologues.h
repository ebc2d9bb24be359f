// Kernel prologues of the collective ops (ops/collective): the group
// attributes and c_allgather's input and output, which the host kernels
// (collective_kernels.h) and the NCCL kernels (backends/cuda) share, so both
// validate in the same order and fail with the same messages:
//
//   absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }
//   absl::Status Compute(KernelContext* ctx) override {
//     ASSIGN_OR_RETURN(const prologue::AllGatherArgs a,
//                      prologue::GetAllGatherArgs(ctx, attrs_.nranks));
//     ...  // a.x: X's values (of a SelectedRows X too); a.out: nranks times its rows
//   }
//
// Nothing here reads tensor data, so it works on any place. Stateless and
// thread-safe.
#ifndef TANDEM_OPS_COLLECTIVE_PROLOGUES_H_
#define TANDEM_OPS_COLLECTIVE_PROLOGUES_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/kernel/kernel_context.h"
#include "framework/op/op_desc.h"
#include "framework/tensor/tensor.h"

namespace tandem {

// The group attributes every collective op has: ring_id (the group; -1 for
// the op alone), nranks, rank, and scale (c_allreduce_sum, c_allgather) or
// root (c_broadcast) where the op has them. Read checks that they make a
// rank of a group (InvalidArgument naming the op otherwise).
struct CollectiveAttrs {
  int64_t ring_id = -1, nranks = 1, rank = 0;
  double scale = 1;
  int64_t root = 0;

  absl::Status Read(const OpDesc& op);
};

namespace prologue {

struct AllGatherArgs {
  const Variable* in = nullptr;  // X: a dense tensor or SelectedRows
  Variable* out = nullptr;
  bool sparse = false;        // X is SelectedRows
  const Tensor* x = nullptr;  // X's tensor (its values when sparse)
  Tensor* value = nullptr;    // allocated: x's dims with dim 0 times nranks
};

// X and Out bound, X of rank >= 1; allocates Out's tensor (for a sparse X,
// the values tensor, which the kernel then wraps in Out's SelectedRows).
absl::StatusOr<AllGatherArgs> GetAllGatherArgs(KernelContext* ctx, int64_t nranks);

}  // namespace prologue
}  // namespace tandem

#endif  // TANDEM_OPS_COLLECTIVE_PROLOGUES_H_
