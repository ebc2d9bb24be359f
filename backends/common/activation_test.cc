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

TEST(Activate, GeluIsXTimesTheNormalCdf) {
  const Activate<Activation::kGelu> gelu;
  EXPECT_EQ(gelu(0.0), 0.0);
  EXPECT_NEAR(gelu(1.0), 0.8413447460685429, 1e-15);  // Phi(1)
  EXPECT_NEAR(gelu(-1.0), -0.15865525393145707, 1e-15);
  EXPECT_EQ(gelu(-40.0f), -0.0f);  // erf saturates: no NaN far out
  EXPECT_EQ(gelu(40.0f), 40.0f);
  const Activate<Activation::kGeluTanh> gelu_tanh;
  EXPECT_NEAR(gelu_tanh(1.0), 0.8411919906082768, 1e-15);
  EXPECT_NEAR(gelu_tanh(2.5), gelu(2.5), 2e-3);  // the approximation is close
}

// The gelu gradients read X and match central differences of the forward.
TEST(ActivationGrad, GeluReadsTheForwardInput) {
  static_assert(GradReadsInput(Activation::kGelu) && GradReadsInput(Activation::kGeluTanh));
  static_assert(!GradReadsInput(Activation::kSigmoid));
  for (double x : {-3.0, -0.7, 0.0, 0.4, 2.2}) {
    const double h = 1e-6;
    const double exact =
        (Activate<Activation::kGelu>()(x + h) - Activate<Activation::kGelu>()(x - h)) / (2 * h);
    EXPECT_NEAR(ActivationGrad<Activation::kGelu>()(x, 3.0), 3.0 * exact, 1e-8) << x;
    const double approx =
        (Activate<Activation::kGeluTanh>()(x + h) - Activate<Activation::kGeluTanh>()(x - h)) /
        (2 * h);
    EXPECT_NEAR(ActivationGrad<Activation::kGeluTanh>()(x, 3.0), 3.0 * approx, 1e-8) << x;
  }
}

TEST(WithActivation, PassesTheFunctorOfTheRuntimeValue) {
  for (Activation act : {Activation::kRelu, Activation::kSigmoid, Activation::kTanh,
                         Activation::kGelu, Activation::kGeluTanh}) {
    const double got = WithActivation<Activate>(act, [](auto f) { return f(-0.5); });
    double want = 0;
    switch (act) {
      case Activation::kRelu:
        want = 0;
        break;
      case Activation::kSigmoid:
        want = 1 / (1 + std::exp(0.5));
        break;
      case Activation::kTanh:
        want = std::tanh(-0.5);
        break;
      case Activation::kGelu:
        want = -0.25 * (1 + std::erf(-0.5 / std::sqrt(2.0)));
        break;
      case Activation::kGeluTanh:
        want = -0.25 * (1 + std::tanh(std::sqrt(2 / M_PI) * (-0.5 - 0.044715 * 0.125)));
        break;
    }
    EXPECT_NEAR(got, want, 1e-15) << static_cast<int>(act);
  }
}

}  // namespace
}  // namespace tandem
