#include "framework/memory/allocator.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "framework/base/status_macros.h"

namespace tandem {

std::string HumanBytes(int64_t bytes) {
  static const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return absl::StrCat(bytes, " bytes");
  double v = static_cast<double>(bytes);
  int unit = -1;
  while (v >= 1024 && unit < 3) {
    v /= 1024;
    ++unit;
  }
  return absl::StrFormat("%d bytes (%.1f %s)", bytes, v, kUnits[unit]);
}

std::string ShortBytes(int64_t bytes) {
  const std::string human = HumanBytes(bytes);  // "1536 bytes (1.5 KiB)"
  const size_t open = human.find('(');
  return open == std::string::npos ? human : human.substr(open + 1, human.size() - open - 2);
}

namespace {
std::atomic<const AllocationFaultHook*> fault_hook{nullptr};
}  // namespace

void SetAllocationFaultHookForTesting(const AllocationFaultHook* hook) { fault_hook.store(hook); }

absl::Status MemoryStats::Reserve(size_t bytes) {
  if (const AllocationFaultHook* hook = fault_hook.load(std::memory_order_acquire)) {
    RETURN_IF_ERROR((*hook)(place_, bytes));
  }
  const int64_t want = static_cast<int64_t>(bytes);
  const int64_t limit = limit_.load();
  int64_t cur = in_use_.load();
  while (true) {
    if (limit > 0 && cur + want > limit) {
      return absl::ResourceExhaustedError(
          absl::StrCat("out of memory on ", place_.ToString(), ": requested ", HumanBytes(want),
                       ", in use ", HumanBytes(cur), ", limit ", HumanBytes(limit)));
    }
    if (in_use_.compare_exchange_weak(cur, cur + want)) break;
  }
  int64_t now = cur + want;
  int64_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  num_allocs_.fetch_add(1);
  return absl::OkStatus();
}

void MemoryStats::Release(size_t bytes) { in_use_.fetch_sub(static_cast<int64_t>(bytes)); }

AllocatorStats MemoryStats::Snapshot() const {
  AllocatorStats s;
  s.bytes_in_use = in_use_.load();
  s.peak_bytes_in_use = peak_.load();
  s.bytes_limit = limit_.load();
  s.bytes_reserved = std::max(reserved_.load(), s.bytes_in_use);
  s.num_allocs = num_allocs_.load();
  return s;
}

absl::StatusOr<std::shared_ptr<Buffer>> Buffer::Allocate(Allocator* allocator, size_t size) {
  ASSIGN_OR_RETURN(void* data, allocator->Allocate(size));
  return std::make_shared<Buffer>(Key(), allocator, data, size);
}

Buffer::~Buffer() { allocator_->Deallocate(data_, size_); }

}  // namespace tandem
