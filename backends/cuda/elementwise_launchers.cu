// Element-wise kernels: fill, repeat a row, scale, cast. See
// elementwise_launchers.h.
#include <cstdint>
#include <type_traits>

#include "backends/cuda/device_float16.h"
#include "backends/cuda/device_reduce.h"
#include "backends/cuda/elementwise_launchers.h"

namespace tandem {
namespace cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;

int Blocks(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

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

template <typename From, typename To>
__global__ void CastKernel(const From* x, To* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    out[i] = device::Convert<To>(x[i]);
  }
}

// kCastPack consecutive elements, read and written as one aligned value
// (vector loads and stores instead of one narrow access per element).
constexpr int kCastPack = 8;
template <typename T>
struct alignas(sizeof(T) * kCastPack) CastPack {
  T v[kCastPack];
};

template <typename From, typename To>
__global__ void CastPackedKernel(const CastPack<From>* x, CastPack<To>* out, int64_t packs) {
  for (int64_t p = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; p < packs;
       p += int64_t{blockDim.x} * gridDim.x) {
    const CastPack<From> in = x[p];
    CastPack<To> o;
#pragma unroll
    for (int k = 0; k < kCastPack; ++k) o.v[k] = device::Convert<To>(in.v[k]);
    out[p] = o;
  }
}

}  // namespace

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
  if (n == 0) return cudaSuccess;
  // Whole packs, where both tensors are aligned to a pack (allocations are
  // 64-byte aligned), then the rest element by element.
  int64_t done = 0;
  if (device::AlignedTo(x, sizeof(CastPack<From>)) &&
      device::AlignedTo(out, sizeof(CastPack<To>))) {
    const int64_t packs = n / kCastPack;
    if (packs > 0) {
      CastPackedKernel<From, To><<<Blocks(packs), kThreads, 0, stream>>>(
          reinterpret_cast<const CastPack<From>*>(x), reinterpret_cast<CastPack<To>*>(out), packs);
    }
    done = packs * kCastPack;
  }
  if (done < n) {
    CastKernel<From, To><<<Blocks(n - done), kThreads, 0, stream>>>(x + done, out + done, n - done);
  }
  return cudaGetLastError();
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
