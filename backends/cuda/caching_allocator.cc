#include "backends/cuda/caching_allocator.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "glog/logging.h"

namespace tandem {
namespace cuda {
namespace {

// Larger requests cannot be rounded without overflow; no device has this much.
constexpr size_t kMaxRequest = size_t{1} << 60;

size_t RoundUp(size_t bytes, size_t granularity) {
  return (bytes + granularity - 1) / granularity * granularity;
}

}  // namespace

CachingAllocator::CachingAllocator(std::string name, Place place, std::unique_ptr<RawMemory> raw,
                                   int64_t bytes_limit)
    : name_(std::move(name)), place_(place), raw_(std::move(raw)), stats_(place, bytes_limit) {}

CachingAllocator::~CachingAllocator() {
  EmptyCache();
  std::lock_guard<std::mutex> lock(mu_);
  LOG_IF(WARNING, !allocated_.empty()) << name_ << ": destroyed with " << allocated_.size()
                                       << " block(s) still in use; they are leaked";
}

size_t CachingAllocator::RoundSize(size_t bytes) {
  if (bytes <= kSmallMax) {
    return std::max(kSmallGranularity, RoundUp(bytes, kSmallGranularity));
  }
  return RoundUp(bytes, kLargeGranularity);
}

absl::StatusOr<void*> CachingAllocator::Allocate(size_t bytes) {
  if (bytes > kMaxRequest) {
    return absl::ResourceExhaustedError(
        absl::StrCat("out of memory on ", place_.ToString(), ": requested ",
                     HumanBytes(static_cast<int64_t>(std::min<size_t>(bytes, INT64_MAX))),
                     ", more than any device holds"));
  }
  RETURN_IF_ERROR(stats_.Reserve(bytes));
  const size_t size = RoundSize(bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.lower_bound(size);
    if (it != free_.end() && it->first <= size + std::min(size, kMaxReuseWaste)) {
      void* ptr = it->second;
      const size_t block = it->first;
      free_.erase(it);
      cached_ -= block;
      allocated_[ptr] = Block{block, bytes};
      return ptr;
    }
  }
  absl::StatusOr<void*> ptr = AllocateNew(size);
  if (!ptr.ok()) {
    stats_.Release(bytes);
    if (ptr.status().code() != absl::StatusCode::kResourceExhausted) {
      return ptr.status();
    }
    const AllocatorStats s = stats_.Snapshot();
    return absl::ResourceExhaustedError(absl::StrCat(
        "out of memory on ", place_.ToString(), ": requested ", HumanBytes(bytes), ", in use ",
        HumanBytes(s.bytes_in_use), ", limit ",
        s.bytes_limit > 0 ? HumanBytes(s.bytes_limit) : "none", ", held by this allocator ",
        HumanBytes(s.bytes_reserved), "; the system refused a block of ", HumanBytes(size),
        " even after the cache was freed: ", ptr.status().message()));
  }
  std::lock_guard<std::mutex> lock(mu_);
  allocated_[*ptr] = Block{size, bytes};
  return *ptr;
}

absl::StatusOr<void*> CachingAllocator::AllocateNew(size_t size) {
  const int64_t limit = stats_.bytes_limit();
  bool over_limit;
  {
    std::lock_guard<std::mutex> lock(mu_);
    over_limit = limit > 0 && reserved_ + static_cast<int64_t>(size) > limit;
  }
  if (over_limit) EmptyCache();
  absl::StatusOr<void*> ptr = raw_->Alloc(size);
  if (!ptr.ok() && ptr.status().code() == absl::StatusCode::kResourceExhausted) {
    EmptyCache();
    ptr = raw_->Alloc(size);
  }
  if (!ptr.ok()) return ptr;
  std::lock_guard<std::mutex> lock(mu_);
  reserved_ += size;
  stats_.set_bytes_reserved(reserved_);
  return ptr;
}

void CachingAllocator::Deallocate(void* ptr, size_t bytes) {
  size_t requested;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = allocated_.find(ptr);
    CHECK(it != allocated_.end())
        << name_ << ": Deallocate(" << ptr << ", " << bytes
        << ") of a pointer this allocator did not hand out (double free?)";
    DCHECK_EQ(it->second.requested, bytes) << name_ << ": size mismatch";
    requested = it->second.requested;
    if (holding_ > 0) {
      held_.push_back({ptr, it->second.size});
    } else {
      free_.emplace(it->second.size, ptr);
      cached_ += it->second.size;
    }
    allocated_.erase(it);
  }
  stats_.Release(requested);
}

void CachingAllocator::EmptyCache() {
  std::multimap<size_t, void*> blocks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    blocks.swap(free_);
    reserved_ -= cached_;
    cached_ = 0;
    stats_.set_bytes_reserved(reserved_);
  }
  for (const auto& [size, ptr] : blocks) raw_->Free(ptr, size);
}

void CachingAllocator::BeginHolding() {
  std::lock_guard<std::mutex> lock(mu_);
  ++holding_;
}

std::vector<CachingAllocator::HeldBlock> CachingAllocator::EndHolding() {
  std::lock_guard<std::mutex> lock(mu_);
  CHECK_GT(holding_, 0) << name_ << ": EndHolding without BeginHolding";
  --holding_;
  return std::exchange(held_, {});
}

void CachingAllocator::ReleaseHeld(const std::vector<HeldBlock>& blocks) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const HeldBlock& b : blocks) {
    free_.emplace(b.size, b.ptr);
    cached_ += b.size;
  }
}

int64_t CachingAllocator::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

}  // namespace cuda
}  // namespace tandem
