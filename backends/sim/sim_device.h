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
// count is first needed; --sim_memory_limit_mb (default 0: none) per device
// and --sim_stream_delay_us (default 0) read when each device is created
// (Allocator::SetBytesLimit and SetSimStreamDelay change them).
//
// Each device has its own memory (SimAllocator: separately malloc'ed, own
// MemoryStats and limit) and counts every copy it is asked to perform:
// copies and bytes per direction (H2D, D2H, D2D), sync and async apart,
// counted when the copy is issued. Copies check that the device side of the
// transfer is memory of this device.
//
// Asynchrony. Each stream (compute, copy, and every CreateStream) executes
// its queue in FIFO order on a worker thread of its own: async copies, event
// records and event waits. CopyAsync, RecordEvent and StreamWaitEvent only
// enqueue and return at once; the memcpy happens on the worker, later. A
// stream waiting on an event (of any stream of any sim device) blocks its
// worker until the record it saw has executed. SynchronizeEvent blocks until
// the last record of the event has executed; SynchronizeStream, Synchronize
// (every live stream of the device) and Copy (the compute stream, then it
// copies on the calling thread) drain queues. --sim_stream_delay_us makes
// the worker sleep before each queued operation, so that a missing wait or
// a buffer freed or reused under a queued copy gives wrong numbers in tests.
//
// Honest limits: kernels are not asynchronous. The shared kernels compute
// inside Compute on the calling thread (they allocate outputs and set shapes
// there, and the executor needs that metadata when Compute returns), so
// each sim kernel first drains its stream, ctx->stream(), then computes
// (sim_kernels.cc). It therefore sees every copy and event wait queued
// before it on that stream, and work queued after it (on any stream) sees
// its results. What shows up: a missing wait *before* a kernel (it reads
// stale data); host memory reused or overwritten under a queued copy, or a
// kernel overwriting what a copy queued on another stream still reads
// (wrong numbers); device memory freed under a copy queued on a stream
// other than compute (an error, below). What does not: a missing wait
// *after* a kernel (a copy on another stream that reads the kernel's output
// without waiting for its event), since the kernel has finished before
// anything later is issued. Kernels do not apply the delay
// knob. Sync copies run on the calling thread. Device memory frees are
// ordered after the work queued on the compute stream (sim_allocator.h), as
// the CUDA backend's allocator contract allows.
//
// Errors. Misuse a real device would reject returns InvalidArgument at the
// call: streams of another device, events or streams of another backend,
// memory of the wrong side. A queued copy whose device memory has been freed
// by the time the worker runs it is skipped and fails asynchronously: the
// error is logged and returned by the next drain of that stream
// (SynchronizeStream, Synchronize, Copy for the compute stream, the next sim
// kernel on it).
//
// Timing: CreateTimingEvent events are time-stamped (steady_clock) when the
// worker executes their record; EventElapsedMs is the difference, so the
// profiler reports device busy time and copy/compute overlap on sim. A
// kernel's device time is about the host time of its Compute (the profiler's
// end record is queued when Compute returns).
//
// Event re-record: a wait (StreamWaitEvent, SynchronizeEvent) waits for the
// record that was last when it was issued; recording the event again
// meanwhile neither releases nor blocks it (CUDA semantics). Waiting on an
// event never recorded returns at once.
//
// Devices are owned by the DeviceRegistry and live until exit, and so do
// the worker threads of their streams (idle; see SimStream); all methods
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
#include "absl/time/time.h"
#include "backends/sim/sim_allocator.h"
#include "backends/sim/sim_stream.h"
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

class SimDevice final : public Device {
 public:
  // `bytes_limit` 0: no limit. `stream_delay`: see SetStreamDelay.
  SimDevice(int index, int64_t bytes_limit, absl::Duration stream_delay = absl::ZeroDuration());
  // Waits for the queued work of the device's streams and joins their
  // workers (devices of the registry are never destroyed).
  ~SimDevice() override = default;

  Place place() const override { return place_; }
  // "simulated accelerator sim:0 (memory limit: none)"
  std::string Description() const override;
  Allocator* allocator() override { return &memory_; }
  // Sim has no pinned memory: staging buffers are plain host memory.
  Allocator* host_allocator() override;
  SimAllocator* sim_allocator() { return &memory_; }

  Stream* compute_stream() override { return &compute_stream_; }
  Stream* copy_stream() override { return &copy_stream_; }
  // The stream's destructor waits for its queued work.
  absl::StatusOr<std::unique_ptr<Stream>> CreateStream() override;
  absl::StatusOr<std::unique_ptr<Event>> CreateEvent() override;
  absl::StatusOr<std::unique_ptr<Event>> CreateTimingEvent() override;
  // Blocks until both records have executed. InvalidArgument unless both
  // are timing events last recorded on streams of this device;
  // FailedPrecondition if one was never recorded.
  absl::StatusOr<double> EventElapsedMs(Event* start, Event* end) override;

  // Drains the compute stream, then copies on the calling thread.
  // InvalidArgument if the device side of the copy (H2D: dst, D2H: src, D2D:
  // both) is not memory of this device.
  absl::Status Copy(CopyKind kind, void* dst, const void* src, size_t bytes) override;
  // Also InvalidArgument if `stream` is not one of this device's streams.
  // Checks and counts now, copies when `stream`'s worker gets there.
  absl::Status CopyAsync(CopyKind kind, void* dst, const void* src, size_t bytes,
                         Stream* stream) override;

  // `stream` must be this device's; `event` any sim event (header comment).
  absl::Status RecordEvent(Event* event, Stream* stream) override;
  absl::Status StreamWaitEvent(Stream* stream, Event* event) override;
  absl::Status SynchronizeEvent(Event* event) override;
  // Also the first asynchronous error of the stream since its last drain.
  absl::Status SynchronizeStream(Stream* stream) override;
  absl::Status Synchronize() override { return streams_.DrainAll(); }

  // How long each stream's worker sleeps before every queued operation
  // (copy, event record, event wait) from now on; zero: none.
  void SetStreamDelay(absl::Duration delay);
  absl::Duration stream_delay() const;

  SimCopyCounters Counters() const;
  void ResetCounters();

 private:
  // InvalidArgument unless `stream` is one of this device's streams.
  absl::StatusOr<SimStream*> OwnStream(Stream* stream, absl::string_view what) const;
  absl::StatusOr<SimEvent*> AnySimEvent(Event* event, absl::string_view what) const;
  // InvalidArgument unless the device side of the copy is this device's.
  absl::Status CheckCopy(CopyKind kind, void* dst, const void* src, size_t bytes) const;
  void Count(CopyKind kind, size_t bytes, bool async);

  const Place place_;
  std::atomic<int64_t> delay_ns_{0};
  // Declared before the streams: their destructors run the frees they hold.
  SimAllocator memory_;
  SimStreamSet streams_;
  SimStream compute_stream_;
  SimStream copy_stream_;
  mutable std::mutex mu_;
  SimCopyCounters counters_;  // guarded by mu_
};

// Sets the stream delay (SimDevice::SetStreamDelay) of the sim device at
// `place`, e.g. in a test, instead of --sim_stream_delay_us. InvalidArgument
// if `place` is not a sim place or `delay` is negative.
absl::Status SetSimStreamDelay(const Place& place, absl::Duration delay);

// The counters of the sim device at `place`; InvalidArgument if `place` is
// not a sim place, errors of DeviceRegistry::GetDevice otherwise.
absl::StatusOr<SimCopyCounters> GetSimCopyCounters(const Place& place);
absl::Status ResetSimCopyCounters(const Place& place);

}  // namespace tandem

#endif  // TANDEM_BACKENDS_SIM_SIM_DEVICE_H_
