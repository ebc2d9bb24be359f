// The two 16-bit floating types: bfloat16 (8 exponent bits, 7 mantissa bits:
// float32's range at lower precision) and float16 (IEEE 754 binary16: 5
// exponent bits, 10 mantissa bits, largest finite value 65504).
//
//   bfloat16 b(3.14159f);              // rounds to nearest even: 3.140625
//   float f = static_cast<float>(b);   // exact: every bfloat16 is a float
//   float16 h(70000.0f);               // beyond 65504: +inf, as IEEE says
//   bfloat16::FromBits(0x7f80);        // +inf
//
// Both are plain 2-byte values (trivially copyable, standard layout, no
// padding), so tensors of them are arrays of their bits, the layout of
// CUDA's __nv_bfloat16 / __half, numpy's ml_dtypes.bfloat16 / float16 and
// safetensors' BF16 / F16. Arithmetic is not defined on them: kernels load
// them as float, compute in float and store back (the conversions below).
//
// Conversions follow IEEE 754: to a 16-bit type rounds to nearest, ties to
// even, from float32 and from float64 alike (float64 is rounded once, not
// twice); overflow gives +-inf, underflow gives subnormals and then +-0;
// NaN stays NaN (quiet) with its sign; from an integer converts its value
// as float64 first. To float32 / float64 is exact. To an integer goes
// through float32 (truncation toward zero, as C++'s conversions).
// Comparisons are those of the float values (-0 == +0, NaN != NaN).
// Header-only, stateless, thread-safe.
#ifndef TANDEM_FRAMEWORK_TYPES_FLOAT16_H_
#define TANDEM_FRAMEWORK_TYPES_FLOAT16_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace tandem {
namespace float16_internal {

inline uint32_t BitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
inline float FloatOfBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// `d` rounded to float32 toward zero, with the last mantissa bit set when
// the rounding was inexact ("round to odd"). Rounding that float once more
// to nearest-even at 8 or 11 mantissa bits gives exactly the correctly
// rounded result of `d`: float32 keeps more than two extra bits.
inline float RoundToOddFloat(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(d) || static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  return FloatOfBits(BitsOf(f) | 1u);
}

inline uint16_t BFloat16BitsFromFloat(float f) {
  const uint32_t u = BitsOf(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  // Adding 0x7fff plus the kept part's lowest bit rounds to nearest even;
  // a carry runs into the exponent (up to +-inf) as it should.
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

inline float FloatFromBFloat16Bits(uint16_t bits) {
  return FloatOfBits(static_cast<uint32_t>(bits) << 16);
}

inline uint16_t Float16BitsFromFloat(float f) {
  const uint32_t all = BitsOf(f);
  const uint16_t sign = static_cast<uint16_t>((all >> 16) & 0x8000u);
  const uint32_t u = all & 0x7fffffffu;
  if (u > 0x7f800000u) return sign | 0x7e00u | ((u >> 13) & 0x3ffu);  // NaN, quiet
  if (u >= 0x477ff000u) return sign | 0x7c00u;                        // >= 65520 (and inf): inf
  if (u >= 0x38800000u) {                                             // >= 2^-14: a normal float16
    const uint32_t rounded = u + 0x0fffu + ((u >> 13) & 1u);
    return sign | static_cast<uint16_t>((rounded - 0x38000000u) >> 13);
  }
  if (u <= 0x33000000u) return sign;  // <= 2^-25 (a tie at 2^-25): zero
  // A subnormal float16: the value is m * 2^(e - 150); in units of 2^-24
  // that is m >> (126 - e), rounded to nearest even.
  const uint32_t exponent = u >> 23;
  const uint32_t mantissa = (u & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - exponent;
  uint32_t result = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (result & 1u))) ++result;
  return sign | static_cast<uint16_t>(result);
}

inline float FloatFromFloat16Bits(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1fu) return FloatOfBits(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  return FloatOfBits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// The shared shape of bfloat16 and float16: `Traits` supplies the two bit
// conversions to and from float.
template <typename Traits>
struct Float16Value {
  uint16_t bits;

  Float16Value() = default;  // uninitialised, like float
  explicit Float16Value(float f) : bits(Traits::FromFloat(f)) {}
  explicit Float16Value(double d) : bits(Traits::FromFloat(RoundToOddFloat(d))) {}
  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
  explicit Float16Value(I i) : Float16Value(static_cast<double>(i)) {}

  static Float16Value FromBits(uint16_t b) {
    Float16Value v;
    v.bits = b;
    return v;
  }

  explicit operator float() const { return Traits::ToFloat(bits); }
  explicit operator double() const { return static_cast<double>(Traits::ToFloat(bits)); }
  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
  explicit operator I() const {
    if constexpr (std::is_same_v<I, bool>) {
      return Traits::ToFloat(bits) != 0.0f;
    } else {
      return static_cast<I>(Traits::ToFloat(bits));
    }
  }

  friend bool operator==(Float16Value a, Float16Value b) {
    return static_cast<float>(a) == static_cast<float>(b);
  }
  friend bool operator!=(Float16Value a, Float16Value b) { return !(a == b); }
  friend bool operator<(Float16Value a, Float16Value b) {
    return static_cast<float>(a) < static_cast<float>(b);
  }
};

struct BFloat16Traits {
  static uint16_t FromFloat(float f) { return BFloat16BitsFromFloat(f); }
  static float ToFloat(uint16_t b) { return FloatFromBFloat16Bits(b); }
};
struct Float16Traits {
  static uint16_t FromFloat(float f) { return Float16BitsFromFloat(f); }
  static float ToFloat(uint16_t b) { return FloatFromFloat16Bits(b); }
};

}  // namespace float16_internal

using bfloat16 = float16_internal::Float16Value<float16_internal::BFloat16Traits>;
using float16 = float16_internal::Float16Value<float16_internal::Float16Traits>;

static_assert(sizeof(bfloat16) == 2 && std::is_trivially_copyable_v<bfloat16>);
static_assert(sizeof(float16) == 2 && std::is_trivially_copyable_v<float16>);

// True for bfloat16 and float16.
template <typename T>
inline constexpr bool kIsLowPrecisionFloat =
    std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>;

// True for float, double, bfloat16 and float16.
template <typename T>
inline constexpr bool kIsFloatingType = std::is_floating_point_v<T> || kIsLowPrecisionFloat<T>;

// The type a kernel computes T in: float for the 16-bit types, T otherwise.
template <typename T>
using ComputeTypeOf = std::conditional_t<kIsLowPrecisionFloat<T>, float, T>;

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_TYPES_FLOAT16_H_
