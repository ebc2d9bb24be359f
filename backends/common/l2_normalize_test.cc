#include "backends/common/l2_normalize.h"

#include <cmath>
#include <vector>

#include "backends/common/serial_policy.h"
#include "backends/common/testing_policy.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(AxisLines, AroundEachAxis) {
  const AxisLines l = AxisLines::Around(Shape({2, 3, 4}), 1);
  EXPECT_EQ(l.outer, 2);
  EXPECT_EQ(l.n, 3);
  EXPECT_EQ(l.inner, 4);
  EXPECT_EQ(l.num_lines(), 8);
  EXPECT_EQ(l.Start(5), 12 + 1);  // outer 1, inner 1
  EXPECT_EQ(AxisLines::Around(Shape({5}), 0).num_lines(), 1);
}

TEST(L2Normalize, RowsAndColumnsHandComputed) {
  // [[3, 4], [0, 0]]: rows normalize to [0.6, 0.8] and (epsilon only) 0s.
  const std::vector<double> x = {3, 4, 0, 0};
  std::vector<double> out(4);
  L2Normalize<double, ChunkingPolicy<1>>(x.data(), AxisLines::Around(Shape({2, 2}), 1), 0.0,
                                         out.data());
  EXPECT_DOUBLE_EQ(out[0], 0.6);
  EXPECT_DOUBLE_EQ(out[1], 0.8);
  L2Normalize<double, ChunkingPolicy<1>>(x.data(), AxisLines::Around(Shape({2, 2}), 1), 1.0,
                                         out.data());
  EXPECT_EQ(out[2], 0.0);  // 0 / sqrt(0 + 1)
  // Columns: [3, 0] and [4, 0] normalize to [1, 0].
  L2Normalize<double, ChunkingPolicy<1>>(x.data(), AxisLines::Around(Shape({2, 2}), 0), 0.0,
                                         out.data());
  EXPECT_EQ(out, std::vector<double>({1, 1, 0, 0}));
}

TEST(L2NormalizeGrad, MatchesTheJacobianAndIsPolicyIndependent) {
  // One line x = [1, 2, 2], r = 3: dx_j = g_j / r - x_j (x . g) / r^3.
  const std::vector<float> x = {1, 2, 2};
  const std::vector<float> g = {1, 0, -1};
  std::vector<float> out(3), dx(3);
  const AxisLines l = AxisLines::Around(Shape({3}), 0);
  L2Normalize<float, SerialPolicy>(x.data(), l, 0.0, out.data());
  L2NormalizeGrad<float, SerialPolicy>(x.data(), out.data(), g.data(), l, 0.0, dx.data());
  const double dot = 1 * 1 + 2 * 0 + 2 * -1;
  for (int j = 0; j < 3; ++j) {
    EXPECT_NEAR(dx[j], g[j] / 3.0 - x[j] * dot / 27.0, 1e-6) << j;
  }
  // [4, 3, 5] along axis 1 in chunks of one line equals serial.
  std::vector<float> big(60), big_g(60), a(60), b(60), da(60), db(60);
  for (int i = 0; i < 60; ++i) {
    big[i] = std::sin(i * 0.7f);
    big_g[i] = std::cos(i * 0.3f);
  }
  const AxisLines lb = AxisLines::Around(Shape({4, 3, 5}), 1);
  L2Normalize<float, SerialPolicy>(big.data(), lb, 1e-10, a.data());
  L2Normalize<float, ChunkingPolicy<1>>(big.data(), lb, 1e-10, b.data());
  EXPECT_EQ(a, b);
  L2NormalizeGrad<float, SerialPolicy>(big.data(), a.data(), big_g.data(), lb, 1e-10, da.data());
  L2NormalizeGrad<float, ChunkingPolicy<3>>(big.data(), a.data(), big_g.data(), lb, 1e-10,
                                            db.data());
  EXPECT_EQ(da, db);
}

}  // namespace
}  // namespace tandem
