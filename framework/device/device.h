// Device: one accelerator (or the host) as seen by the runtime.
//
//   ASSIGN_OR_RETURN(Device* gpu, DeviceRegistry::Global().GetDevice(GPUPlace(0)));
//   ASSIGN_OR_RETURN(void* d, gpu->allocator()->Allocate(n));
//   RETURN_IF_ERROR(gpu->Copy(CopyKind::kHostToDevice, d, host_ptr, n));      // sync
//   RETURN_IF_ERROR(gpu->CopyAsync(CopyKind::kHostToDevice, d, pinned, n,
//                                  gpu->copy_stream()));                      // async
//   ASSIGN_OR_RETURN(auto ev, gpu->CreateEvent());
//   RETURN_IF_ERROR(gpu->RecordEvent(ev.get(), gpu->copy_stream()));
//   RETURN_IF_ERROR(gpu->StreamWaitEvent(gpu->compute_stream(), ev.get()));
//
// Devices are owned by the DeviceRegistry and live until process exit.
// Methods are thread-safe. "Sync" methods return once the work is complete;
// "Async" methods enqueue on a stream and return at once: the caller keeps the
// memory alive until an event recorded after the work has completed.
// Host pointers passed to copies must be from host_allocator() (pinned) for
// the copy to be truly asynchronous; pageable memory is accepted and staged.
#ifndef TANDEM_FRAMEWORK_DEVICE_DEVICE_H_
#define TANDEM_FRAMEWORK_DEVICE_DEVICE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "framework/memory/allocator.h"
#include "framework/place/place.h"
#include "framework/tensor/tensor.h"

namespace tandem {

// A queue of device work; backends subclass it. Owned by whoever created it.
class Stream {
 public:
  virtual ~Stream() = default;
};

// A marker in a stream; backends subclass it.
class Event {
 public:
  virtual ~Event() = default;
};

// Device work recorded by Device::EndCapture, replayable as one launch.
// Owned by whoever ended the capture; not thread-safe. It writes and reads
// the very addresses the captured work used: the owner keeps that memory
// alive, and unused by anything else, for as long as it launches the graph.
class DeviceGraph {
 public:
  virtual ~DeviceGraph() = default;
  // Enqueues the recorded work on `stream` (asynchronous, like any enqueue):
  // kernels see the values their host arguments had at capture.
  virtual absl::Status Launch(Stream* stream) = 0;
};

enum class CopyKind { kHostToDevice, kDeviceToHost, kDeviceToDevice };
// "H2D", "D2H", "D2D".
const char* CopyKindName(CopyKind kind);

class Device {
 public:
  virtual ~Device() = default;

  virtual Place place() const = 0;
  // Human-readable description, e.g. "NVIDIA H200 (139 GiB)".
  virtual std::string Description() const = 0;
  // Memory of this device.
  virtual Allocator* allocator() = 0;
  // Bytes of memory the device has in all (a GPU's global memory); 0 when it
  // has no fixed size (the host, sim without a limit). For memory budgets.
  virtual int64_t TotalMemoryBytes() const { return 0; }
  // Host memory suited to copies to and from this device (pinned on CUDA).
  virtual Allocator* host_allocator() = 0;

  // Kernels of this device run on the compute stream; copies may use the
  // copy stream to overlap. Both live as long as the device.
  virtual Stream* compute_stream() = 0;
  virtual Stream* copy_stream() = 0;
  virtual absl::StatusOr<std::unique_ptr<Stream>> CreateStream() = 0;
  virtual absl::StatusOr<std::unique_ptr<Event>> CreateEvent() = 0;

  // Synchronous copy; also waits for work queued on the compute stream, so
  // the data it reads is final.
  virtual absl::Status Copy(CopyKind kind, void* dst, const void* src, size_t bytes) = 0;
  virtual absl::Status CopyAsync(CopyKind kind, void* dst, const void* src, size_t bytes,
                                 Stream* stream) = 0;

  // Events that can be timed (for the profiler). Devices without a timer
  // return Unimplemented; the profiler then reports no device time.
  virtual absl::StatusOr<std::unique_ptr<Event>> CreateTimingEvent() {
    return absl::UnimplementedError("this device has no timing events");
  }
  // Milliseconds between two completed timing events recorded on streams
  // of this device (blocks until `end` completes).
  virtual absl::StatusOr<double> EventElapsedMs(Event* start, Event* end) {
    return absl::UnimplementedError("this device has no timing events");
  }

  // Graph capture (CUDA graphs on gpu). Between BeginCapture and EndCapture,
  // work enqueued on `stream` (kernels, async copies) is recorded instead of
  // run; synchronous copies and synchronisations of `stream` fail (and make
  // EndCapture fail). Device memory freed meanwhile (kernel temporaries) is
  // not handed out again while the graph lives. EndCapture always ends the
  // capture and returns the recorded work. Devices without capture return Unimplemented (default).
  //
  //   RETURN_IF_ERROR(dev->BeginCapture(dev->compute_stream()));
  //   ... enqueue kernels and async copies ...
  //   ASSIGN_OR_RETURN(std::unique_ptr<DeviceGraph> g, dev->EndCapture(dev->compute_stream()));
  //   RETURN_IF_ERROR(g->Launch(dev->compute_stream()));   // runs the recorded work
  virtual absl::Status BeginCapture(Stream* stream) {
    return absl::UnimplementedError(
        absl::StrCat(place().ToString(), " does not support graph capture"));
  }
  virtual absl::StatusOr<std::unique_ptr<DeviceGraph>> EndCapture(Stream* stream) {
    return absl::UnimplementedError(
        absl::StrCat(place().ToString(), " does not support graph capture"));
  }

  virtual absl::Status RecordEvent(Event* event, Stream* stream) = 0;
  virtual absl::Status StreamWaitEvent(Stream* stream, Event* event) = 0;
  virtual absl::Status SynchronizeEvent(Event* event) = 0;
  virtual absl::Status SynchronizeStream(Stream* stream) = 0;
  // Waits for all work on every stream of this device.
  virtual absl::Status Synchronize() = 0;
  // For a device that reports some kernel errors asynchronously (CUDA's
  // deferred input checks report at SynchronizeStream and Synchronize): the
  // first such error of the kernels that ran with KernelContext::run_id ==
  // `run_id`, each error reported once. Call it once that run's device work
  // has completed (the executor: after its end events), since a pipelined
  // run ends without synchronising streams the next run already uses.
  // Default: OK (no asynchronous errors).
  virtual absl::Status TakeRunErrors(uint64_t run_id) { return absl::OkStatus(); }
};

// Copies `src` into a new tensor on `dst_place`, synchronously. Either side
// may be the host; between two devices the value goes through the host.
// Allocates on the destination device's allocator (host: CpuAllocator).
absl::StatusOr<Tensor> CopyTensorTo(const Tensor& src, const Place& dst_place);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_DEVICE_DEVICE_H_
