#include "backends/cpu/cpu_policy.h"

#include <omp.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "oneapi/dnnl/dnnl.h"
#include "oneapi/dnnl/dnnl_debug.h"

// Converts a failed oneDNN call into an Internal error with file:line and
// the expression; oneDNN's C API reports errors by status, never throws.
#define TANDEM_DNNL_RETURN_IF_ERROR(expr)                                                          \
  do {                                                                                             \
    const dnnl_status_t tandem_dnnl_status_ = (expr);                                              \
    if (tandem_dnnl_status_ != dnnl_success) {                                                     \
      return absl::InternalError(absl::StrCat(__FILE__, ":", __LINE__, ": ", #expr,                \
                                              " failed: ", dnnl_status2str(tandem_dnnl_status_))); \
    }                                                                                              \
  } while (0)

namespace tandem {

void CpuPolicy::ParallelFor(int64_t n, int64_t grain,
                            absl::FunctionRef<void(int64_t, int64_t)> fn) {
  if (n <= 0) return;
  const int64_t threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  // Every task gets at least `grain` items.
  const int64_t tasks = std::min(threads, std::max<int64_t>(1, n / std::max<int64_t>(1, grain)));
  if (tasks == 1) {
    fn(0, n);
    return;
  }
#pragma omp parallel for num_threads(tasks) schedule(static, 1)
  for (int64_t t = 0; t < tasks; ++t) fn(n * t / tasks, n * (t + 1) / tasks);
}

absl::Status CpuPolicy::Gemm(const GemmArgs<float>& g) {
  TANDEM_DNNL_RETURN_IF_ERROR(dnnl_sgemm(g.trans_a ? 'T' : 'N', g.trans_b ? 'T' : 'N', g.m, g.n,
                                         g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.beta, g.c, g.ldc));
  return absl::OkStatus();
}

absl::Status CpuPolicy::Gemm(const GemmArgs<double>& g) {
  BlockedGemm<double, CpuPolicy>(g);
  return absl::OkStatus();
}

}  // namespace tandem
