#include "backends/common/nn_kernels.h"

namespace tandem {
namespace nn_kernels_internal {

absl::Status CheckIds(const KernelContext& ctx, const prologue::Lookup& l) {
  const int64_t* ids = l.ids->data<int64_t>();
  const int64_t bad = FirstOutOfRange(ids, l.n, l.rows);
  if (bad < 0) return absl::OkStatus();
  return prologue::BadIdError(ctx.op().type, ctx.InputName("W"), ids[bad], bad, l.rows);
}

}  // namespace nn_kernels_internal
}  // namespace tandem
