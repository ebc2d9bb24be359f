#include "backends/common/elementwise.h"

#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "backends/common/testing_policy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;

// Ranges of one item, of 7 items, and everything at once.
using Fine = ChunkingPolicy<1>;
using Odd = ChunkingPolicy<7>;
using Whole = ChunkingPolicy<int64_t{1} << 40>;

std::vector<double> Iota(int64_t n, double start = 1) {
  std::vector<double> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

// The element of `operand` that feeds output position `pos` (numpy rules).
int64_t SourceIndex(const Shape& out, const Shape& operand, int64_t pos) {
  int64_t offset = 0, stride = 1;
  for (int d = out.rank() - 1, od = operand.rank() - 1; d >= 0; --d, --od) {
    const int64_t i = pos % out.dim(d);
    pos /= out.dim(d);
    if (od < 0) continue;
    if (operand.dim(od) != 1) offset += i * stride;
    stride *= operand.dim(od);
  }
  return offset;
}

struct BroadcastCase {
  Shape out, x, y;
};

const std::vector<BroadcastCase>& Cases() {
  static const auto* cases = new std::vector<BroadcastCase>{
      {Shape({2, 3}), Shape({2, 3}), Shape({2, 3})},
      {Shape({2, 3}), Shape({2, 3}), Shape()},
      {Shape({2, 3}), Shape(), Shape({2, 3})},
      {Shape({5, 3}), Shape({5, 3}), Shape({3})},
      {Shape({5, 3}), Shape({5, 1}), Shape({1, 3})},
      {Shape({2, 3, 4}), Shape({2, 3, 4}), Shape({1, 3, 1})},
      {Shape({2, 3, 4, 5}), Shape({2, 1, 4, 1}), Shape({3, 1, 5})},
      {Shape({1023}), Shape({1023}), Shape({1})},
      {Shape(), Shape(), Shape()},
  };
  return *cases;
}

template <typename Policy>
void CheckBroadcastAdd() {
  for (const BroadcastCase& c : Cases()) {
    const std::vector<double> x = Iota(c.x.num_elements());
    const std::vector<double> y = Iota(c.y.num_elements(), 100);
    std::vector<double> out(c.out.num_elements(), -1);
    BroadcastAdd<double, Policy>(BroadcastLayout(c.out, {c.x, c.y}), x.data(), y.data(),
                                 out.data());
    for (int64_t i = 0; i < c.out.num_elements(); ++i) {
      ASSERT_EQ(out[i], x[SourceIndex(c.out, c.x, i)] + y[SourceIndex(c.out, c.y, i)])
          << c.x << " + " << c.y << " at " << i;
    }
  }
}

TEST(BroadcastAdd, MatchesNumpyRulesForAnyRanges) {
  CheckBroadcastAdd<Fine>();
  CheckBroadcastAdd<Odd>();
  CheckBroadcastAdd<Whole>();
}

TEST(BroadcastAdd, IntegersWrapAround) {
  const int32_t x[] = {std::numeric_limits<int32_t>::max(), 5};
  const int32_t y[] = {1};
  int32_t out[2];
  BroadcastAdd<int32_t, Whole>(BroadcastLayout(Shape({2}), {Shape({2}), Shape({1})}), x, y, out);
  EXPECT_THAT(out, ElementsAre(std::numeric_limits<int32_t>::min(), 6));
}

TEST(BroadcastBinary, SubMulDivMatchNumpyRulesForAnyRanges) {
  auto check = [](auto policy_tag, auto op, auto fn) {
    using Policy = decltype(policy_tag);
    for (const BroadcastCase& c : Cases()) {
      const std::vector<double> x = Iota(c.x.num_elements());
      const std::vector<double> y = Iota(c.y.num_elements(), 100);
      std::vector<double> out(c.out.num_elements(), -1);
      BroadcastBinary<double, Policy>(BroadcastLayout(c.out, {c.x, c.y}), x.data(), y.data(),
                                      out.data(), op);
      for (int64_t i = 0; i < c.out.num_elements(); ++i) {
        ASSERT_EQ(out[i], fn(x[SourceIndex(c.out, c.x, i)], y[SourceIndex(c.out, c.y, i)]))
            << c.x << ", " << c.y << " at " << i;
      }
    }
  };
  check(Fine(), Binary<BinaryOp::kSub>(), [](double a, double b) { return a - b; });
  check(Odd(), Binary<BinaryOp::kMul>(), [](double a, double b) { return a * b; });
  check(Fine(), Binary<BinaryOp::kDiv>(), [](double a, double b) { return a / b; });
  check(Odd(), Binary<BinaryOp::kDiv>(), [](double a, double b) { return a / b; });
}

TEST(Binary, IntegersWrapAndDivisionTruncatesTowardZero) {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  EXPECT_EQ(Binary<BinaryOp::kSub>()(kMin, 1), kMax);
  EXPECT_EQ(Binary<BinaryOp::kMul>()(kMax, 2), -2);
  EXPECT_EQ(Binary<BinaryOp::kDiv>()(-7, 2), -3);
  EXPECT_EQ(Binary<BinaryOp::kDiv>()(7, -2), -3);
  EXPECT_EQ(Binary<BinaryOp::kDiv>()(kMin, -1), kMin);  // wraps, no SIGFPE
  EXPECT_EQ(Binary<BinaryOp::kDiv>()(std::numeric_limits<int64_t>::min(), int64_t{-1}),
            std::numeric_limits<int64_t>::min());
}

TEST(BroadcastUnary, SpreadsOneOperandOverTheOutput) {
  // [2, 1, 3] over [2, 2, 3], doubled.
  const std::vector<double> x = Iota(6);
  std::vector<double> out(12, -1);
  BroadcastUnary<double, Odd>(BroadcastLayout(Shape({2, 2, 3}), {Shape({2, 1, 3})}), x.data(),
                              out.data(), [](double v) { return 2 * v; });
  EXPECT_THAT(out, ElementsAre(2, 4, 6, 2, 4, 6, 8, 10, 12, 8, 10, 12));
  // A scalar fills.
  BroadcastUnary<double, Fine>(BroadcastLayout(Shape({4}), {Shape()}), x.data() + 5, out.data(),
                               [](double v) { return v; });
  EXPECT_THAT(std::vector<double>(out.begin(), out.begin() + 4), ElementsAre(6, 6, 6, 6));
}

TEST(Map, AppliesElementwiseForAnyRanges) {
  const float a[] = {1, 2, 3}, b[] = {10, 20, 30};
  float out[3];
  Map<float, Fine>(a, out, 3, [](float v) { return -v; });
  EXPECT_THAT(out, ElementsAre(-1, -2, -3));
  Map2<float, Odd>(a, b, out, 3, [](float u, float v) { return u * v; });
  EXPECT_THAT(out, ElementsAre(10, 40, 90));
}

template <typename Policy>
void CheckSumToShape() {
  for (const BroadcastCase& c : Cases()) {
    const std::vector<double> dout = Iota(c.out.num_elements());
    for (const Shape& target : {c.x, c.y}) {
      std::vector<double> want(target.num_elements(), 0);
      for (int64_t i = 0; i < c.out.num_elements(); ++i) {
        want[SourceIndex(c.out, target, i)] += dout[i];
      }
      std::vector<double> got(target.num_elements(), -1);
      SumToShape<double, Policy>(dout.data(), c.out, got.data(), target);
      EXPECT_EQ(got, want) << c.out << " summed to " << target;
    }
  }
}

TEST(SumToShape, SumsOverBroadcastDimsForAnyRanges) {
  CheckSumToShape<Fine>();
  CheckSumToShape<Odd>();
  CheckSumToShape<Whole>();
}

TEST(SumToShape, EmptyGradientGivesZeros) {
  std::vector<float> dx(3, -1);
  SumToShape<float, Odd>(nullptr, Shape({0, 3}), dx.data(), Shape({3}));
  EXPECT_THAT(dx, ElementsAre(0, 0, 0));
}

TEST(SumToShape, Float32AccumulatesInDouble) {
  // 2^24 + 1 ones: a float accumulator stops growing at 2^24.
  const int64_t n = (int64_t{1} << 24) + 1;
  std::vector<float> dout(n, 1.0f);
  float dx = 0;
  SumToShape<float, Whole>(dout.data(), Shape({n}), &dx, Shape());
  EXPECT_EQ(dx, static_cast<float>(n));
}

TEST(Sum, IsIndependentOfHowRangesAreSplit) {
  std::vector<float> x(100000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 1.0f / (1 + i % 97);
  EXPECT_EQ((Sum<float, Fine>(x.data(), x.size())), (Sum<float, Whole>(x.data(), x.size())));
}

TEST(Scale, FloatInOwnTypeIntegersThroughDoubleTruncated) {
  const float xf[] = {1.5f, -2.0f};
  float of[2];
  Scale<float, Odd>(xf, of, 2, 2.0, 1.0, /*bias_after_scale=*/true);
  EXPECT_THAT(of, ElementsAre(4.0f, -3.0f));
  Scale<float, Odd>(xf, of, 2, 2.0, 1.0, /*bias_after_scale=*/false);
  EXPECT_THAT(of, ElementsAre(5.0f, -2.0f));

  const int32_t xi[] = {3, -3, 7};
  int32_t oi[3];
  Scale<int32_t, Odd>(xi, oi, 3, 0.5, 0.0, true);  // 1.5, -1.5, 3.5
  EXPECT_THAT(oi, ElementsAre(1, -1, 3));
  const int64_t xl[] = {4};
  int64_t ol[1];
  Scale<int64_t, Odd>(xl, ol, 1, 0.5, 0.6, false);  // 0.5 * 4.6 = 2.3
  EXPECT_THAT(ol, ElementsAre(2));
}

TEST(Cast, TruncatesToIntAndMapsBool) {
  const float x[] = {-1.7f, 0.0f, 2.9f};
  int32_t i[3];
  Cast<int32_t, float, Odd>(x, i, 3);
  EXPECT_THAT(i, ElementsAre(-1, 0, 2));
  bool b[3];
  Cast<bool, float, Odd>(x, b, 3);
  EXPECT_THAT(b, ElementsAre(true, false, true));
  double d[3];
  Cast<double, bool, Odd>(b, d, 3);
  EXPECT_THAT(d, ElementsAre(1.0, 0.0, 1.0));
}

TEST(Fill, FillsEveryElement) {
  std::vector<int64_t> v(20, 0);
  Fill<int64_t, Odd>(-3, v.data(), v.size());
  EXPECT_EQ(v, std::vector<int64_t>(20, -3));
}

}  // namespace
}  // namespace tandem
