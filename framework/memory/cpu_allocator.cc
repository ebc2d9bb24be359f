#include "framework/memory/cpu_allocator.h"

#include <sys/mman.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"

namespace tandem {
namespace {
constexpr size_t kAlignment = 64;

size_t RoundUp(size_t bytes, size_t multiple) {
  return ((bytes + multiple - 1) / multiple) * multiple;
}

size_t Rounded(size_t bytes) {
  if (bytes >= CpuAllocator::kHugePageMinBytes) return RoundUp(bytes, CpuAllocator::kHugePageBytes);
  const size_t rounded = RoundUp(bytes, kAlignment);
  return rounded == 0 ? kAlignment : rounded;
}

// Fresh memory for a block of `rounded` bytes (see Rounded); nullptr when
// the system refuses.
void* AllocateFresh(size_t rounded) {
  if (rounded < CpuAllocator::kHugePageMinBytes) return std::aligned_alloc(kAlignment, rounded);
  void* p = std::aligned_alloc(CpuAllocator::kHugePageBytes, rounded);
  // A hint: without transparent huge pages (or with them off) the block
  // simply keeps 4 KiB pages.
  if (p != nullptr) madvise(p, rounded, MADV_HUGEPAGE);
  return p;
}
}  // namespace

CpuAllocator::CpuAllocator(int64_t bytes_limit)
    : stats_(CPUPlace(), bytes_limit), small_(kSmallMaxBytes / kAlignment) {}

CpuAllocator::~CpuAllocator() { ReleaseCached(); }

CpuAllocator* CpuAllocator::Default() {
  static CpuAllocator* allocator = new CpuAllocator();
  return allocator;
}

absl::StatusOr<void*> CpuAllocator::Allocate(size_t bytes) {
  RETURN_IF_ERROR(stats_.Reserve(bytes));
  const size_t rounded = Rounded(bytes);
  if (rounded <= kSmallMaxBytes) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<void*>& stack = small_[rounded / kAlignment - 1];
    if (!stack.empty()) {
      void* p = stack.back();
      stack.pop_back();
      small_bytes_ -= rounded;
      cached_bytes_ -= rounded;
      return p;
    }
  } else if (rounded >= kCacheMinBytes) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cached_.find(rounded);
    if (it != cached_.end()) {
      void* p = it->second;
      cached_.erase(it);
      cached_bytes_ -= rounded;
      return p;
    }
  }
  void* p = AllocateFresh(rounded);
  if (p == nullptr) {
    stats_.Release(bytes);
    return absl::ResourceExhaustedError(
        absl::StrCat("out of host memory: the system refused ", HumanBytes(bytes), " (",
                     HumanBytes(stats_.bytes_in_use()), " in use by Tandem)"));
  }
  return p;
}

void CpuAllocator::Deallocate(void* ptr, size_t bytes) {
  stats_.Release(bytes);
  const size_t rounded = Rounded(bytes);
  if (rounded <= kSmallMaxBytes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (small_bytes_ + rounded <= kSmallCacheMaxBytes) {
      small_[rounded / kAlignment - 1].push_back(ptr);
      small_bytes_ += rounded;
      cached_bytes_ += rounded;
      return;
    }
  } else if (rounded >= kCacheMinBytes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_bytes_ - small_bytes_ + rounded <= kCacheMaxBytes) {
      cached_.emplace(rounded, ptr);
      cached_bytes_ += rounded;
      return;
    }
  }
  std::free(ptr);
}

void CpuAllocator::ReleaseCached() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [size, p] : cached_) std::free(p);
  cached_.clear();
  for (std::vector<void*>& stack : small_) {
    for (void* p : stack) std::free(p);
    stack.clear();
  }
  small_bytes_ = 0;
  cached_bytes_ = 0;
}

AllocatorStats CpuAllocator::GetStats() const {
  AllocatorStats s = stats_.Snapshot();
  s.bytes_reserved = s.bytes_in_use + static_cast<int64_t>(cached_bytes_.load());
  return s;
}

}  // namespace tandem
