// The "sim" backend: simulated accelerators sim:0 .. sim:N-1 (log name
// "SimPlace(i)"), for testing placement and copies on machines without a
// GPU. It is also the worked example of how to add a backend; a new one
// needs:
//   1. a Device subclass and a DeviceFactory, registered with a static
//      DeviceFactoryRegistrar("<type>", "<LogPrefix>", ...) (sim_device.cc);
//   2. kernels registered for "<type>" (sim_kernels.cc: the shared math
//      kernels of backends/common in one line; others with REGISTER_KERNEL);
//   3. a cc_library with alwayslink = True (BUILD), listed in
//      //backends:all;
//   4. tests: registration, device semantics, and the conformance suite of
//      backends/common instantiated on its places (sim_*_test.cc).
//
// Usage:
//
//   ASSIGN_OR_RETURN(Tensor on_sim, CopyTensorTo(host_tensor, SimPlace(0)));
//   ASSIGN_OR_RETURN(SimCopyCounters c, GetSimCopyCounters(SimPlace(0)));
//   c.Sync(CopyKind::kHostToDevice).copies;    // 1
//   c.Sync(CopyKind::kHostToDevice).bytes;     // host_tensor.NumBytes()
//   RETURN_IF_ERROR(ResetSimCopyCounters(SimPlace(0)));
//
// Flags: --sim_devices (default 2) devices, read once, when the sim device
// count is first needed; --sim_memory_limit_mb (default 0: none) per device,
// read when each device is created (Allocator::SetBytesLimit changes it).
//
// Each device has its own memory (SimAllocator: separately malloc'ed, own
// MemoryStats and limit) and counts every copy it performs: copies and bytes
// per direction (H2D, D2H, D2D), sync and async apart. Copies check that the
// device side of the transfer is memory of this device.
//
// Honest limits: sim work runs synchronously on the calling thread. Kernels
// and async copies have completed when they return, so an event is complete
// as soon as it is recorded, and waits and synchronizations return at once.
// What sim does check is what a real device would reject: streams of another
// device, events or streams of another backend. Ordering bugs that only show
// with truly asynchronous execution need a GPU to surface.
//
// Devices are owned by the DeviceRegistry and live until exit; all methods
// are thread-safe.
#ifndef TANDEM_BACKENDS_SIM_SIM_DEVICE_H_
#define TANDEM_BACKENDS_SIM_SIM_DEVICE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/sim/sim_allocator.h"
#include "framework/device/device.h"
#include "framework/place/place.h"

namespace tandem {

// The "sim" device type and its places.
DeviceType SimDeviceType();
Place SimPlace(int index);

// The calling thread's current sim device, as set by DeviceGuard (0 if
// none was set).
int CurrentSimDevice();

struct CopyTally {
  int64_t copies = 0;
  int64_t bytes = 0;
};

// Copies a sim device has performed since it was created or last reset.
struct SimCopyCounters {
  std::array<CopyTally, 3> sync;   // indexed by CopyKind
  std::array<CopyTally, 3> async;  // indexed by CopyKind

  const CopyTally& Sync(CopyKind kind) const { return sync[static_cast<int>(kind)]; }
  const CopyTally& Async(CopyKind kind) const { return async[static_cast<int>(kind)]; }
  int64_t TotalCopies() const;
  // "H2D sync 2 (48 bytes), D2H async 1 (16 bytes)"; "no copies".
  std::string ToString() const;
};

// A sim stream: work "enqueued" on it has already run (see header comment).
class SimStream final : public Stream {
 public:
  explicit SimStream(const Device* owner) : owner_(owner) {}
  const Device* owner() const { return owner_; }
  // Operations enqueued so far (async copies and event records).
  int64_t enqueued() const { return enqueued_.load(); }
  int64_t Enqueue() { return ++enqueued_; }

 private:
  const Device* owner_;
  std::atomic<int64_t> enqueued_{0};
};

// A sim event: remembers the stream and position it was last recorded at.
class SimEvent final : public Event {
 public:
  bool recorded() const { return stream() != nullptr; }
  // The stream of the last record, nullptr if never recorded.
  const SimStream* stream() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stream_;
  }
  // The stream's enqueued() count at the last record.
  int64_t position() const {
    std::lock_guard<std::mutex> lock(mu_);
    return position_;
  }
  void Record(const SimStream* stream, int64_t position) {
    std::lock_guard<std::mutex> lock(mu_);
    stream_ = stream;
    position_ = position;
  }

 private:
  mutable std::mutex mu_;
  const SimStream* stream_ = nullptr;  // guarded by mu_
  int64_t position_ = 0;               // guarded by mu_
};

class SimDevice final : public Device {
 public:
  // `bytes_limit` 0: no limit.
  SimDevice(int index, int64_t bytes_limit);

  Place place() const override { return place_; }
  // "simulated accelerator sim:0 (memory limit: none)"
  std::string Description() const override;
  Allocator* allocator() override { return &memory_; }
  // Sim has no pinned memory: staging buffers are plain host memory.
  Allocator* host_allocator() override;
  SimAllocator* sim_allocator() { return &memory_; }

  Stream* compute_stream() override { return &compute_stream_; }
  Stream* copy_stream() override { return &copy_stream_; }
  absl::StatusOr<std::unique_ptr<Stream>> CreateStream() override;
  absl::StatusOr<std::unique_ptr<Event>> CreateEvent() override;

  // InvalidArgument if the device side of the copy (H2D: dst, D2H: src,
  // D2D: both) is not memory of this device.
  absl::Status Copy(CopyKind kind, void* dst, const void* src, size_t bytes) override;
  // Also InvalidArgument if `stream` is not one of this device's streams.
  absl::Status CopyAsync(CopyKind kind, void* dst, const void* src, size_t bytes,
                         Stream* stream) override;

  // `stream` must be this device's; `event` any sim event. Waiting on an
  // event never recorded returns at once (as CUDA does).
  absl::Status RecordEvent(Event* event, Stream* stream) override;
  absl::Status StreamWaitEvent(Stream* stream, Event* event) override;
  absl::Status SynchronizeEvent(Event* event) override;
  absl::Status SynchronizeStream(Stream* stream) override;
  absl::Status Synchronize() override { return absl::OkStatus(); }

  SimCopyCounters Counters() const;
  void ResetCounters();

 private:
  // InvalidArgument unless `stream` is one of this device's streams.
  absl::StatusOr<SimStream*> OwnStream(Stream* stream, absl::string_view what) const;
  absl::StatusOr<SimEvent*> AnySimEvent(Event* event, absl::string_view what) const;
  // Checks the device side of a copy, then copies and counts it.
  absl::Status DoCopy(CopyKind kind, void* dst, const void* src, size_t bytes, bool async);

  const Place place_;
  SimAllocator memory_;
  SimStream compute_stream_;
  SimStream copy_stream_;
  mutable std::mutex mu_;
  SimCopyCounters counters_;  // guarded by mu_
};

// The counters of the sim device at `place`; InvalidArgument if `place` is
// not a sim place, errors of DeviceRegistry::GetDevice otherwise.
absl::StatusOr<SimCopyCounters> GetSimCopyCounters(const Place& place);
absl::Status ResetSimCopyCounters(const Place& place);

}  // namespace tandem

#endif  // TANDEM_BACKENDS_SIM_SIM_DEVICE_H_
