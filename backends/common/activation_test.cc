#include "backends/common/activation.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(Activate, SigmoidIsStableAndSymmetric) {
  const Activate<Activation::kSigmoid> sigmoid;
  EXPECT_EQ(sigmoid(-1000.0f), 0.0f);  // exp(1000) would be inf: no inf / inf
  EXPECT_EQ(sigmoid(1000.0f), 1.0f);
  EXPECT_EQ(sigmoid(0.0), 0.5);
  for (double x : {0.5, 3.0, 30.0}) {
    EXPECT_NEAR(sigmoid(x) + sigmoid(-x), 1.0, 1e-15) << x;
    EXPECT_NEAR(sigmoid(-x), 1 / (1 + std::exp(x)), 1e-15) << x;
  }
}

TEST(Activate, ReluAndTanh) {
  const Activate<Activation::kRelu> relu;
  EXPECT_EQ(relu(-2.0), 0.0);
  EXPECT_EQ(relu(3.5f), 3.5f);
  EXPECT_EQ(Activate<Activation::kTanh>()(0.5), std::tanh(0.5));
}

TEST(ActivationGrad, ReadsTheForwardOutput) {
  EXPECT_EQ(ActivationGrad<Activation::kRelu>()(0.0, 5.0), 0.0);
  EXPECT_EQ(ActivationGrad<Activation::kRelu>()(2.0, 5.0), 5.0);
  EXPECT_EQ(ActivationGrad<Activation::kSigmoid>()(0.25, 2.0), 2.0 * 0.25 * 0.75);
  EXPECT_EQ(ActivationGrad<Activation::kTanh>()(0.5, 2.0), 2.0 * 0.75);
}

}  // namespace
}  // namespace tandem
