#include "backends/cuda/cuda_graph.h"

#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_device_guard.h"
#include "backends/cuda/cuda_status.h"
#include "glog/logging.h"

namespace tandem {
namespace cuda {

absl::Status BeginCudaCapture(int device, cudaStream_t stream, CachingAllocator* memory) {
  CudaDeviceGuard guard(device);
  memory->BeginHolding();
  const cudaError_t begun = cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed);
  if (begun != cudaSuccess) {
    memory->ReleaseHeld(memory->EndHolding());
    return CudaStatus(begun, "cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed)",
                      __FILE__, __LINE__);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CudaGraph>> CudaGraph::EndCapture(int device, cudaStream_t stream,
                                                                 CachingAllocator* memory,
                                                                 DeferredChecks* checks) {
  CudaDeviceGuard guard(device);
  std::vector<CachingAllocator::HeldBlock> held = memory->EndHolding();
  std::vector<DeferredChecks::Captured> captured;
  if (checks != nullptr) captured = checks->TakeCaptured(stream);
  cudaGraph_t graph = nullptr;
  cudaError_t error = cudaStreamEndCapture(stream, &graph);
  const char* expr = "cudaStreamEndCapture(stream, &graph)";
  cudaGraphExec_t exec = nullptr;
  if (error == cudaSuccess) {
    error = cudaGraphInstantiate(&exec, graph, 0);
    expr = "cudaGraphInstantiate(&exec, graph, 0)";
    if (error != cudaSuccess) cudaGraphDestroy(graph);
  }
  if (error != cudaSuccess) {
    memory->ReleaseHeld(held);  // no graph uses them
    if (checks != nullptr) checks->ReleaseCaptured(captured);
    return CudaStatus(error, expr, __FILE__, __LINE__);
  }
  return std::unique_ptr<CudaGraph>(
      new CudaGraph(device, graph, exec, memory, std::move(held), checks, std::move(captured)));
}

CudaGraph::~CudaGraph() {
  CudaDeviceGuard guard(device_);
  const absl::Status exec =
      CudaStatus(cudaGraphExecDestroy(exec_), "cudaGraphExecDestroy", __FILE__, __LINE__);
  LOG_IF(ERROR, !exec.ok()) << exec;
  const absl::Status graph =
      CudaStatus(cudaGraphDestroy(graph_), "cudaGraphDestroy", __FILE__, __LINE__);
  LOG_IF(ERROR, !graph.ok()) << graph;
  memory_->ReleaseHeld(held_);
  if (checks_ != nullptr) checks_->ReleaseCaptured(captured_);
}

absl::Status CudaGraph::Launch(Stream* stream) {
  CudaDeviceGuard guard(device_);
  if (checks_ != nullptr) checks_->ArmCaptured(captured_, CudaStreamOf(stream));
  CUDA_RETURN_IF_ERROR(cudaGraphLaunch(exec_, CudaStreamOf(stream)));
  return absl::OkStatus();
}

}  // namespace cuda
}  // namespace tandem
