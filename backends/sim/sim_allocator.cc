#include "backends/sim/sim_allocator.h"

#include <utility>

#include "framework/base/status_macros.h"
#include "glog/logging.h"

namespace tandem {

SimAllocator::SimAllocator(Place place, int64_t bytes_limit, FreeScheduler schedule_free)
    : place_(place), stats_(place, bytes_limit), schedule_free_(std::move(schedule_free)) {}

absl::StatusOr<void*> SimAllocator::Allocate(size_t bytes) {
  RETURN_IF_ERROR(stats_.Reserve(bytes));
  absl::StatusOr<void*> p = backing_.Allocate(bytes);
  if (!p.ok()) {
    stats_.Release(bytes);
    return p.status();
  }
  std::lock_guard<std::mutex> lock(mu_);
  blocks_[reinterpret_cast<uintptr_t>(*p)] = Block{bytes, false};
  return *p;
}

void SimAllocator::Deallocate(void* ptr, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.find(reinterpret_cast<uintptr_t>(ptr));
    CHECK(it != blocks_.end() && it->second.size == bytes && !it->second.deallocated)
        << place_ << ": Deallocate(" << ptr << ", " << bytes << ") does not match a live block";
    it->second.deallocated = true;
  }
  stats_.Release(bytes);
  auto free = [this, ptr, bytes] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      blocks_.erase(reinterpret_cast<uintptr_t>(ptr));
    }
    backing_.Deallocate(ptr, bytes);
  };
  if (schedule_free_ != nullptr) {
    schedule_free_(std::move(free));
  } else {
    free();
  }
}

const SimAllocator::Block* SimAllocator::FindLocked(const void* ptr, size_t bytes) const {
  const uintptr_t start = reinterpret_cast<uintptr_t>(ptr);
  auto it = blocks_.upper_bound(start);  // first block starting after ptr
  if (it == blocks_.begin()) return nullptr;
  --it;
  return start + bytes <= it->first + it->second.size ? &it->second : nullptr;
}

bool SimAllocator::Owns(const void* ptr, size_t bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Block* block = FindLocked(ptr, bytes);
  return block != nullptr && !block->deallocated;
}

bool SimAllocator::Holds(const void* ptr, size_t bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  return FindLocked(ptr, bytes) != nullptr;
}

}  // namespace tandem
