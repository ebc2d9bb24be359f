// An execution policy for tests of the shared kernels: ParallelFor ignores
// the grain and calls fn on ranges of kChunk items, in order, on the calling
// thread, so range-boundary handling is exercised without threads.
//
//   BroadcastAdd<float, ChunkingPolicy<3>>(layout, x, y, out);
//
// Stateless and thread-safe.
#ifndef TANDEM_BACKENDS_COMMON_TESTING_POLICY_H_
#define TANDEM_BACKENDS_COMMON_TESTING_POLICY_H_

#include <algorithm>
#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "backends/common/gemm.h"

namespace tandem {

template <int64_t kChunk>
struct ChunkingPolicy {
  static void ParallelFor(int64_t n, int64_t /*grain*/,
                          absl::FunctionRef<void(int64_t, int64_t)> fn) {
    for (int64_t begin = 0; begin < n; begin += kChunk) {
      fn(begin, std::min(n, begin + kChunk));
    }
  }

  template <typename T>
  static absl::Status Gemm(const GemmArgs<T>& args) {
    BlockedGemm<T, ChunkingPolicy>(args);
    return absl::OkStatus();
  }
};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_TESTING_POLICY_H_
