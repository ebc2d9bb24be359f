#include "backends/common/softmax.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "backends/common/testing_policy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::Pointwise;

TEST(Softmax, NormalizesEachLineAroundAnyAxis) {
  // [2, 3, 2] around axis 1: lines (o, i) of 3 elements, stride 2.
  std::vector<double> x(12);
  for (int i = 0; i < 12; ++i) x[i] = 0.25 * i - 1;
  std::vector<double> out(12, -1);
  const AxisLines l = AxisLines::Around(Shape({2, 3, 2}), 1);
  Softmax<double, ChunkingPolicy<1>>(x.data(), l, out.data());
  for (int64_t line = 0; line < l.num_lines(); ++line) {
    const int64_t s = l.Start(line);
    double sum = 0;
    for (int k = 0; k < 3; ++k) sum += std::exp(x[s + 2 * k]);
    for (int k = 0; k < 3; ++k) {
      EXPECT_NEAR(out[s + 2 * k], std::exp(x[s + 2 * k]) / sum, 1e-15) << line << ", " << k;
    }
  }
}

TEST(Softmax, LargeValuesNeitherOverflowNorUnderflowToNaN) {
  const float x[] = {1000, 999, -1000, 88.8f, 88.8f};
  float out[5];
  Softmax<float, ChunkingPolicy<7>>(x, AxisLines{1, 3, 1}, out);
  Softmax<float, ChunkingPolicy<7>>(x + 3, AxisLines{1, 2, 1}, out + 3);
  EXPECT_FLOAT_EQ(out[0], 1 / (1 + std::exp(-1.0f)));
  EXPECT_FLOAT_EQ(out[1], std::exp(-1.0f) / (1 + std::exp(-1.0f)));
  EXPECT_EQ(out[2], 0);
  EXPECT_THAT(std::vector<float>(out + 3, out + 5), ElementsAre(0.5f, 0.5f));
}

TEST(SoftmaxGrad, IsTheJacobianTransposeTimesDout) {
  const double out[] = {0.2, 0.3, 0.5};
  const double dout[] = {1, -1, 2};
  double dx[3];
  SoftmaxGrad<double, ChunkingPolicy<1>>(out, dout, AxisLines{1, 3, 1}, dx);
  // dot = 0.2 - 0.3 + 1 = 0.9; dx = out * (dout - dot).
  EXPECT_THAT(dx, Pointwise(DoubleNear(1e-15), {0.2 * 0.1, 0.3 * -1.9, 0.5 * 1.1}));
}

TEST(FirstBadLabel, SkipsTheIgnoreIndexOnly) {
  const int64_t labels[] = {0, 2, -100, 3, -1};
  EXPECT_EQ(FirstBadLabel(labels, 5, 3, -100), 3);
  EXPECT_EQ(FirstBadLabel(labels, 3, 3, -100), -1);
  EXPECT_EQ(FirstBadLabel(labels, 5, 3, std::nullopt), 2);
  EXPECT_EQ(FirstBadLabel(labels, 5, 4, -100), 4);
}

TEST(SoftmaxCrossEntropy, LossIsLogSumExpMinusTheLabelLogit) {
  const double logits[] = {1, 2, 3, 1000, 0, -1000, 5, 5, 5};
  const int64_t labels[] = {0, 1, 7};  // row 2 is ignored
  double softmax[9], loss[3];
  SoftmaxCrossEntropy<double, ChunkingPolicy<2>>(logits, labels, 3, 3, 7, softmax, loss);
  EXPECT_NEAR(loss[0], std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 1, 1e-14);
  EXPECT_EQ(loss[1], 1000);  // finite although exp(1000) overflows
  EXPECT_EQ(loss[2], 0);
  EXPECT_THAT(std::vector<double>(softmax + 6, softmax + 9),
              Pointwise(DoubleNear(1e-16), {1.0 / 3, 1.0 / 3, 1.0 / 3}));

  double dlogits[9];
  const double dloss[] = {2, 1, 5};
  SoftmaxCrossEntropyGrad<double, ChunkingPolicy<1>>(softmax, labels, dloss, 3, 3, 7, dlogits);
  EXPECT_NEAR(dlogits[0], 2 * (softmax[0] - 1), 1e-15);
  EXPECT_NEAR(dlogits[1], 2 * softmax[1], 1e-15);
  EXPECT_THAT(std::vector<double>(dlogits + 6, dlogits + 9), ElementsAre(0, 0, 0));
}

TEST(SoftmaxCrossEntropy, NoClassesGiveZeroLoss) {
  const int64_t labels[] = {-100, -100};
  float loss[2] = {-1, -1};
  SoftmaxCrossEntropy<float, ChunkingPolicy<1>>(nullptr, labels, 2, 0, -100, nullptr, loss);
  EXPECT_THAT(loss, ElementsAre(0, 0));
}

TEST(SoftmaxCrossEntropyGrad, NoClassesWriteNothing) {
  const int64_t labels[] = {-100, -100};
  const float dloss[] = {1, 2};
  float sentinel = 7;  // a gradient of 2 x 0 values: nothing may be written
  SoftmaxCrossEntropyGrad<float, ChunkingPolicy<1>>(nullptr, labels, dloss, 2, 0, -100, &sentinel);
  EXPECT_EQ(sentinel, 7);
}

}  // namespace
}  // namespace tandem
