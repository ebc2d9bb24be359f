// The execution policy of the cpu backend (see backends/common/serial_policy.h
// for the concept): OpenMP threads for loops, oneDNN's sgemm for float32
// products and the shared BlockedGemm, threaded, for float64 (oneDNN 2.6 has
// no double-precision GEMM).
//
//   BroadcastAdd<float, CpuPolicy>(layout, x, y, out);
//   RETURN_IF_ERROR(CpuPolicy::Gemm(args));
//
// Loops shorter than their grain run on the calling thread, as does every
// call made from inside a parallel region (no nested parallelism). The
// thread count is OpenMP's (OMP_NUM_THREADS, default: the CPUs this process
// may run on). Synchronous and thread-safe.
#ifndef TANDEM_BACKENDS_CPU_CPU_POLICY_H_
#define TANDEM_BACKENDS_CPU_CPU_POLICY_H_

#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "backends/common/gemm.h"

namespace tandem {

struct CpuPolicy {
  static void ParallelFor(int64_t n, int64_t grain, absl::FunctionRef<void(int64_t, int64_t)> fn);
  // Internal error naming the oneDNN call and status if it fails.
  static absl::Status Gemm(const GemmArgs<float>& args);
  static absl::Status Gemm(const GemmArgs<double>& args);
};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_CPU_CPU_POLICY_H_
