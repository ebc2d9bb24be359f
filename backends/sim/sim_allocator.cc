#include "backends/sim/sim_allocator.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "glog/logging.h"

namespace tandem {
namespace {
constexpr size_t kAlignment = 64;
}  // namespace

SimAllocator::SimAllocator(Place place, int64_t bytes_limit)
    : place_(place), stats_(place, bytes_limit) {}

absl::StatusOr<void*> SimAllocator::Allocate(size_t bytes) {
  RETURN_IF_ERROR(stats_.Reserve(bytes));
  const size_t rounded = std::max(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr) {
    stats_.Release(bytes);
    return absl::ResourceExhaustedError(absl::StrCat(
        "out of memory on ", place_.ToString(), ": the system refused ",
        HumanBytes(bytes), " (", HumanBytes(stats_.bytes_in_use()), " in use)"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  blocks_.emplace(reinterpret_cast<uintptr_t>(p), bytes);
  return p;
}

void SimAllocator::Deallocate(void* ptr, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.find(reinterpret_cast<uintptr_t>(ptr));
    CHECK(it != blocks_.end() && it->second == bytes)
        << place_ << ": Deallocate(" << ptr << ", " << bytes
        << ") does not match a live block";
    blocks_.erase(it);
  }
  std::free(ptr);
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
