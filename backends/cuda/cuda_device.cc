#include "backends/cuda/cuda_device.h"

#include <cublas_v2.h>

#include <cstdlib>
#include <limits>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/cuda/cuda_allocator.h"
#include "backends/cuda/cuda_device_guard.h"
#include "backends/cuda/cuda_graph.h"
#include "backends/cuda/cuda_status.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

DEFINE_int64(gpu_memory_limit_mb, 0,
             "Most device memory, in MiB, that tensors may use on each GPU "
             "(0: no limit). Allocations beyond it fail with "
             "ResourceExhausted, as if the GPU were that small.");

namespace tandem {
namespace cuda {
namespace {

cudaMemcpyKind ToCuda(CopyKind kind) {
  switch (kind) {
    case CopyKind::kHostToDevice:
      return cudaMemcpyHostToDevice;
    case CopyKind::kDeviceToHost:
      return cudaMemcpyDeviceToHost;
    case CopyKind::kDeviceToDevice:
      return cudaMemcpyDeviceToDevice;
  }
  return cudaMemcpyDefault;
}

// The CUDA event behind `event`; InvalidArgument (naming the device and
// the call) for a null event or another backend's, which a caller can
// pass: no CHECK is reachable from a program.
absl::StatusOr<cudaEvent_t> CudaEventArg(Event* event, int device, absl::string_view what) {
  auto* e = dynamic_cast<CudaEvent*>(event);
  if (e == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("gpu:", device, " ", what, ": ",
                                                   event == nullptr ? "no event (null)"
                                                                    : "not a CUDA event"));
  }
  return e->get();
}

// Likewise for a stream argument of the Device interface.
absl::StatusOr<cudaStream_t> CudaStreamArg(Stream* stream, int device, absl::string_view what) {
  auto* s = dynamic_cast<CudaStream*>(stream);
  if (s == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("gpu:", device, " ", what, ": ",
                                                   stream == nullptr ? "no stream (null)"
                                                                     : "not a CUDA stream"));
  }
  return s->get();
}

int64_t LimitBytesFromFlag() {
  const int64_t mb = FLAGS_gpu_memory_limit_mb;
  if (mb <= 0) {
    LOG_IF(WARNING, mb < 0) << "--gpu_memory_limit_mb=" << mb
                            << " is negative; no limit is applied";
    return 0;
  }
  return mb > (std::numeric_limits<int64_t>::max() >> 20) ? std::numeric_limits<int64_t>::max()
                                                          : mb << 20;
}

// Every CudaDevice made, for the exit hook; devices are never destroyed.
std::mutex g_devices_mu;
std::vector<CudaDevice*>* g_devices = nullptr;  // guarded by g_devices_mu

// Registered with std::atexit when the first device is made, so after the
// CUDA runtime's own exit handler and thus run before it.
void ReleaseDevicesAtExit() {
  std::lock_guard<std::mutex> lock(g_devices_mu);
  for (CudaDevice* d : *g_devices) {
    const absl::Status s = d->ReleaseCachedResources();
    VLOG_IF(1, !s.ok()) << "at exit, " << d->place().ToString() << ": " << s;
  }
}

void RememberDevice(CudaDevice* device) {
  std::lock_guard<std::mutex> lock(g_devices_mu);
  if (g_devices == nullptr) {
    g_devices = new std::vector<CudaDevice*>;
    std::atexit(ReleaseDevicesAtExit);
  }
  g_devices->push_back(device);
}

class CudaDeviceFactory final : public DeviceFactory {
 public:
  int DeviceCount() override {
    static const int count = [] {
      int n = 0;
      const cudaError_t error = cudaGetDeviceCount(&n);
      if (error != cudaSuccess) {
        cudaGetLastError();
        VLOG(1) << "no usable GPU: cudaGetDeviceCount: " << cudaGetErrorName(error) << " ("
                << cudaGetErrorString(error) << ")";
        return 0;
      }
      return n;
    }();
    return count;
  }

  absl::StatusOr<std::unique_ptr<Device>> CreateDevice(int index) override {
    ASSIGN_OR_RETURN(std::unique_ptr<CudaDevice> device,
                     CudaDevice::Create(index, LimitBytesFromFlag()));
    LOG(INFO) << "gpu:" << index << ": " << device->Description();
    RememberDevice(device.get());
    return std::unique_ptr<Device>(std::move(device));
  }

  int ExchangeCurrentDevice(int index) override { return ExchangeCudaDevice(index); }
};

DeviceFactoryRegistrar registrar("gpu", "CUDAPlace", std::make_unique<CudaDeviceFactory>());

}  // namespace

absl::StatusOr<std::unique_ptr<CudaStream>> CudaStream::Create(int device) {
  CudaDeviceGuard guard(device);
  cudaStream_t stream = nullptr;
  CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return std::unique_ptr<CudaStream>(new CudaStream(device, stream));
}

CudaStream::~CudaStream() {
  CudaDeviceGuard guard(device_);
  const absl::Status s =
      CudaStatus(cudaStreamDestroy(stream_), "cudaStreamDestroy", __FILE__, __LINE__);
  LOG_IF(ERROR, !s.ok()) << s;
}

absl::StatusOr<std::unique_ptr<CudaEvent>> CudaEvent::Create(int device, unsigned int flags) {
  CudaDeviceGuard guard(device);
  cudaEvent_t event = nullptr;
  CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, flags));
  return std::unique_ptr<CudaEvent>(new CudaEvent(device, event));
}

CudaEvent::~CudaEvent() {
  CudaDeviceGuard guard(device_);
  const absl::Status s =
      CudaStatus(cudaEventDestroy(event_), "cudaEventDestroy", __FILE__, __LINE__);
  LOG_IF(ERROR, !s.ok()) << s;
}

cudaStream_t CudaStreamOf(Stream* stream) {
  auto* s = dynamic_cast<CudaStream*>(stream);
  CHECK(s != nullptr) << "not a stream of the CUDA backend";
  return s->get();
}

CudaDevice* CudaDeviceOf(Device* device) {
  auto* d = dynamic_cast<CudaDevice*>(device);
  CHECK(d != nullptr) << "not a device of the CUDA backend";
  return d;
}

CudaDevice::CudaDevice(int index, std::string description)
    : index_(index), description_(std::move(description)), deferred_checks_(index) {}

absl::StatusOr<std::unique_ptr<CudaDevice>> CudaDevice::Create(int index, int64_t bytes_limit) {
  CudaDeviceGuard guard(index);
  cudaDeviceProp prop;
  CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, index));
  std::unique_ptr<CudaDevice> d(new CudaDevice(
      index, absl::StrFormat("%s (%.1f GiB, sm_%d%d)", prop.name,
                             prop.totalGlobalMem / double{1 << 30}, prop.major, prop.minor)));
  d->total_memory_ = static_cast<int64_t>(prop.totalGlobalMem);
  ASSIGN_OR_RETURN(d->compute_, CudaStream::Create(index));
  ASSIGN_OR_RETURN(d->copy_, CudaStream::Create(index));
  ASSIGN_OR_RETURN(d->sync_copy_event_, CudaEvent::Create(index));
  d->allocator_ = NewCudaDeviceAllocator(index, bytes_limit);
  d->host_allocator_ = NewCudaPinnedAllocator(index);
  return d;
}

CudaDevice::~CudaDevice() {
  if (cublas_ != nullptr) {
    CudaDeviceGuard guard(index_);
    cublasDestroy(cublas_);
  }
}

absl::StatusOr<std::unique_ptr<Stream>> CudaDevice::CreateStream() {
  ASSIGN_OR_RETURN(std::unique_ptr<CudaStream> s, CudaStream::Create(index_));
  return std::unique_ptr<Stream>(std::move(s));
}

absl::StatusOr<std::unique_ptr<Event>> CudaDevice::CreateEvent() {
  ASSIGN_OR_RETURN(std::unique_ptr<CudaEvent> e, CudaEvent::Create(index_));
  return std::unique_ptr<Event>(std::move(e));
}

absl::StatusOr<std::unique_ptr<Event>> CudaDevice::CreateTimingEvent() {
  ASSIGN_OR_RETURN(std::unique_ptr<CudaEvent> e, CudaEvent::Create(index_, cudaEventDefault));
  return std::unique_ptr<Event>(std::move(e));
}

absl::StatusOr<double> CudaDevice::EventElapsedMs(Event* start, Event* end) {
  ASSIGN_OR_RETURN(cudaEvent_t start_event, CudaEventArg(start, index_, "EventElapsedMs"));
  ASSIGN_OR_RETURN(cudaEvent_t end_event, CudaEventArg(end, index_, "EventElapsedMs"));
  CudaDeviceGuard guard(index_);
  CUDA_RETURN_IF_ERROR(cudaEventSynchronize(end_event));
  float ms = 0;
  CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start_event, end_event));
  return static_cast<double>(ms);
}

absl::Status CudaDevice::Copy(CopyKind kind, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  CudaDeviceGuard guard(index_);
  std::lock_guard<std::mutex> lock(sync_copy_mu_);
  CUDA_RETURN_IF_ERROR(cudaEventRecord(sync_copy_event_->get(), compute_->get()));
  CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(copy_->get(), sync_copy_event_->get(), 0));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, ToCuda(kind), copy_->get()));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(copy_->get()));
  return absl::OkStatus();
}

absl::Status CudaDevice::CopyAsync(CopyKind kind, void* dst, const void* src, size_t bytes,
                                   Stream* stream) {
  if (bytes == 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(cudaStream_t s, CudaStreamArg(stream, index_, "CopyAsync"));
  CudaDeviceGuard guard(index_);
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, ToCuda(kind), s));
  return absl::OkStatus();
}

absl::Status CudaDevice::BeginCapture(Stream* stream) {
  ASSIGN_OR_RETURN(cudaStream_t s, CudaStreamArg(stream, index_, "BeginCapture"));
  return BeginCudaCapture(index_, s, allocator_.get());
}

absl::StatusOr<std::unique_ptr<DeviceGraph>> CudaDevice::EndCapture(Stream* stream) {
  ASSIGN_OR_RETURN(cudaStream_t s, CudaStreamArg(stream, index_, "EndCapture"));
  ASSIGN_OR_RETURN(std::unique_ptr<CudaGraph> graph,
                   CudaGraph::EndCapture(index_, s, allocator_.get(), &deferred_checks_));
  return std::unique_ptr<DeviceGraph>(std::move(graph));
}

absl::Status CudaDevice::RecordEvent(Event* event, Stream* stream) {
  ASSIGN_OR_RETURN(cudaEvent_t e, CudaEventArg(event, index_, "RecordEvent"));
  ASSIGN_OR_RETURN(cudaStream_t s, CudaStreamArg(stream, index_, "RecordEvent"));
  CudaDeviceGuard guard(index_);
  CUDA_RETURN_IF_ERROR(cudaEventRecord(e, s));
  return absl::OkStatus();
}

absl::Status CudaDevice::StreamWaitEvent(Stream* stream, Event* event) {
  ASSIGN_OR_RETURN(cudaEvent_t e, CudaEventArg(event, index_, "StreamWaitEvent"));
  ASSIGN_OR_RETURN(cudaStream_t s, CudaStreamArg(stream, index_, "StreamWaitEvent"));
  CudaDeviceGuard guard(index_);
  CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(s, e, 0));
  return absl::OkStatus();
}

absl::Status CudaDevice::SynchronizeEvent(Event* event) {
  ASSIGN_OR_RETURN(cudaEvent_t e, CudaEventArg(event, index_, "SynchronizeEvent"));
  CudaDeviceGuard guard(index_);
  CUDA_RETURN_IF_ERROR(cudaEventSynchronize(e));
  return absl::OkStatus();
}

absl::Status CudaDevice::SynchronizeStream(Stream* stream) {
  ASSIGN_OR_RETURN(cudaStream_t s, CudaStreamArg(stream, index_, "SynchronizeStream"));
  CudaDeviceGuard guard(index_);
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
  return deferred_checks_.Resolve(s);
}

absl::Status CudaDevice::Synchronize() {
  CudaDeviceGuard guard(index_);
  CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  return deferred_checks_.Resolve(nullptr);
}

absl::Status CudaDevice::ReleaseCachedResources() {
  absl::Status first = Synchronize();
  first.Update(deferred_checks_.ReleaseFreeSlots());
  allocator_->EmptyCache();
  host_allocator_->EmptyCache();
  CudaDeviceGuard guard(index_);
  std::lock_guard<std::mutex> lock(cublas_mu_);
  if (cublas_ != nullptr) {
    first.Update(
        CublasStatus(cublasDestroy(cublas_), "cublasDestroy(cublas_)", __FILE__, __LINE__));
    cublas_ = nullptr;
    cublas_stream_ = nullptr;
  }
  return first;
}

absl::Status CudaDevice::WithCublas(Stream* stream,
                                    absl::FunctionRef<absl::Status(cublasHandle_t)> fn) {
  const cudaStream_t s = CudaStreamOf(stream);
  CudaDeviceGuard guard(index_);
  std::lock_guard<std::mutex> lock(cublas_mu_);
  if (cublas_ == nullptr) {
    cublasHandle_t handle = nullptr;
    CUBLAS_RETURN_IF_ERROR(cublasCreate(&handle));
    cublas_ = handle;  // on the legacy default stream (cublas_stream_ null)
  }
  if (s != cublas_stream_) {
    CUBLAS_RETURN_IF_ERROR(cublasSetStream(cublas_, s));
    cublas_stream_ = s;
  }
  return fn(cublas_);
}

}  // namespace cuda
}  // namespace tandem
