// SimAllocator: the memory of one simulated device. Blocks are separately
// malloc'ed (64-byte aligned, by a private CpuAllocator) and accounted in
// the allocator's own MemoryStats with its own byte limit, so sim memory is
// distinct from host memory in every number and check, although the host
// can address it.
//
//   SimAllocator memory(SimPlace(0), /*bytes_limit=*/0);
//   ASSIGN_OR_RETURN(void* p, memory.Allocate(256));
//   memory.Owns(p, 256);       // true: p is sim:0 memory
//   memory.Deallocate(p, 256);
//
// Owned by its SimDevice; thread-safe.
#ifndef TANDEM_BACKENDS_SIM_SIM_ALLOCATOR_H_
#define TANDEM_BACKENDS_SIM_SIM_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "framework/memory/allocator.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/place/place.h"

namespace tandem {

class SimAllocator final : public Allocator {
 public:
  // `bytes_limit` 0: no limit.
  SimAllocator(Place place, int64_t bytes_limit);
  SimAllocator(const SimAllocator&) = delete;
  SimAllocator& operator=(const SimAllocator&) = delete;

  std::string Name() const override { return place_.ToString(); }
  Place place() const override { return place_; }
  // ResourceExhausted over the limit naming the place, bytes requested, in
  // use and the limit, or when the system has no memory left.
  absl::StatusOr<void*> Allocate(size_t bytes) override;
  // CHECK-fails unless `ptr` is a live block of this allocator (a bug).
  void Deallocate(void* ptr, size_t bytes) override;
  AllocatorStats GetStats() const override { return stats_.Snapshot(); }
  void SetBytesLimit(int64_t bytes) override { stats_.set_bytes_limit(bytes); }

  // True if [ptr, ptr + bytes) lies within one live block of this allocator.
  bool Owns(const void* ptr, size_t bytes) const;

 private:
  const Place place_;
  MemoryStats stats_;
  CpuAllocator backing_;  // where blocks come from; its stats are unused
  mutable std::mutex mu_;
  std::map<uintptr_t, size_t> blocks_;  // live blocks: start -> size
};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_SIM_SIM_ALLOCATOR_H_
