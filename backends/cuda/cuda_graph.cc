#include "backends/cuda/cuda_graph.h"

#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_device_guard.h"
#include "backends/cuda/cuda_status.h"
#include "glog/logging.h"

namespace tandem {
namespace cuda {

absl::Status BeginCudaCapture(int device, cudaStream_t stream) {
  CudaDeviceGuard guard(device);
  CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CudaGraph>> CudaGraph::EndCapture(int device,
                                                                 cudaStream_t stream) {
  CudaDeviceGuard guard(device);
  cudaGraph_t graph = nullptr;
  CUDA_RETURN_IF_ERROR(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
  if (instantiated != cudaSuccess) {
    cudaGraphDestroy(graph);
    return CudaStatus(instantiated, "cudaGraphInstantiate(&exec, graph, 0)", __FILE__, __LINE__);
  }
  return std::unique_ptr<CudaGraph>(new CudaGraph(device, graph, exec));
}

CudaGraph::~CudaGraph() {
  CudaDeviceGuard guard(device_);
  const absl::Status exec =
      CudaStatus(cudaGraphExecDestroy(exec_), "cudaGraphExecDestroy", __FILE__, __LINE__);
  LOG_IF(ERROR, !exec.ok()) << exec;
  const absl::Status graph =
      CudaStatus(cudaGraphDestroy(graph_), "cudaGraphDestroy", __FILE__, __LINE__);
  LOG_IF(ERROR, !graph.ok()) << graph;
}

absl::Status CudaGraph::Launch(Stream* stream) {
  CudaDeviceGuard guard(device_);
  CUDA_RETURN_IF_ERROR(cudaGraphLaunch(exec_, CudaStreamOf(stream)));
  return absl::OkStatus();
}

}  // namespace cuda
}  // namespace tandem
