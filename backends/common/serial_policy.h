// Execution policies: how the shared kernels of backends/common run their
// loops on a backend. A policy is a type with two static members:
//
//   struct MyPolicy {
//     // Calls fn(begin, end) on disjoint ranges covering [0, n), each of at
//     // least `grain` items (the last one may be shorter), possibly on
//     // several threads at once; returns when all calls have returned.
//     static void ParallelFor(int64_t n, int64_t grain,
//                             absl::FunctionRef<void(int64_t, int64_t)> fn);
//     // C = alpha * op(A) * op(B) + beta * C (gemm.h) for m, n, k > 0.
//     template <typename T>   // or overloads for float and double
//     static absl::Status Gemm(const GemmArgs<T>& args);
//   };
//
//   const HostKernelsRegistrar<SerialPolicy> host_kernels("sim");  // host_kernels.h
//
// SerialPolicy runs everything on the calling thread with the portable
// BlockedGemm. Stateless and thread-safe.
#ifndef TANDEM_BACKENDS_COMMON_SERIAL_POLICY_H_
#define TANDEM_BACKENDS_COMMON_SERIAL_POLICY_H_

#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "backends/common/gemm.h"

namespace tandem {

struct SerialPolicy {
  static void ParallelFor(int64_t n, int64_t /*grain*/,
                          absl::FunctionRef<void(int64_t, int64_t)> fn) {
    if (n > 0) fn(0, n);
  }

  template <typename T>
  static absl::Status Gemm(const GemmArgs<T>& args) {
    BlockedGemm<T, SerialPolicy>(args);
    return absl::OkStatus();
  }
};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_SERIAL_POLICY_H_
