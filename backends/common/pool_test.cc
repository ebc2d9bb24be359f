#include "backends/common/pool.h"

#include <vector>

#include "backends/common/serial_policy.h"
#include "backends/common/testing_policy.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

Pool2DGeometry Geometry(const Shape& x, bool max, bool exclusive) {
  Pool2DParams p;
  p.max = max;
  p.exclusive = exclusive;
  p.kh = p.kw = 2;
  p.stride_h = p.stride_w = 2;
  p.pad_h = p.pad_w = 1;
  absl::StatusOr<Pool2DGeometry> g = Pool2DShape("pool2d", x, p);
  EXPECT_OK(g.status());
  return *g;
}

// One 3x3 plane 1..9 with 2x2 windows, stride 2, padding 1: windows
// {1}, {2, 3}, {4, 7}, {5, 6, 8, 9}.
const std::vector<double> kPlane = {1, 2, 3, 4, 5, 6, 7, 8, 9};

TEST(Pool2D, MaxAndAverageOfClippedWindows) {
  std::vector<double> out(4);
  Pool2DForward<double, ChunkingPolicy<1>>(Geometry(Shape({1, 1, 3, 3}), true, true), kPlane.data(),
                                           out.data());
  EXPECT_EQ(out, (std::vector<double>{1, 3, 7, 9}));
  Pool2DForward<double, SerialPolicy>(Geometry(Shape({1, 1, 3, 3}), false, true), kPlane.data(),
                                      out.data());
  EXPECT_EQ(out, (std::vector<double>{1, 2.5, 5.5, 7}));
  // Not exclusive: every window divides by 2 * 2.
  Pool2DForward<double, SerialPolicy>(Geometry(Shape({1, 1, 3, 3}), false, false), kPlane.data(),
                                      out.data());
  EXPECT_EQ(out, (std::vector<double>{0.25, 1.25, 2.75, 7}));
}

TEST(Pool2D, GradientsGoToTheFirstMaximumOrSpreadEvenly) {
  const Pool2DGeometry max = Geometry(Shape({1, 1, 3, 3}), true, true);
  // Ties: the window {5, 6, 8, 9} becomes all 9s; the first one wins.
  const std::vector<double> x = {1, 2, 3, 4, 9, 9, 7, 9, 9};
  const std::vector<double> out = {1, 3, 7, 9}, dout = {1, 10, 100, 1000};
  std::vector<double> dx(9);
  Pool2DBackward<double, ChunkingPolicy<1>>(max, x.data(), out.data(), dout.data(), dx.data());
  EXPECT_EQ(dx, (std::vector<double>{1, 0, 10, 0, 1000, 0, 100, 0, 0}));
  const Pool2DGeometry avg = Geometry(Shape({1, 1, 3, 3}), false, true);
  Pool2DBackward<double, SerialPolicy>(avg, x.data(), out.data(), dout.data(), dx.data());
  EXPECT_EQ(dx, (std::vector<double>{1, 5, 5, 50, 250, 250, 50, 250, 250}));
}

}  // namespace
}  // namespace tandem
