// Host memory allocator (64-byte aligned) with stats and an optional limit.
//
//   Allocator* host = CpuAllocator::Default();   // process-wide, never freed
//   ASSIGN_OR_RETURN(auto buf, Buffer::Allocate(host, 1024));
//
// Thread-safe.
#ifndef TANDEM_FRAMEWORK_MEMORY_CPU_ALLOCATOR_H_
#define TANDEM_FRAMEWORK_MEMORY_CPU_ALLOCATOR_H_

#include "framework/memory/allocator.h"

namespace tandem {

class CpuAllocator final : public Allocator {
 public:
  explicit CpuAllocator(int64_t bytes_limit = 0);
  // The process-wide host allocator used for cpu tensors.
  static CpuAllocator* Default();

  std::string Name() const override { return "cpu"; }
  Place place() const override { return CPUPlace(); }
  absl::StatusOr<void*> Allocate(size_t bytes) override;
  void Deallocate(void* ptr, size_t bytes) override;
  AllocatorStats GetStats() const override { return stats_.Snapshot(); }
  void SetBytesLimit(int64_t bytes) override { stats_.set_bytes_limit(bytes); }

 private:
  MemoryStats stats_;
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_MEMORY_CPU_ALLOCATOR_H_
