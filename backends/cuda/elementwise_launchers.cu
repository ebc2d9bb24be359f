// Element-wise kernels: fill, repeat a row, scale, cast. See
// elementwise_launchers.h.
#include <cstdint>
#include <type_traits>

#include "backends/cuda/device_float16.h"
#include "backends/cuda/device_map.h"
#include "backends/cuda/device_reduce.h"
#include "backends/cuda/elementwise_launchers.h"

namespace tandem {
namespace cuda {
namespace {

using device::Blocks;
using device::kThreads;

template <typename T>
__global__ void FillKernel(T* out, int64_t n, T value) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    out[i] = value;
  }
}

// scale * x + bias with one rounding (a fused multiply-add, which is what the
// host compiler makes of `s * x + b` with FMA contraction) and
// scale * (x + bias) with two, whatever nvcc's contraction settings.
__device__ float MulAdd(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ double MulAdd(double a, double b, double c) { return __fma_rn(a, b, c); }
__device__ float Mul(float a, float b) { return __fmul_rn(a, b); }
__device__ double Mul(double a, double b) { return __dmul_rn(a, b); }
__device__ float Add(float a, float b) { return __fadd_rn(a, b); }
__device__ double Add(double a, double b) { return __dadd_rn(a, b); }

template <typename T>
__global__ void ScaleFloatKernel(const T* x, T* out, int64_t n, T scale, T bias,
                                 bool bias_after_scale) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    out[i] = bias_after_scale ? MulAdd(scale, x[i], bias) : Mul(scale, Add(x[i], bias));
  }
}

template <typename T>
__global__ void ScaleIntKernel(const T* x, T* out, int64_t n, double scale, double bias,
                               bool bias_after_scale) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const double v = static_cast<double>(x[i]);
    out[i] = static_cast<T>(bias_after_scale ? MulAdd(scale, v, bias) : Mul(scale, Add(v, bias)));
  }
}

template <typename T>
__global__ void RepeatRowKernel(const T* row, int64_t total, int64_t n, T* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{blockDim.x} * gridDim.x) {
    out[i] = row[i % n];
  }
}

// One element converted (device::Convert), as a functor for device::LaunchMap.
template <typename To>
struct ConvertTo {
  template <typename From>
  __device__ __forceinline__ To operator()(From v) const {
    return device::Convert<To>(v);
  }
};

// first[i] = second[i] = x[i], packed as device::LaunchMap.
template <typename T>
__global__ void PackedCopyToTwoKernel(const T* x, T* first, T* second, int64_t n) {
  using Pack = device::MapPack<T>;
  const int64_t packs = n / device::kMapPack;
  TANDEM_GRID_LOOP(p, packs) {
    const Pack v = device::PackAt(x, p);
    reinterpret_cast<Pack*>(first)[p] = v;
    reinterpret_cast<Pack*>(second)[p] = v;
  }
  const int64_t rest = packs * device::kMapPack + blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (rest < n) first[rest] = second[rest] = x[rest];
}

template <typename T>
__global__ void CopyToTwoKernel(const T* x, T* first, T* second, int64_t n) {
  TANDEM_GRID_LOOP(i, n) { first[i] = second[i] = x[i]; }
}

}  // namespace

template <typename T>
cudaError_t LaunchCopyToTwo(const T* x, T* first, T* second, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const uintptr_t pack = sizeof(device::MapPack<T>);
  if (device::AlignedTo(x, pack) && device::AlignedTo(first, pack) &&
      device::AlignedTo(second, pack)) {
    PackedCopyToTwoKernel<T>
        <<<Blocks(device::PackedThreads(n)), kThreads, 0, stream>>>(x, first, second, n);
  } else {
    CopyToTwoKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, first, second, n);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchFill(T* out, int64_t n, T value, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  FillKernel<T><<<Blocks(n), kThreads, 0, stream>>>(out, n, value);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchScale(const T* x, T* out, int64_t n, double scale, double bias,
                        bool bias_after_scale, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if constexpr (std::is_floating_point<T>::value) {
    ScaleFloatKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, out, n, static_cast<T>(scale),
                                                            static_cast<T>(bias), bias_after_scale);
  } else {
    ScaleIntKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, out, n, scale, bias, bias_after_scale);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchRepeatRow(const T* row, int64_t rows, int64_t n, T* out, cudaStream_t stream) {
  const int64_t total = rows * n;
  if (total == 0) return cudaSuccess;
  RepeatRowKernel<T><<<Blocks(total), kThreads, 0, stream>>>(row, total, n, out);
  return cudaGetLastError();
}

template <typename From, typename To>
cudaError_t LaunchCast(const From* x, To* out, int64_t n, cudaStream_t stream) {
  return device::LaunchMap(ConvertTo<To>(), x, out, n, stream);
}

#define TANDEM_FILL(T) template cudaError_t LaunchFill<T>(T*, int64_t, T, cudaStream_t);
TANDEM_FILL(float)
TANDEM_FILL(double)
TANDEM_FILL(int32_t)
TANDEM_FILL(int64_t)
TANDEM_FILL(bool)
TANDEM_FILL(bfloat16)
TANDEM_FILL(float16)
#undef TANDEM_FILL

#define TANDEM_REPEAT_ROW(T) \
  template cudaError_t LaunchRepeatRow<T>(const T*, int64_t, int64_t, T*, cudaStream_t);
TANDEM_REPEAT_ROW(bfloat16)
TANDEM_REPEAT_ROW(float16)
#undef TANDEM_REPEAT_ROW

#define TANDEM_SCALE(T) \
  template cudaError_t LaunchScale<T>(const T*, T*, int64_t, double, double, bool, cudaStream_t);
TANDEM_SCALE(float)
TANDEM_SCALE(double)
TANDEM_SCALE(int32_t)
TANDEM_SCALE(int64_t)
#undef TANDEM_SCALE

#define TANDEM_COPY_TO_TWO(T) \
  template cudaError_t LaunchCopyToTwo<T>(const T*, T*, T*, int64_t, cudaStream_t);
TANDEM_COPY_TO_TWO(float)
TANDEM_COPY_TO_TWO(double)
TANDEM_COPY_TO_TWO(int32_t)
TANDEM_COPY_TO_TWO(int64_t)
TANDEM_COPY_TO_TWO(bfloat16)
TANDEM_COPY_TO_TWO(float16)
#undef TANDEM_COPY_TO_TWO

#define TANDEM_CAST(From, To) \
  template cudaError_t LaunchCast<From, To>(const From*, To*, int64_t, cudaStream_t);
#define TANDEM_CAST_FROM(From) \
  TANDEM_CAST(From, float)     \
  TANDEM_CAST(From, double)    \
  TANDEM_CAST(From, int32_t)   \
  TANDEM_CAST(From, int64_t)   \
  TANDEM_CAST(From, bool)      \
  TANDEM_CAST(From, bfloat16)  \
  TANDEM_CAST(From, float16)
TANDEM_CAST_FROM(float)
TANDEM_CAST_FROM(double)
TANDEM_CAST_FROM(int32_t)
TANDEM_CAST_FROM(int64_t)
TANDEM_CAST_FROM(bool)
TANDEM_CAST_FROM(bfloat16)
TANDEM_CAST_FROM(float16)
#undef TANDEM_CAST_FROM
#undef TANDEM_CAST

}  // namespace cuda
}  // namespace tandem
