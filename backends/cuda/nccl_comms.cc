#include "backends/cuda/nccl_comms.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cuda/cuda_device_guard.h"

namespace tandem {
namespace cuda {

absl::Status NcclStatus(ncclResult_t result, const char* expr, const char* file, int line) {
  if (result == ncclSuccess) return absl::OkStatus();
  const std::string message =
      absl::StrCat(file, ":", line, ": ", expr, " failed: ", ncclGetErrorString(result), " (",
                   ncclGetLastError(nullptr), ")");
  switch (result) {
    case ncclSystemError:
    case ncclRemoteError:
      return absl::UnavailableError(message);
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      return absl::InvalidArgumentError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::StatusOr<const NcclDeviceSet*> NcclDeviceSet::For(const std::vector<int>& ordinals) {
  if (ordinals.empty() ||
      std::set<int>(ordinals.begin(), ordinals.end()).size() != ordinals.size()) {
    return absl::InvalidArgumentError(absl::StrCat("NCCL device set [",
                                                   absl::StrJoin(ordinals, ", "),
                                                   "]: needs one rank per GPU, at least one"));
  }
  static std::mutex* mu = new std::mutex();
  // Never destroyed: communicators live until the process exits.
  static auto* sets = new std::map<std::vector<int>, std::unique_ptr<NcclDeviceSet>>();
  std::lock_guard<std::mutex> lock(*mu);
  auto it = sets->find(ordinals);
  if (it != sets->end()) return it->second.get();
  std::vector<ncclComm_t> comms(ordinals.size());
  absl::Status made;
  {
    // ncclCommInitAll switches devices while it works; restore ours after.
    const CudaDeviceGuard keep(ordinals[0]);
    made = NcclStatus(
        ncclCommInitAll(comms.data(), static_cast<int>(ordinals.size()), ordinals.data()),
        "ncclCommInitAll", __FILE__, __LINE__);
  }
  if (!made.ok()) {
    return absl::Status(made.code(),
                        absl::StrCat("NCCL communicators of GPUs [", absl::StrJoin(ordinals, ", "),
                                     "]: ", made.message()));
  }
  auto set = std::unique_ptr<NcclDeviceSet>(new NcclDeviceSet(ordinals, std::move(comms)));
  const NcclDeviceSet* result = set.get();
  sets->emplace(ordinals, std::move(set));
  return result;
}

}  // namespace cuda
}  // namespace tandem
