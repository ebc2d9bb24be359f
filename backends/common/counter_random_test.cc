#include "backends/common/counter_random.h"

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

}  // namespace
}  // namespace tandem
