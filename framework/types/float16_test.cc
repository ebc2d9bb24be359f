#include "framework/types/float16.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace tandem {
namespace {

// Every finite non-negative value of T in increasing order, from its bits.
template <typename T>
std::vector<double> FinitePositiveValues() {
  std::vector<double> values;
  for (uint32_t b = 0; b < 0x8000u; ++b) {
    const double v = static_cast<double>(static_cast<float>(T::FromBits(b)));
    if (std::isfinite(v)) values.push_back(v);
  }
  return values;
}

// The correctly rounded value of x in T, found by search over T's values
// (independent of the bit tricks under test): nearest, ties to the value
// with an even last bit, beyond the largest finite value plus half an ulp
// infinity.
template <typename T>
double ReferenceRound(double x, const std::vector<double>& values) {
  if (std::isnan(x)) return x;
  const double magnitude = std::fabs(x);
  const double largest = values.back();
  const double ulp_at_top = largest - values[values.size() - 2];
  double result;
  if (magnitude >= largest + ulp_at_top / 2) {
    result = std::numeric_limits<double>::infinity();
  } else {
    const auto above = std::lower_bound(values.begin(), values.end(), magnitude);
    if (above == values.end()) {
      result = largest;
    } else if (*above == magnitude || above == values.begin()) {
      result = *above;
    } else {
      const double hi = *above, lo = *(above - 1);
      const size_t hi_index = above - values.begin();
      if (magnitude - lo < hi - magnitude) {
        result = lo;
      } else if (hi - magnitude < magnitude - lo) {
        result = hi;
      } else {
        result = (hi_index % 2 == 0) ? hi : lo;  // bits are the index: even last bit
      }
    }
  }
  return std::signbit(x) ? -result : result;
}

template <typename T>
void ExpectAllBitsRoundTripThroughFloat() {
  for (uint32_t b = 0; b <= 0xffffu; ++b) {
    const T v = T::FromBits(static_cast<uint16_t>(b));
    const float f = static_cast<float>(v);
    const T back(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(static_cast<float>(back))) << b;
      EXPECT_EQ(back.bits & 0x8000u, b & 0x8000u) << "NaN keeps its sign, bits " << b;
    } else {
      ASSERT_EQ(back.bits, b) << "value " << f;
      EXPECT_EQ(static_cast<double>(v), static_cast<double>(f));
    }
  }
}

TEST(Float16, EveryBitPatternRoundTripsThroughFloat) {
  ExpectAllBitsRoundTripThroughFloat<bfloat16>();
  ExpectAllBitsRoundTripThroughFloat<float16>();
}

template <typename T>
void ExpectRoundsLikeReference(uint64_t seed) {
  const std::vector<double> values = FinitePositiveValues<T>();
  std::mt19937_64 rng(seed);
  std::vector<float> inputs;
  // Random bit patterns cover every exponent; values near T's range and
  // exact midpoints between neighbours cover the rounding edges.
  for (int i = 0; i < 400000; ++i) inputs.push_back(float16_internal::FloatOfBits(uint32_t(rng())));
  std::uniform_real_distribution<float> near(-70000.0f, 70000.0f);
  for (int i = 0; i < 100000; ++i) inputs.push_back(near(rng));
  for (size_t i = 0; i + 1 < values.size(); i += 7) {
    inputs.push_back(static_cast<float>((values[i] + values[i + 1]) / 2));
    inputs.push_back(-static_cast<float>((values[i] + values[i + 1]) / 2));
  }
  for (float x : inputs) {
    const double expected = ReferenceRound<T>(x, values);
    const double got = static_cast<double>(static_cast<float>(T(x)));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(got)) << x;
    } else {
      ASSERT_EQ(got, expected) << "input " << x;
      ASSERT_EQ(std::signbit(got), std::signbit(expected)) << "input " << x;
    }
  }
}

TEST(Float16, FloatRoundsToNearestEvenLikeASearchOverAllValues) {
  ExpectRoundsLikeReference<bfloat16>(1);
  ExpectRoundsLikeReference<float16>(2);
}

TEST(Float16, DoubleRoundsOnceNotTwice) {
  // 1 + 2^-8 + 2^-30 rounds to float as 1 + 2^-8, exactly halfway between
  // two bfloat16 values (ties to even: 1). Rounded once it is above the
  // midpoint: 1 + 2^-7.
  const double x = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  EXPECT_EQ(static_cast<float>(bfloat16(static_cast<float>(x))), 1.0f);
  EXPECT_EQ(static_cast<float>(bfloat16(x)), 1.0f + std::ldexp(1.0f, -7));
  // The same trap for float16 (10 mantissa bits).
  const double y = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(static_cast<float>(float16(static_cast<float>(y))), 1.0f);
  EXPECT_EQ(static_cast<float>(float16(y)), 1.0f + std::ldexp(1.0f, -10));
  std::mt19937_64 rng(3);
  const std::vector<double> b_values = FinitePositiveValues<bfloat16>();
  const std::vector<double> h_values = FinitePositiveValues<float16>();
  std::uniform_real_distribution<double> wide(-1e5, 1e5);
  for (int i = 0; i < 200000; ++i) {
    const double d = wide(rng) * std::ldexp(1.0, static_cast<int>(rng() % 40) - 30);
    ASSERT_EQ(static_cast<double>(bfloat16(d)), ReferenceRound<bfloat16>(d, b_values)) << d;
    ASSERT_EQ(static_cast<double>(float16(d)), ReferenceRound<float16>(d, h_values)) << d;
  }
}

TEST(Float16, IeeeEdges) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(static_cast<float>(bfloat16(3.14159f)), 3.140625f);
  EXPECT_EQ(float16(65504.0f).bits, 0x7bffu);
  EXPECT_EQ(float16(65519.99f).bits, 0x7bffu);
  EXPECT_EQ(float16(65520.0f).bits, 0x7c00u);
  EXPECT_EQ(float16(-1e9f).bits, 0xfc00u);
  EXPECT_EQ(static_cast<float>(float16(inf)), inf);
  EXPECT_EQ(static_cast<float>(bfloat16(-inf)), -inf);
  EXPECT_EQ(static_cast<float>(bfloat16(std::numeric_limits<float>::max())), inf);
  EXPECT_EQ(float16(std::ldexp(1.0f, -24)).bits, 0x0001u);  // smallest subnormal
  EXPECT_EQ(float16(std::ldexp(1.0f, -25)).bits, 0x0000u);  // tie: to even (0)
  EXPECT_EQ(float16(std::ldexp(1.0f, -25) * 1.0001f).bits, 0x0001u);
  EXPECT_EQ(float16(-std::ldexp(1.0f, -26)).bits, 0x8000u);  // -0
  EXPECT_EQ(float16(std::ldexp(1.0f, -14)).bits, 0x0400u);   // smallest normal
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(nan))));
  EXPECT_TRUE(std::isnan(static_cast<float>(float16(-nan))));
  EXPECT_TRUE(std::signbit(static_cast<float>(float16(-nan))));
  // A signalling NaN whose payload sits in the low bits stays a NaN.
  const float low_payload_nan = float16_internal::FloatOfBits(0x7f800001u);
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(low_payload_nan))));
  EXPECT_TRUE(std::isnan(static_cast<float>(float16(low_payload_nan))));
  EXPECT_TRUE(std::isnan(static_cast<double>(bfloat16(std::nan("")))));
}

TEST(Float16, IntegersComparisonsAndBool) {
  EXPECT_EQ(static_cast<float>(bfloat16(int64_t{257})), 256.0f);  // 8 bits: ties to even
  EXPECT_EQ(static_cast<float>(float16(int32_t{2049})), 2048.0f);
  EXPECT_EQ(static_cast<int32_t>(bfloat16(-7.9f)), -7);
  EXPECT_EQ(static_cast<int64_t>(float16(1000.5f)), 1000);
  EXPECT_TRUE(static_cast<bool>(bfloat16(0.5f)));
  EXPECT_FALSE(static_cast<bool>(float16(-0.0f)));
  EXPECT_TRUE(bfloat16(0.0f) == bfloat16(-0.0f));
  const bfloat16 nan(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(nan != nan);
  EXPECT_TRUE(float16(1.0f) < float16(1.001f));
}

}  // namespace
}  // namespace tandem
