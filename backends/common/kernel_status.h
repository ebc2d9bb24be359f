// Statuses from the shared kernels' helpers, tagged with the op.
//
//   return WithOpName(*ctx, BatchedGemm<T, Policy>(...));  // "op 'matmul': oneDNN ..."
//
// Header-only, stateless, thread-safe.
#ifndef TANDEM_BACKENDS_COMMON_KERNEL_STATUS_H_
#define TANDEM_BACKENDS_COMMON_KERNEL_STATUS_H_

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "framework/kernel/kernel_context.h"

namespace tandem {

// `status` with "op '<type>': " prefixed to its message (OK stays OK),
// e.g. for a backend GEMM's error.
inline absl::Status WithOpName(const KernelContext& ctx, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat("op '", ctx.op().type, "': ", status.message()));
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_KERNEL_STATUS_H_
