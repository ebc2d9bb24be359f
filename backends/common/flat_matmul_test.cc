#include "backends/common/flat_matmul.h"

#include <vector>

#include "backends/common/serial_policy.h"
#include "backends/common/testing_policy.h"
#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;

TEST(FlatMatmul, ProductPlusBiasOnEveryRow) {
  // [2, 3] x [3, 2] + [2].
  const double x[] = {1, 2, 3, 4, 5, 6};
  const double y[] = {1, 0, 0, 1, 1, 1};
  const double bias[] = {10, 20};
  std::vector<double> out(4, -1);
  ASSERT_OK((FlatMatmul<double, ChunkingPolicy<1>>(x, y, bias, 2, 3, 2, out.data())));
  EXPECT_THAT(out, ElementsAre(14, 25, 20, 31));
  ASSERT_OK((FlatMatmul<double, SerialPolicy>(x, y, nullptr, 2, 3, 2, out.data())));
  EXPECT_THAT(out, ElementsAre(4, 5, 10, 11));
  // K = 0: the bias alone, or zeros.
  ASSERT_OK((FlatMatmul<double, SerialPolicy>(nullptr, nullptr, bias, 2, 0, 2, out.data())));
  EXPECT_THAT(out, ElementsAre(10, 20, 10, 20));
  ASSERT_OK((FlatMatmul<double, SerialPolicy>(nullptr, nullptr, nullptr, 2, 0, 2, out.data())));
  EXPECT_THAT(out, ElementsAre(0, 0, 0, 0));
}

TEST(FlatMatmulGrad, BothGradientsOrEitherOne) {
  const float x[] = {1, 2, 3, 4, 5, 6};  // [2, 3]
  const float y[] = {1, 0, 0, 1, 1, 1};  // [3, 2]
  const float dout[] = {1, 2, 3, 4};     // [2, 2]
  std::vector<float> dx(6, -1), dy(6, -1);
  ASSERT_OK((FlatMatmulGrad<float, SerialPolicy>(x, y, dout, 2, 3, 2, dx.data(), dy.data())));
  EXPECT_THAT(dx, ElementsAre(1, 2, 3, 3, 4, 7));        // dout * y^T
  EXPECT_THAT(dy, ElementsAre(13, 18, 17, 24, 21, 30));  // x^T * dout
  std::vector<float> only(6, -1);
  ASSERT_OK((FlatMatmulGrad<float, SerialPolicy>(x, y, dout, 2, 3, 2, nullptr, only.data())));
  EXPECT_EQ(only, dy);
}

}  // namespace
}  // namespace tandem
