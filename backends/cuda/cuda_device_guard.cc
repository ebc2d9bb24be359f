#include "backends/cuda/cuda_device_guard.h"

#include <cuda_runtime_api.h>

#include "glog/logging.h"

namespace tandem {
namespace cuda {

int ExchangeCudaDevice(int index) {
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  if (current != index) {
    const cudaError_t error = cudaSetDevice(index);
    if (error != cudaSuccess) {
      cudaGetLastError();
      LOG(ERROR) << "cudaSetDevice(" << index << ") failed: " << cudaGetErrorString(error);
    }
  }
  return current;
}

}  // namespace cuda
}  // namespace tandem
