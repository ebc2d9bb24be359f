// Device-side conversions of the 16-bit floating types
// (framework/types/float16.h): on the GPU too a bfloat16 or float16 value
// is its bits, converted through float exactly as the host converts it.
// Widening is exact; narrowing rounds once to nearest even (from float64 by
// rounding to odd at float32 first, so no double rounding). CUDA code:
// include it only from .cu files.
//
//   template <typename T>                    // float, double, bfloat16, float16
//   __global__ void Twice(const T* x, T* out, int64_t n) {
//     using C = device::ComputeOf<T>;       // float for the 16-bit types
//     TANDEM_GRID_LOOP(i, n) { out[i] = device::Narrow<T>(C(2) * device::Widen(x[i])); }
//   }
#ifndef TANDEM_BACKENDS_CUDA_DEVICE_FLOAT16_H_
#define TANDEM_BACKENDS_CUDA_DEVICE_FLOAT16_H_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "framework/types/float16.h"

namespace tandem {
namespace cuda {
namespace device {

// The type a kernel computes T in: float for the 16-bit types, T otherwise.
template <typename T>
using ComputeOf = ComputeTypeOf<T>;

__device__ __forceinline__ float Widen(bfloat16 v) {
  return __uint_as_float(static_cast<uint32_t>(v.bits) << 16);
}
__device__ __forceinline__ float Widen(float16 v) { return __half2float(__ushort_as_half(v.bits)); }
template <typename T>
__device__ __forceinline__ T Widen(T v) {
  return v;
}

// `d` rounded to float by truncation, its last bit set when inexact (round
// to odd): rounding that to a 16-bit type gives the correctly rounded value.
__device__ __forceinline__ float RoundToOddFloat(double d) {
  if (isnan(d)) {  // the host's conversion: the sign and the payload's top bits, quiet
    const uint64_t b = static_cast<uint64_t>(__double_as_longlong(d));
    return __uint_as_float((static_cast<uint32_t>(b >> 32) & 0x80000000u) | 0x7fc00000u |
                           static_cast<uint32_t>((b >> 29) & 0x3fffffu));
  }
  const float truncated = __double2float_rz(d);
  if (static_cast<double>(truncated) == d) return truncated;
  return __uint_as_float(__float_as_uint(truncated) | 1u);
}

// A value of the compute type as T, rounded once. A NaN keeps its sign and
// the top of its payload, made quiet, as the host's conversion does (CUDA's
// intrinsics return one canonical NaN).
template <typename T>
__device__ __forceinline__ T Narrow(ComputeOf<T> v) {
  if constexpr (std::is_same<T, bfloat16>::value) {
    bfloat16 r;
    const uint32_t u = __float_as_uint(v);
    r.bits = (u & 0x7fffffffu) > 0x7f800000u ? static_cast<uint16_t>((u >> 16) | 0x0040u)
                                             : __bfloat16_as_ushort(__float2bfloat16_rn(v));
    return r;
  } else if constexpr (std::is_same<T, float16>::value) {
    float16 r;
    const uint32_t u = __float_as_uint(v);
    r.bits = (u & 0x7fffffffu) > 0x7f800000u
                 ? static_cast<uint16_t>(((u >> 16) & 0x8000u) | 0x7e00u | ((u >> 13) & 0x3ffu))
                 : __half_as_ushort(__float2half_rn(v));
    return r;
  } else {
    return v;
  }
}

// v as To (cast's conversion): through float for the 16-bit types, a
// nonzero test for bool, static_cast otherwise.
template <typename To, typename From>
__device__ __forceinline__ To Convert(From v) {
  if constexpr (kIsLowPrecisionFloat<From>) {
    return Convert<To>(Widen(v));
  } else if constexpr (kIsLowPrecisionFloat<To>) {
    if constexpr (std::is_same<From, float>::value) {
      return Narrow<To>(v);
    } else {
      return Narrow<To>(RoundToOddFloat(static_cast<double>(v)));
    }
  } else if constexpr (std::is_same<To, bool>::value) {
    return v != From(0);
  } else {
    return static_cast<To>(v);
  }
}

// An update kernel's gradient element grad[i] as T (the parameter's type):
// a 16-bit G widened exactly, then times `scale` when `scaled`, rounded once
// in T by a multiply that is never contracted into a later add (as the host
// kernels scale a block of the gradient before the update reads it).
__device__ __forceinline__ float MulRounded(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double MulRounded(double a, double b) { return __dmul_rn(a, b); }
// GradScale as an update kernel reads it, once per thread: *scale, or 1
// (nothing scaled) when null. It lives in device memory, written by an
// earlier kernel of the stream (global_norm_clip's), so no launch waits for
// it on the host.
template <typename T>
__device__ __forceinline__ T ScaleAt(const T* scale) {
  return scale == nullptr ? T(1) : *scale;
}
template <typename T, typename G>
__device__ __forceinline__ T GradAt(const G* grad, int64_t i, T scale, bool scaled) {
  const T g = static_cast<T>(Widen(grad[i]));
  return scaled ? MulRounded(g, scale) : g;
}

}  // namespace device
}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_DEVICE_FLOAT16_H_
