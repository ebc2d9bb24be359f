#include "backends/common/counter_random.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(CounterUniform, KnownValuesOfTheSplitMix64Formula) {
  // SplitMix64 seeded with 0 yields 0xE220A8397B1DCDAF first; its top 53
  // bits over 2^53 is u.
  EXPECT_EQ(CounterUniform(0, 0), static_cast<double>(0xE220A8397B1DCDAFull >> 11) * 0x1.0p-53);
  EXPECT_EQ(CounterUniform(0, 1), static_cast<double>(0x6E789E6AA1B965F4ull >> 11) * 0x1.0p-53);
  // The seed offsets the counter sequence: seed = k * golden gamma shifts i by k.
  EXPECT_EQ(CounterUniform(0x9E3779B97F4A7C15ull, 0), CounterUniform(0, 1));
}

TEST(FillUniform, DeterministicInRangeAndIndependentOfTheSplit) {
  const int64_t n = 10000;
  std::vector<double> whole(n), parts(n);
  FillUniform(-0.05, 0.05, 42, 0, n, whole.data());
  FillUniform(-0.05, 0.05, 42, 0, 3333, parts.data());
  FillUniform(-0.05, 0.05, 42, 3333, n - 3333, parts.data() + 3333);
  EXPECT_EQ(whole, parts);
  double sum = 0;
  for (double v : whole) {
    ASSERT_GE(v, -0.05);
    ASSERT_LT(v, 0.05);
    sum += v;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.002);  // mean of U(-0.05, 0.05): sd 0.029 / sqrt(n)

  std::vector<double> other(n);
  FillUniform(-0.05, 0.05, 43, 0, n, other.data());
  EXPECT_NE(whole, other);
}

TEST(FillUniform, FloatIsTheDoubleValueRounded) {
  std::vector<float> f(100);
  std::vector<double> d(100);
  FillUniform(2.0, 7.5, static_cast<uint64_t>(-7), 5, 100, f.data());
  FillUniform(2.0, 7.5, static_cast<uint64_t>(-7), 5, 100, d.data());
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(f[i], static_cast<float>(d[i])) << i;
    EXPECT_GE(f[i], 2.0f);
    EXPECT_LE(f[i], 7.5f);  // a float may round up to max
  }
}

TEST(FillGaussian, BoxMullerOfTwoCounterDraws) {
  double v[3];
  FillGaussian(1.5, 2.0, 42, 7, 3, v);
  for (int k = 0; k < 3; ++k) {
    const uint64_t i = 7 + k;
    const double z = std::sqrt(-2.0 * std::log(1.0 - CounterUniform(42, 2 * i))) *
                     std::cos(6.283185307179586 * CounterUniform(42, 2 * i + 1));
    EXPECT_EQ(v[k], 1.5 + 2.0 * z) << k;
  }
}

TEST(FillGaussian, MomentsSplitIndependenceAndFloatRounding) {
  const int64_t n = 100000;
  std::vector<double> whole(n), parts(n);
  FillGaussian(0.5, 2.0, 9, 0, n, whole.data());
  FillGaussian(0.5, 2.0, 9, 0, 4321, parts.data());
  FillGaussian(0.5, 2.0, 9, 4321, n - 4321, parts.data() + 4321);
  EXPECT_EQ(whole, parts);
  double sum = 0, sq = 0;
  int64_t beyond_3sd = 0;
  for (double x : whole) {
    sum += x;
    sq += (x - 0.5) * (x - 0.5);
    beyond_3sd += std::abs(x - 0.5) > 6.0;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.03);               // sd of the mean: 2 / sqrt(n) = 0.0063
  EXPECT_NEAR(std::sqrt(sq / n), 2.0, 0.03);     // sd of the sd: about 2 / sqrt(2n)
  EXPECT_NEAR(beyond_3sd / double(n), 0.0027, 0.001);  // normal tails, not uniform ones

  std::vector<float> f(1000);
  FillGaussian(0.5, 2.0, 9, 0, 1000, f.data());
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(f[i], static_cast<float>(whole[i])) << i;
}

TEST(CounterStreamSeed, StreamsAreSeededByTheBitsOfTheirIndex) {
  EXPECT_EQ(CounterBits(0, 0), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(CounterStreamSeed(7, 3), CounterBits(7, 3));
  // Consecutive streams draw unrelated values.
  EXPECT_NE(CounterUniform(CounterStreamSeed(7, 0), 0), CounterUniform(CounterStreamSeed(7, 1), 0));
  EXPECT_NE(CounterUniform(CounterStreamSeed(7, 0), 1), CounterUniform(CounterStreamSeed(7, 1), 0));
}

}  // namespace
}  // namespace tandem
