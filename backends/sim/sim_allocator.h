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
// Frees follow stream order, as the CUDA backend's contract allows (a block
// may be deallocated as soon as the work using it is enqueued on the compute
// stream): Deallocate releases the bytes from the stats and the block from
// Owns at once, and hands the actual free to `schedule_free`, which the
// SimDevice runs after the work queued on its compute stream. Until then the
// block stays addressable (Holds), so queued copies into or out of it still
// run on valid memory.
//
// Owned by its SimDevice; thread-safe.
#ifndef TANDEM_BACKENDS_SIM_SIM_ALLOCATOR_H_
#define TANDEM_BACKENDS_SIM_SIM_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "framework/memory/allocator.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/place/place.h"

namespace tandem {

class SimAllocator final : public Allocator {
 public:
  // Runs or schedules `free` (which gives a block back); called by
  // Deallocate, from any thread.
  using FreeScheduler = std::function<void(std::function<void()> free)>;

  // `bytes_limit` 0: no limit. `schedule_free` null: blocks are freed at once.
  SimAllocator(Place place, int64_t bytes_limit, FreeScheduler schedule_free = nullptr);
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
  void ResetPeak() override { stats_.ResetPeak(); }

  // True if [ptr, ptr + bytes) lies within one live block of this allocator.
  bool Owns(const void* ptr, size_t bytes) const;
  // True if it lies within a block not given back yet: a live one, or one
  // deallocated whose free is still scheduled.
  bool Holds(const void* ptr, size_t bytes) const;

 private:
  struct Block {
    size_t size = 0;
    bool deallocated = false;  // the free is scheduled
  };
  // The block containing [ptr, ptr + bytes), or nullptr. Requires mu_.
  const Block* FindLocked(const void* ptr, size_t bytes) const;

  const Place place_;
  MemoryStats stats_;
  CpuAllocator backing_;  // where blocks come from; its stats are unused
  const FreeScheduler schedule_free_;
  mutable std::mutex mu_;
  std::map<uintptr_t, Block> blocks_;  // blocks not freed yet: start -> block
};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_SIM_SIM_ALLOCATOR_H_
