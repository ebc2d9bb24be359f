// CudaDeviceGuard: makes a GPU the calling thread's current CUDA device for a
// scope, so that every CUDA call of the backend lands on the right device.
//
//   {
//     CudaDeviceGuard guard(1);           // cudaSetDevice(1) if needed
//     CUDA_RETURN_IF_ERROR(cudaMalloc(&p, n));
//   }                                     // previous device restored
//
// ExchangeCudaDevice is the only place in the tree that calls cudaSetDevice;
// the framework's DeviceGuard reaches it through the gpu DeviceFactory.
// Synchronous and cheap (no call when the device is already current). Each
// guard affects only its own thread; not copyable or movable.
#ifndef TANDEM_BACKENDS_CUDA_CUDA_DEVICE_GUARD_H_
#define TANDEM_BACKENDS_CUDA_CUDA_DEVICE_GUARD_H_

namespace tandem {
namespace cuda {

// Makes `index` the thread's current CUDA device and returns the previous
// one. Without a usable driver it does nothing and returns 0; a failure to
// switch is logged (the place was validated earlier, so it means the
// hardware or driver failed; the next CUDA call reports it as a status).
int ExchangeCudaDevice(int index);

class CudaDeviceGuard {
 public:
  explicit CudaDeviceGuard(int index) : previous_(ExchangeCudaDevice(index)) {}
  ~CudaDeviceGuard() { ExchangeCudaDevice(previous_); }
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;

 private:
  int previous_;
};

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_CUDA_DEVICE_GUARD_H_
