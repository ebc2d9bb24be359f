#include "backends/common/conv.h"

#include <vector>

#include "backends/common/serial_policy.h"
#include "backends/common/testing_policy.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

Conv2DGeometry Geometry(const Shape& x, const Shape& w, Conv2DParams p) {
  absl::StatusOr<Conv2DGeometry> g = Conv2DShape("conv2d", x, w, p);
  EXPECT_OK(g.status());
  return *g;
}

TEST(Conv2D, HandComputedWithPaddingAndStride) {
  // One 3x3 plane 1..9, a 2x2 filter of ones, padding 1, stride 2: the
  // windows at (-1,-1), (-1,1), (1,-1), (1,1) sum 1, 2+3, 4+7, 5+6+8+9.
  Conv2DParams p;
  p.pad_h = p.pad_w = 1;
  p.stride_h = p.stride_w = 2;
  const Conv2DGeometry g = Geometry(Shape({1, 1, 3, 3}), Shape({1, 1, 2, 2}), p);
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w = {1, 1, 1, 1};
  std::vector<double> out(4);
  ASSERT_OK((Conv2DForward<double, SerialPolicy>(g, x.data(), w.data(), out.data())));
  EXPECT_EQ(out, (std::vector<double>{1, 5, 11, 28}));
  // Each input is read by one window: dx = dout of that window.
  const std::vector<double> dout = {1, 10, 100, 1000};
  std::vector<double> dx(9), dw(4);
  ASSERT_OK((Conv2DBackwardData<double, SerialPolicy>(g, w.data(), dout.data(), dx.data())));
  EXPECT_EQ(dx, (std::vector<double>{1, 10, 10, 100, 1000, 1000, 100, 1000, 1000}));
  // dw[i][j] = sum of dout * the input each window reads at (i, j).
  ASSERT_OK((Conv2DBackwardFilter<double, SerialPolicy>(g, x.data(), dout.data(), dw.data())));
  EXPECT_EQ(dw, (std::vector<double>{0 + 0 + 0 + 5000, 0 + 0 + 400 + 6000, 0 + 20 + 0 + 8000,
                                     1 + 30 + 700 + 9000}));
}

TEST(Conv2D, GroupsDilationAndChunkingAgree) {
  Conv2DParams p;
  p.groups = 2;
  p.dilation_h = 2;
  p.pad_w = 1;
  const Conv2DGeometry g = Geometry(Shape({3, 4, 6, 5}), Shape({6, 2, 2, 3}), p);
  std::vector<float> x(3 * 4 * 6 * 5), w(6 * 2 * 2 * 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 11) - 5;
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 7) - 3;
  const int64_t out_n = g.output.num_elements();
  std::vector<float> a(out_n), b(out_n), dxa(x.size()), dxb(x.size()), dwa(w.size()), dwb(w.size());
  ASSERT_OK((Conv2DForward<float, SerialPolicy>(g, x.data(), w.data(), a.data())));
  ASSERT_OK((Conv2DForward<float, ChunkingPolicy<1>>(g, x.data(), w.data(), b.data())));
  EXPECT_EQ(a, b);
  ASSERT_OK((Conv2DBackwardData<float, SerialPolicy>(g, w.data(), a.data(), dxa.data())));
  ASSERT_OK((Conv2DBackwardData<float, ChunkingPolicy<1>>(g, w.data(), a.data(), dxb.data())));
  EXPECT_EQ(dxa, dxb);
  ASSERT_OK((Conv2DBackwardFilter<float, SerialPolicy>(g, x.data(), a.data(), dwa.data())));
  ASSERT_OK((Conv2DBackwardFilter<float, ChunkingPolicy<1>>(g, x.data(), a.data(), dwb.data())));
  EXPECT_EQ(dwa, dwb);
  // Output channel 4 (group 1) reads input channels 2 and 3 only.
  std::vector<float> x2 = x;
  for (int64_t i = 0; i < 2 * 6 * 5; ++i) x2[i] += 100;  // sample 0, channels 0-1
  std::vector<float> c(out_n);
  ASSERT_OK((Conv2DForward<float, SerialPolicy>(g, x2.data(), w.data(), c.data())));
  const int64_t plane = g.oh * g.ow;
  for (int64_t i = 0; i < plane; ++i) EXPECT_EQ(c[4 * plane + i], a[4 * plane + i]);
}

TEST(Conv2D, EmptyBatchGivesAZeroFilterGradient) {
  const Conv2DGeometry g = Geometry(Shape({0, 2, 3, 3}), Shape({1, 2, 1, 1}), Conv2DParams());
  std::vector<double> dw = {7, 7};
  ASSERT_OK((Conv2DBackwardFilter<double, SerialPolicy>(g, nullptr, nullptr, dw.data())));
  EXPECT_EQ(dw, (std::vector<double>{0, 0}));
}

}  // namespace
}  // namespace tandem
