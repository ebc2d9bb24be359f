#include "backends/cuda/nccl_comms.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cuda/cuda_device_guard.h"
#include "glog/logging.h"

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

namespace {

// The device sets made so far. Never freed itself: DestroyAll, registered
// with atexit when the first set is made (after CUDA was initialised, so it
// runs before CUDA's own teardown), destroys the communicators at exit.
struct DeviceSets {
  std::mutex mu;
  std::map<std::vector<int>, std::unique_ptr<NcclDeviceSet>> sets;
};
DeviceSets& Sets() {
  static auto* sets = new DeviceSets();
  return *sets;
}

void DestroyDeviceSetsAtExit() { NcclDeviceSet::DestroyAll().IgnoreError(); }

}  // namespace

NcclDeviceSet::~NcclDeviceSet() {
  for (size_t rank = 0; rank < comms_.size(); ++rank) {
    if (comms_[rank] == nullptr) continue;
    const CudaDeviceGuard on(ordinals_[rank]);
    ncclCommDestroy(comms_[rank]);  // frees what ncclCommInitAll allocated
  }
}

absl::Status NcclDeviceSet::DestroyAll() {
  DeviceSets& d = Sets();
  std::lock_guard<std::mutex> lock(d.mu);
  d.sets.clear();
  return absl::OkStatus();
}

absl::StatusOr<const NcclDeviceSet*> NcclDeviceSet::For(const std::vector<int>& ordinals) {
  if (ordinals.empty() ||
      std::set<int>(ordinals.begin(), ordinals.end()).size() != ordinals.size()) {
    return absl::InvalidArgumentError(absl::StrCat("NCCL device set [",
                                                   absl::StrJoin(ordinals, ", "),
                                                   "]: needs one rank per GPU, at least one"));
  }
  DeviceSets& d = Sets();
  std::lock_guard<std::mutex> lock(d.mu);
  auto it = d.sets.find(ordinals);
  if (it != d.sets.end()) return it->second.get();
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
  static const bool destroyed_at_exit = [] {
    const bool registered = std::atexit(&DestroyDeviceSetsAtExit) == 0;
    if (!registered) LOG(WARNING) << "NCCL: the communicators will not be destroyed at exit";
    return registered;
  }();
  (void)destroyed_at_exit;
  auto set = std::unique_ptr<NcclDeviceSet>(new NcclDeviceSet(ordinals, std::move(comms)));
  const NcclDeviceSet* result = set.get();
  d.sets.emplace(ordinals, std::move(set));
  return result;
}

namespace {

// The communicators across processes by group key, with their GPU. Never
// freed itself: DestroyCommsAcrossProcesses, registered with atexit when the
// first is made (CUDA initialised by then), destroys them.
struct CommsAcrossProcesses {
  std::mutex mu;
  std::map<int64_t, std::pair<ncclComm_t, int>> comms;  // key -> (comm, ordinal)
};
CommsAcrossProcesses& AcrossProcesses() {
  static auto* comms = new CommsAcrossProcesses();
  return *comms;
}

void DestroyCommsAcrossProcessesAtExit() { DestroyCommsAcrossProcesses().IgnoreError(); }

}  // namespace

absl::Status DestroyCommsAcrossProcesses() {
  CommsAcrossProcesses& c = AcrossProcesses();
  std::lock_guard<std::mutex> lock(c.mu);
  absl::Status first;
  for (const auto& [key, comm_on] : c.comms) {
    const CudaDeviceGuard on(comm_on.second);
    first.Update(NcclStatus(ncclCommAbort(comm_on.first), "ncclCommAbort", __FILE__, __LINE__));
  }
  c.comms.clear();
  return first;
}

absl::StatusOr<ncclComm_t> NcclCommAcrossProcesses(int64_t key, ProcessGroup* processes,
                                                   int ordinal, absl::Duration deadline) {
  CommsAcrossProcesses& c = AcrossProcesses();
  std::lock_guard<std::mutex> lock(c.mu);
  auto it = c.comms.find(key);
  if (it != c.comms.end()) return it->second.first;
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (processes->rank() == 0) {
    const absl::Status made =
        NcclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId", __FILE__, __LINE__);
    if (!made.ok()) {
      processes->Abort(made);  // the others would wait for the id
      return made;
    }
  }
  const std::string what = absl::StrCat("NCCL unique id of the ", processes->name(), " job's ",
                                        processes->size(), " ranks (group ", key, ")");
  absl::Status s = processes->Broadcast(&id, sizeof id, 0, deadline, what);
  ncclComm_t comm = nullptr;
  if (s.ok()) {
    const CudaDeviceGuard on(ordinal);
    s = NcclStatus(ncclCommInitRank(&comm, processes->size(), id, processes->rank()),
                   "ncclCommInitRank", __FILE__, __LINE__);
  }
  if (!s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("NCCL communicator of rank ", processes->rank(), " of ",
                                     processes->size(), " on gpu:", ordinal, ": ", s.message()));
  }
  static const bool destroyed_at_exit = [] {
    const bool registered = std::atexit(&DestroyCommsAcrossProcessesAtExit) == 0;
    if (!registered) LOG(WARNING) << "NCCL: the communicators will not be destroyed at exit";
    return registered;
  }();
  (void)destroyed_at_exit;
  c.comms.emplace(key, std::make_pair(comm, ordinal));
  return comm;
}

}  // namespace cuda
}  // namespace tandem
