#include "framework/autoplace/memory_budget.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "framework/device/device_registry.h"
#include "framework/memory/allocator.h"

namespace tandem {

namespace {
constexpr int64_t kMaxBudget = int64_t{1} << 50;  // 1 PiB: no device is larger
}  // namespace

absl::StatusOr<int64_t> ResolveMemoryBudget(const Place& device, int64_t requested,
                                            absl::string_view planner) {
  if (requested < 0 || requested > kMaxBudget) {
    return absl::InvalidArgumentError(
        absl::StrCat(planner, ": memory budget ", requested, " bytes is ",
                     requested < 0 ? "negative" : "more than 1 PiB, not a device's memory",
                     "; give 0 (what ", device.ToString(), " can hold) or a size in bytes"));
  }
  absl::StatusOr<Device*> found = DeviceRegistry::Global().GetDevice(device);
  if (!found.ok()) {
    return absl::Status(found.status().code(),
                        absl::StrCat(planner, " on ", device.ToString(),
                                     " (the executor's default place) needs that device: ",
                                     found.status().message()));
  }
  const AllocatorStats stats = (*found)->allocator()->GetStats();
  const int64_t capacity = stats.bytes_limit > 0 ? stats.bytes_limit : (*found)->TotalMemoryBytes();
  if (capacity > 0 && requested > capacity) {
    return absl::InvalidArgumentError(
        absl::StrCat(planner, ": memory budget ", requested, " bytes (", ShortBytes(requested),
                     ") is more than ", device.ToString(), " has: ", capacity, " bytes (",
                     ShortBytes(capacity), ")"));
  }
  if (requested > 0 || capacity <= 0 || device.is_host()) return requested;
  const int64_t margin = std::min<int64_t>(capacity / 20, int64_t{1} << 30);
  return std::max<int64_t>(capacity - stats.bytes_in_use - margin, 1);
}

}  // namespace tandem
