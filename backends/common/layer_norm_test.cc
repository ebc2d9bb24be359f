#include "backends/common/layer_norm.h"

#include <cmath>
#include <vector>

#include "backends/common/serial_policy.h"
#include "backends/common/testing_policy.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(LayerNorm, RowStatisticsScaleAndBias) {
  // Rows [1, 2, 3] and [2, 2, 2]: means 2, 2; variances 2/3, 0.
  const std::vector<double> x = {1, 2, 3, 2, 2, 2}, scale = {1, 2, 3}, bias = {0, 0, 1};
  std::vector<double> y(6), mean(2), var(2);
  LayerNorm<double, ChunkingPolicy<1>>(x.data(), scale.data(), bias.data(), 2, 3, 0.0, y.data(),
                                       mean.data(), var.data());
  EXPECT_EQ(mean, (std::vector<double>{2, 2}));
  EXPECT_DOUBLE_EQ(var[0], 2.0 / 3);
  EXPECT_EQ(var[1], 0);
  const double r = 1 / std::sqrt(2.0 / 3);
  EXPECT_DOUBLE_EQ(y[0], -r);
  EXPECT_EQ(y[1], 0);
  EXPECT_DOUBLE_EQ(y[2], 3 * r + 1);
  // A constant row with epsilon 0 would divide by 0: epsilon keeps it finite.
  LayerNorm<double, SerialPolicy>(x.data(), nullptr, nullptr, 2, 3, 1e-5, y.data(), mean.data(),
                                  var.data());
  EXPECT_EQ(y[3], 0);
}

TEST(LayerNormGrad, SumsAreIndependentOfTheChunking) {
  const int64_t rows = 7, cols = 5;
  std::vector<float> x(rows * cols), dy(rows * cols), scale(cols), y(rows * cols), mean(rows),
      var(rows);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = std::sin(static_cast<float>(i));
    dy[i] = std::cos(static_cast<float>(3 * i));
  }
  for (int64_t j = 0; j < cols; ++j) scale[j] = 0.5f + j;
  LayerNorm<float, SerialPolicy>(x.data(), scale.data(), nullptr, rows, cols, 1e-5, y.data(),
                                 mean.data(), var.data());
  std::vector<float> dx1(x.size()), ds1(cols), db1(cols), dx2(x.size()), ds2(cols), db2(cols);
  LayerNormGrad<float, SerialPolicy>(x.data(), scale.data(), mean.data(), var.data(), dy.data(),
                                     rows, cols, 1e-5, dx1.data(), ds1.data(), db1.data());
  LayerNormGrad<float, ChunkingPolicy<2>>(x.data(), scale.data(), mean.data(), var.data(),
                                          dy.data(), rows, cols, 1e-5, dx2.data(), ds2.data(),
                                          db2.data());
  EXPECT_EQ(dx1, dx2);
  EXPECT_EQ(ds1, ds2);
  EXPECT_EQ(db1, db2);
  // The gradient of a normalized row sums to zero; Bias@GRAD sums dy.
  double row_sum = 0, bias_sum = 0;
  for (int64_t j = 0; j < cols; ++j) row_sum += dx1[j];
  for (int64_t r = 0; r < rows; ++r) bias_sum += dy[r * cols + 1];
  EXPECT_NEAR(row_sum, 0, 1e-5);
  EXPECT_NEAR(db1[1], bias_sum, 1e-5);
  // Null outputs are skipped.
  LayerNormGrad<float, SerialPolicy>(x.data(), nullptr, mean.data(), var.data(), dy.data(), rows,
                                     cols, 1e-5, nullptr, nullptr, db2.data());
  EXPECT_EQ(db1, db2);
}

}  // namespace
}  // namespace tandem
