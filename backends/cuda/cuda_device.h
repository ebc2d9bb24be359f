// The "gpu" device of the CUDA backend: one CudaDevice per visible GPU,
// created by the DeviceRegistry through the factory registered in
// cuda_device.cc (linking //backends/cuda is enough).
//
//   ASSIGN_OR_RETURN(Device* d, DeviceRegistry::Global().GetDevice(GPUPlace(0)));
//   d->Description();                              // "NVIDIA H200 (139.8 GiB, sm_90)"
//   ASSIGN_OR_RETURN(void* p, d->allocator()->Allocate(n));
//   RETURN_IF_ERROR(d->Copy(CopyKind::kHostToDevice, p, host, n));   // sync
//
//   // In a kernel of this backend:
//   cudaStream_t s = CudaStreamOf(ctx->stream());
//   RETURN_IF_ERROR(CudaDeviceOf(ctx->device())->WithCublas(ctx->stream(),
//       [&](cublasHandle_t h) { ... cublasSgemm(h, ...) ... }));
//
// Each device owns a compute stream and a copy stream (both non-blocking with
// respect to the legacy default stream), a caching device allocator (limit
// from --gpu_memory_limit_mb), a caching pinned host allocator and, created
// on first use, a cuBLAS handle. Devices live until process exit; at exit
// (std::atexit, registered when the first device is made) each releases its
// cached resources (ReleaseCachedResources), so that a leak checker such as
// compute-sanitizer's reports only memory still held by tensors. All methods
// are thread-safe and run under a CudaDeviceGuard for this GPU. Sync/async
// semantics are those of Device: Copy returns when the data has arrived (and
// first waits for the work already queued on the compute stream); CopyAsync,
// RecordEvent and StreamWaitEvent only enqueue. SynchronizeStream and
// Synchronize also resolve the input checks that kernels deferred to them
// (deferred_checks.h): they return the first one's error, e.g.
// lookup_table's bad id, once the device has caught up.
#ifndef TANDEM_BACKENDS_CUDA_CUDA_DEVICE_H_
#define TANDEM_BACKENDS_CUDA_CUDA_DEVICE_H_

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "backends/cuda/caching_allocator.h"
#include "backends/cuda/deferred_checks.h"
#include "framework/device/device.h"

namespace tandem {
namespace cuda {

// A CUDA stream owned by this object (destroyed with it).
class CudaStream final : public Stream {
 public:
  // A cudaStreamNonBlocking stream on GPU `device`.
  static absl::StatusOr<std::unique_ptr<CudaStream>> Create(int device);
  ~CudaStream() override;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  cudaStream_t get() const { return stream_; }

 private:
  CudaStream(int device, cudaStream_t stream) : device_(device), stream_(stream) {}
  const int device_;
  const cudaStream_t stream_;
};

// A CUDA event owned by this object.
class CudaEvent final : public Event {
 public:
  // `flags` as for cudaEventCreateWithFlags; timing is off by default.
  static absl::StatusOr<std::unique_ptr<CudaEvent>> Create(
      int device, unsigned int flags = cudaEventDisableTiming);
  ~CudaEvent() override;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  cudaEvent_t get() const { return event_; }

 private:
  CudaEvent(int device, cudaEvent_t event) : device_(device), event_(event) {}
  const int device_;
  const cudaEvent_t event_;
};

class CudaDevice final : public Device {
 public:
  // Sets up GPU `index` (streams, allocators); `bytes_limit` 0: no limit.
  static absl::StatusOr<std::unique_ptr<CudaDevice>> Create(int index, int64_t bytes_limit);
  ~CudaDevice() override;

  Place place() const override { return GPUPlace(index_); }
  std::string Description() const override { return description_; }
  int64_t TotalMemoryBytes() const override { return total_memory_; }
  CachingAllocator* allocator() override { return allocator_.get(); }
  CachingAllocator* host_allocator() override { return host_allocator_.get(); }

  Stream* compute_stream() override { return compute_.get(); }
  Stream* copy_stream() override { return copy_.get(); }
  absl::StatusOr<std::unique_ptr<Stream>> CreateStream() override;
  absl::StatusOr<std::unique_ptr<Event>> CreateEvent() override;
  // Events with timing enabled; EventElapsedMs waits for `end`.
  absl::StatusOr<std::unique_ptr<Event>> CreateTimingEvent() override;
  absl::StatusOr<double> EventElapsedMs(Event* start, Event* end) override;

  absl::Status Copy(CopyKind kind, void* dst, const void* src, size_t bytes) override;
  absl::Status CopyAsync(CopyKind kind, void* dst, const void* src, size_t bytes,
                         Stream* stream) override;

  // CUDA graphs (cuda_graph.h): relaxed-mode stream capture; EndCapture
  // instantiates the recorded graph.
  absl::Status BeginCapture(Stream* stream) override;
  absl::StatusOr<std::unique_ptr<DeviceGraph>> EndCapture(Stream* stream) override;

  absl::Status RecordEvent(Event* event, Stream* stream) override;
  absl::Status StreamWaitEvent(Stream* stream, Event* event) override;
  absl::Status SynchronizeEvent(Event* event) override;
  // Wait, then resolve the deferred checks of `stream` (of every stream).
  absl::Status SynchronizeStream(Stream* stream) override;
  // The deferred checks of run `run_id` (DeferredChecks::ResolveRun).
  absl::Status TakeRunErrors(uint64_t run_id) override {
    return deferred_checks_.ResolveRun(run_id);
  }
  absl::Status Synchronize() override;

  // Checks that kernels on this GPU defer to the next synchronisation.
  DeferredChecks* deferred_checks() { return &deferred_checks_; }

  // Runs `fn` with this GPU's cuBLAS handle bound to `stream`; the handle is
  // created on first use. Calls are serialised per device (a handle must not
  // be used by two threads at once); `fn` should only enqueue work.
  absl::Status WithCublas(Stream* stream, absl::FunctionRef<absl::Status(cublasHandle_t)> fn);

  // Waits for the device, then returns what it holds only to reuse to the
  // driver: the cached blocks of both allocators, the free deferred-check
  // slots and the cuBLAS handle (with its workspace). Blocks in use stay
  // valid; everything is made again on next use. Synchronous; the first
  // error (after releasing the rest).
  absl::Status ReleaseCachedResources();

 private:
  CudaDevice(int index, std::string description);

  const int index_;
  const std::string description_;
  int64_t total_memory_ = 0;  // cudaDeviceProp::totalGlobalMem
  std::unique_ptr<CudaStream> compute_;
  std::unique_ptr<CudaStream> copy_;
  std::unique_ptr<CachingAllocator> allocator_;
  std::unique_ptr<CachingAllocator> host_allocator_;
  DeferredChecks deferred_checks_;

  // Orders sync copies after the compute stream; one sync copy at a time.
  std::mutex sync_copy_mu_;
  std::unique_ptr<CudaEvent> sync_copy_event_;

  std::mutex cublas_mu_;
  cublasHandle_t cublas_ = nullptr;       // guarded by cublas_mu_
  cudaStream_t cublas_stream_ = nullptr;  // guarded by cublas_mu_
};

// The CUDA stream behind a Stream of this backend. CHECK-fails for a stream
// of another backend (a bug in the caller).
cudaStream_t CudaStreamOf(Stream* stream);
// The CudaDevice behind a gpu Device; CHECK-fails for another backend's.
CudaDevice* CudaDeviceOf(Device* device);

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_CUDA_DEVICE_H_
