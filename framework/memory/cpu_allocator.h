// Host memory allocator (64-byte aligned) with stats and an optional limit.
//
//   Allocator* host = CpuAllocator::Default();   // process-wide, never freed
//   ASSIGN_OR_RETURN(auto buf, Buffer::Allocate(host, 1024));
//
// Freed blocks of at least kCacheMinBytes are kept, up to kCacheMaxBytes
// in all, and handed out again for requests of the same size: a training
// step's large temporaries (an embedding gather of 65536 x 150 floats is
// 39 MB) then reuse memory instead of mapping fresh pages from the system
// every step (page faults, zeroing and unmapping cost more than the
// kernels that fill them). Freed blocks of at most kSmallMaxBytes are kept
// too, per 64-byte size class, up to kSmallCacheMaxBytes in all: a step's
// small outputs (a loss, a shape, a scalar chain) reuse them at once, where
// the system's aligned allocation splits and merges chunks on every call
// (about a third of a host op's dispatch). Cached blocks count as reserved,
// not in use, and not against the limit; ReleaseCached returns them to the
// system.
// Blocks of at least kHugePageMinBytes (embedding tables, their gathers)
// are 2 MiB aligned and advised for transparent huge pages: random row
// reads of a multi-GB table then miss the TLB far less often.
// Thread-safe.
#ifndef TANDEM_FRAMEWORK_MEMORY_CPU_ALLOCATOR_H_
#define TANDEM_FRAMEWORK_MEMORY_CPU_ALLOCATOR_H_

#include <atomic>
#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

#include "framework/memory/allocator.h"

namespace tandem {

class CpuAllocator final : public Allocator {
 public:
  static constexpr size_t kCacheMinBytes = size_t{1} << 20;
  static constexpr size_t kCacheMaxBytes = size_t{1} << 30;
  static constexpr size_t kHugePageMinBytes = size_t{32} << 20;
  static constexpr size_t kHugePageBytes = size_t{2} << 20;
  static constexpr size_t kSmallMaxBytes = size_t{4} << 10;
  static constexpr size_t kSmallCacheMaxBytes = size_t{4} << 20;

  explicit CpuAllocator(int64_t bytes_limit = 0);
  ~CpuAllocator() override;
  // The process-wide host allocator used for cpu tensors.
  static CpuAllocator* Default();

  std::string Name() const override { return "cpu"; }
  Place place() const override { return CPUPlace(); }
  absl::StatusOr<void*> Allocate(size_t bytes) override;
  void Deallocate(void* ptr, size_t bytes) override;
  AllocatorStats GetStats() const override;
  void SetBytesLimit(int64_t bytes) override { stats_.set_bytes_limit(bytes); }
  void ResetPeak() override { stats_.ResetPeak(); }
  // Frees every cached block.
  void ReleaseCached();

 private:
  MemoryStats stats_;
  std::mutex mu_;
  std::multimap<size_t, void*> cached_;  // by rounded size
  // Small blocks by size class (rounded size / 64 - 1), each a stack.
  std::vector<std::vector<void*>> small_;  // guarded by mu_
  size_t small_bytes_ = 0;                 // guarded by mu_
  std::atomic<size_t> cached_bytes_{0};    // both caches; written under mu_
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_MEMORY_CPU_ALLOCATOR_H_
