// TANDEM_HOST_DEVICE marks a function that the host compiler and nvcc both
// compile (for the CPU and for the GPU), so host and CUDA kernels share one
// definition of their arithmetic: binary_op.h, activation.h.
//
//   template <typename T>
//   TANDEM_HOST_DEVICE inline T Twice(T x) { return x + x; }
#ifndef TANDEM_BACKENDS_COMMON_HOST_DEVICE_H_
#define TANDEM_BACKENDS_COMMON_HOST_DEVICE_H_

#if defined(__CUDACC__)
#define TANDEM_HOST_DEVICE __host__ __device__
#else
#define TANDEM_HOST_DEVICE
#endif

#endif  // TANDEM_BACKENDS_COMMON_HOST_DEVICE_H_
