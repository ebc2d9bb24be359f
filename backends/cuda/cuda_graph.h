// CUDA graph capture for CudaDevice (Device::BeginCapture / EndCapture).
//
//   RETURN_IF_ERROR(BeginCudaCapture(gpu_index, stream, memory));   // work is recorded
//   ... kernels and cudaMemcpyAsync on `stream` ...
//   ASSIGN_OR_RETURN(std::unique_ptr<CudaGraph> g,
//                    CudaGraph::EndCapture(gpu_index, stream, memory));
//   RETURN_IF_ERROR(g->Launch(device->compute_stream()));  // any stream of that GPU
//
// Capture uses cudaStreamCaptureModeRelaxed: other threads may keep using
// the GPU, and the caching allocator may cudaMalloc while a step is
// captured. What breaks a capture (a stream synchronisation, a synchronous
// copy waiting on the capturing stream) makes the call fail and the capture
// invalid; EndCapture then ends it and returns the error, and the GPU stays
// usable. Kernels' deferred input checks (deferred_checks.h) armed while
// capturing belong to the graph and are armed again at each launch, so a
// replay reports bad input at the stream's next synchronisation as an eager
// launch does. Device memory freed while capturing (kernel temporaries) is held
// from `memory`'s cache for as long as the graph lives (it still uses it).
// A CudaGraph owns its cudaGraph_t, cudaGraphExec_t and held blocks
// (released with it); launches are asynchronous. Not thread-safe: one owner launches
// it. Errors carry file:line (cuda_status.h).
#ifndef TANDEM_BACKENDS_CUDA_CUDA_GRAPH_H_
#define TANDEM_BACKENDS_CUDA_CUDA_GRAPH_H_

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cuda/caching_allocator.h"
#include "backends/cuda/deferred_checks.h"
#include "framework/device/device.h"

namespace tandem {
namespace cuda {

// Starts recording the work enqueued on `stream` of GPU `device`, and
// holding what `memory` (that GPU's allocator) frees meanwhile.
absl::Status BeginCudaCapture(int device, cudaStream_t stream, CachingAllocator* memory);

class CudaGraph final : public DeviceGraph {
 public:
  // Ends the capture on `stream` and instantiates what it recorded; the
  // graph keeps the blocks `memory` held since BeginCudaCapture (on error
  // they go back to the cache).
  // `checks` (may be null): the GPU's deferred input checks; the checks
  // armed during the capture are the graph's, armed again at each launch.
  static absl::StatusOr<std::unique_ptr<CudaGraph>> EndCapture(int device, cudaStream_t stream,
                                                               CachingAllocator* memory,
                                                               DeferredChecks* checks = nullptr);
  ~CudaGraph() override;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  // Enqueues the recorded work on `stream`, a stream of this backend.
  absl::Status Launch(Stream* stream) override;

 private:
  CudaGraph(int device, cudaGraph_t graph, cudaGraphExec_t exec, CachingAllocator* memory,
            std::vector<CachingAllocator::HeldBlock> held, DeferredChecks* checks,
            std::vector<DeferredChecks::Captured> captured)
      : device_(device),
        graph_(graph),
        exec_(exec),
        memory_(memory),
        held_(std::move(held)),
        checks_(checks),
        captured_(std::move(captured)) {}
  const int device_;
  const cudaGraph_t graph_;
  const cudaGraphExec_t exec_;
  CachingAllocator* const memory_;
  const std::vector<CachingAllocator::HeldBlock> held_;
  DeferredChecks* const checks_;
  const std::vector<DeferredChecks::Captured> captured_;  // armed at each launch
};

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_CUDA_GRAPH_H_
