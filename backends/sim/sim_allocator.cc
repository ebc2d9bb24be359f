#include "backends/sim/sim_allocator.h"

#include "framework/base/status_macros.h"
#include "glog/logging.h"

namespace tandem {

SimAllocator::SimAllocator(Place place, int64_t bytes_limit)
    : place_(place), stats_(place, bytes_limit) {}

absl::StatusOr<void*> SimAllocator::Allocate(size_t bytes) {
  RETURN_IF_ERROR(stats_.Reserve(bytes));
  absl::StatusOr<void*> p = backing_.Allocate(bytes);
  if (!p.ok()) {
    stats_.Release(bytes);
    return p.status();
  }
  std::lock_guard<std::mutex> lock(mu_);
  blocks_.emplace(reinterpret_cast<uintptr_t>(*p), bytes);
  return *p;
}

void SimAllocator::Deallocate(void* ptr, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.find(reinterpret_cast<uintptr_t>(ptr));
    CHECK(it != blocks_.end() && it->second == bytes)
        << place_ << ": Deallocate(" << ptr << ", " << bytes << ") does not match a live block";
    blocks_.erase(it);
  }
  backing_.Deallocate(ptr, bytes);
  stats_.Release(bytes);
}

bool SimAllocator::Owns(const void* ptr, size_t bytes) const {
  const uintptr_t start = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = blocks_.upper_bound(start);  // first block starting after ptr
  if (it == blocks_.begin()) return false;
  --it;
  return start + bytes <= it->first + it->second;
}

}  // namespace tandem
