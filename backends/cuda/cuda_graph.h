// CUDA graph capture for CudaDevice (Device::BeginCapture / EndCapture).
//
//   RETURN_IF_ERROR(BeginCudaCapture(gpu_index, stream));   // work is recorded
//   ... kernels and cudaMemcpyAsync on `stream` ...
//   ASSIGN_OR_RETURN(std::unique_ptr<CudaGraph> g, CudaGraph::EndCapture(gpu_index, stream));
//   RETURN_IF_ERROR(g->Launch(device->compute_stream()));  // any stream of that GPU
//
// Capture uses cudaStreamCaptureModeRelaxed: other threads may keep using
// the GPU, and the caching allocator may cudaMalloc while a step is
// captured. What breaks a capture (a stream synchronisation, a synchronous
// copy waiting on the capturing stream) makes the call fail and the capture
// invalid; EndCapture then ends it and returns the error, and the GPU stays
// usable. A CudaGraph owns its cudaGraph_t and cudaGraphExec_t (destroyed
// with it); launches are asynchronous. Not thread-safe: one owner launches
// it. Errors carry file:line (cuda_status.h).
#ifndef TANDEM_BACKENDS_CUDA_CUDA_GRAPH_H_
#define TANDEM_BACKENDS_CUDA_CUDA_GRAPH_H_

#include <cuda_runtime_api.h>

#include <memory>

#include "absl/status/statusor.h"
#include "framework/device/device.h"

namespace tandem {
namespace cuda {

// Starts recording the work enqueued on `stream` of GPU `device`.
absl::Status BeginCudaCapture(int device, cudaStream_t stream);

class CudaGraph final : public DeviceGraph {
 public:
  // Ends the capture on `stream` and instantiates what it recorded.
  static absl::StatusOr<std::unique_ptr<CudaGraph>> EndCapture(int device, cudaStream_t stream);
  ~CudaGraph() override;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  // Enqueues the recorded work on `stream`, a stream of this backend.
  absl::Status Launch(Stream* stream) override;

 private:
  CudaGraph(int device, cudaGraph_t graph, cudaGraphExec_t exec)
      : device_(device), graph_(graph), exec_(exec) {}
  const int device_;
  const cudaGraph_t graph_;
  const cudaGraphExec_t exec_;
};

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_CUDA_GRAPH_H_
