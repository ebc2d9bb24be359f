// CachingAllocator: an Allocator that keeps freed blocks and hands them out
// again, over a raw memory source (cudaMalloc, cudaHostAlloc, or a fake in
// tests). The CUDA backend uses it for device memory and pinned host memory.
//
//   CachingAllocator a("gpu:0", GPUPlace(0), std::make_unique<MyRaw>(),
//                      /*bytes_limit=*/1 << 30);
//   ASSIGN_OR_RETURN(void* p, a.Allocate(1000));   // a 1024-byte block
//   a.Deallocate(p, 1000);                         // cached, not freed
//   ASSIGN_OR_RETURN(void* q, a.Allocate(900));    // q == p
//   a.EmptyCache();                                // frees cached blocks
//
// Sizes are rounded up: to 512 bytes up to 1 MiB, to 2 MiB above (Allocate(0)
// gets a 512-byte block, so pointers stay unique). Freed blocks go to a free
// list ordered by size and the smallest cached block that fits is reused
// (best fit), if it is at most twice the rounded size and wastes at most
// 32 MiB. When the raw source runs out of memory, or a new block would take
// the memory held over the limit, the cache is freed and the request retried
// once.
//
// Statistics and the limit count bytes as callers asked for them (like
// CpuAllocator); bytes_reserved is what is held from the raw source,
// in use or cached. Over the limit, Allocate returns ResourceExhausted naming
// place, bytes requested, in use and limit.
//
// Thread-safe; a mutex guards the lists, and the raw source is called
// outside it. Synchronous: the allocator knows nothing of streams. A block may
// be deallocated as soon as the device work that uses it is enqueued on the
// device's compute stream: whoever reuses it next must be ordered after that
// stream (kernels on the same stream are; Device::Copy waits for it).
#ifndef TANDEM_BACKENDS_CUDA_CACHING_ALLOCATOR_H_
#define TANDEM_BACKENDS_CUDA_CACHING_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/memory/allocator.h"
#include "framework/place/place.h"

namespace tandem {
namespace cuda {

// Where blocks come from. Implementations need not be thread-safe against
// themselves beyond what their underlying API guarantees; Alloc and Free may
// be called concurrently.
class RawMemory {
 public:
  virtual ~RawMemory() = default;
  // ResourceExhausted when the source is out of memory (the allocator then
  // frees its cache and retries once); any other error is passed on.
  virtual absl::StatusOr<void*> Alloc(size_t bytes) = 0;
  virtual void Free(void* ptr, size_t bytes) = 0;
};

class CachingAllocator final : public Allocator {
 public:
  static constexpr size_t kSmallGranularity = 512;
  static constexpr size_t kSmallMax = size_t{1} << 20;
  static constexpr size_t kLargeGranularity = size_t{2} << 20;
  static constexpr size_t kMaxReuseWaste = size_t{32} << 20;

  // `bytes_limit` 0: no limit.
  CachingAllocator(std::string name, Place place, std::unique_ptr<RawMemory> raw,
                   int64_t bytes_limit);
  // Frees the cached blocks. Blocks still in use are a caller bug: they are
  // leaked and logged.
  ~CachingAllocator() override;
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // The block size handed out for a request of `bytes`.
  static size_t RoundSize(size_t bytes);

  std::string Name() const override { return name_; }
  Place place() const override { return place_; }
  absl::StatusOr<void*> Allocate(size_t bytes) override;
  // CHECK-fails for a pointer this allocator did not hand out (a bug).
  void Deallocate(void* ptr, size_t bytes) override;
  AllocatorStats GetStats() const override { return stats_.Snapshot(); }
  void SetBytesLimit(int64_t bytes) override { stats_.set_bytes_limit(bytes); }
  void ResetPeak() override { stats_.ResetPeak(); }

  // Returns every cached block to the raw source.
  void EmptyCache();

  // For graph capture (cuda_graph.h): between BeginHolding and EndHolding,
  // deallocated blocks are set aside instead of cached, so that nothing else
  // gets memory a captured graph may still use. EndHolding hands them to the
  // caller, which gives them back with ReleaseHeld once the graph is gone.
  // Set-aside blocks count as reserved, not as cached or in use.
  struct HeldBlock {
    void* ptr;
    size_t size;  // rounded size
  };
  void BeginHolding();
  std::vector<HeldBlock> EndHolding();
  void ReleaseHeld(const std::vector<HeldBlock>& blocks);
  // Bytes held in cached (free) blocks.
  int64_t cached_bytes() const;

 private:
  struct Block {
    size_t size;       // rounded size held from the raw source
    size_t requested;  // what the caller asked for
  };

  // A new block from the raw source, freeing the cache first when needed.
  absl::StatusOr<void*> AllocateNew(size_t size);

  const std::string name_;
  const Place place_;
  const std::unique_ptr<RawMemory> raw_;
  MemoryStats stats_;

  mutable std::mutex mu_;
  std::multimap<size_t, void*> free_;           // guarded by mu_
  std::unordered_map<void*, Block> allocated_;  // guarded by mu_
  int64_t cached_ = 0;                          // guarded by mu_
  int64_t reserved_ = 0;                        // guarded by mu_
  int holding_ = 0;                             // guarded by mu_; BeginHolding depth
  std::vector<HeldBlock> held_;                 // guarded by mu_
};

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_CACHING_ALLOCATOR_H_
