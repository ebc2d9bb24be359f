// Allocator interface and the memory statistics every backend reports.
//
//   Allocator* a = device->allocator();
//   ASSIGN_OR_RETURN(void* p, a->Allocate(bytes));
//   ...
//   a->Deallocate(p, bytes);
//   AllocatorStats s = a->GetStats();   // in use, peak, limit
//
// Prefer Buffer (framework/memory/buffer via Tensor) to raw calls: it frees
// on destruction. Implementations are thread-safe.
#ifndef TANDEM_FRAMEWORK_MEMORY_ALLOCATOR_H_
#define TANDEM_FRAMEWORK_MEMORY_ALLOCATOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/place/place.h"

namespace tandem {

struct AllocatorStats {
  int64_t bytes_in_use = 0;       // handed out to callers, not yet freed
  int64_t peak_bytes_in_use = 0;  // high-water mark of bytes_in_use
  int64_t bytes_limit = 0;        // 0: no limit
  int64_t bytes_reserved = 0;     // held from the system (>= in use if caching)
  int64_t num_allocs = 0;         // successful Allocate calls
};

// Fault injection, for tests only (framework/testing/fault_injection.h sets
// it): every MemoryStats::Reserve, that is every allocation of every
// allocator (cpu, sim, cuda), first calls the hook with the place and the
// bytes requested; a non-OK status fails that allocation with that status.
// Devices own their allocators, so a hook here reaches allocations a wrapper
// around one allocator could not. nullptr (the default) removes it; the
// caller keeps the hook alive until it is removed and installs it while no
// allocation is in flight.
using AllocationFaultHook = std::function<absl::Status(const Place& place, size_t bytes)>;
void SetAllocationFaultHookForTesting(const AllocationFaultHook* hook);

// Thread-safe counters with an optional limit, shared by all allocators.
class MemoryStats {
 public:
  explicit MemoryStats(Place place, int64_t bytes_limit = 0) : place_(place), limit_(bytes_limit) {}

  // Accounts `bytes` as in use, or returns ResourceExhausted with bytes
  // requested, in use and limit when the limit would be exceeded.
  absl::Status Reserve(size_t bytes);
  void Release(size_t bytes);
  void set_bytes_limit(int64_t limit) { limit_.store(limit); }
  int64_t bytes_limit() const { return limit_.load(); }
  int64_t bytes_in_use() const { return in_use_.load(); }
  void set_bytes_reserved(int64_t bytes) { reserved_.store(bytes); }
  AllocatorStats Snapshot() const;
  void ResetPeak() { peak_.store(in_use_.load()); }

 private:
  const Place place_;
  std::atomic<int64_t> limit_;
  std::atomic<int64_t> in_use_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> reserved_{0};
  std::atomic<int64_t> num_allocs_{0};
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual std::string Name() const = 0;
  // Where the returned memory lives. A pinned host allocator reports cpu.
  virtual Place place() const = 0;
  // Returns memory aligned to at least 64 bytes; Allocate(0) returns a valid
  // unique pointer. ResourceExhausted over the limit or when the system has
  // no memory left; the message names place, bytes requested, in use, limit.
  virtual absl::StatusOr<void*> Allocate(size_t bytes) = 0;
  // `bytes` must be the size passed to Allocate.
  virtual void Deallocate(void* ptr, size_t bytes) = 0;
  virtual AllocatorStats GetStats() const = 0;
  // 0 removes the limit. Memory already in use is not affected.
  virtual void SetBytesLimit(int64_t bytes) = 0;
  // Starts a new high-water mark: peak_bytes_in_use becomes bytes_in_use
  // (to measure the peak of one step).
  virtual void ResetPeak() = 0;
};

// Owns `size` bytes from an allocator and frees them when destroyed.
// Shared between tensors through std::shared_ptr; not copyable.
class Buffer {
  struct Key {  // only Allocate makes buffers (one allocation with their count)
    explicit Key() = default;
  };

 public:
  static absl::StatusOr<std::shared_ptr<Buffer>> Allocate(Allocator* allocator, size_t size);
  Buffer(Key, Allocator* allocator, void* data, size_t size)
      : allocator_(allocator), data_(data), size_(size) {}
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  Place place() const { return allocator_->place(); }
  Allocator* allocator() const { return allocator_; }

 private:
  Allocator* allocator_;
  void* data_;
  size_t size_;
};

// Formats a byte count for messages: "1536 bytes (1.5 KiB)".
std::string HumanBytes(int64_t bytes);
// The short form, for tables and summaries: "1.5 KiB" ("512 bytes" below 1 KiB).
std::string ShortBytes(int64_t bytes);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_MEMORY_ALLOCATOR_H_
