#include "backends/common/broadcast.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;

TEST(BroadcastLayout, SameShapesCoalesceToOneDim) {
  BroadcastLayout l(Shape({2, 3, 4}), {Shape({2, 3, 4}), Shape({2, 3, 4})});
  EXPECT_THAT(l.dims(), ElementsAre(24));
  EXPECT_THAT(l.strides(0), ElementsAre(1));
  EXPECT_THAT(l.strides(1), ElementsAre(1));
  EXPECT_EQ(l.num_elements(), 24);
}

TEST(BroadcastLayout, ScalarOperandHasStrideZero) {
  BroadcastLayout l(Shape({2, 3}), {Shape({2, 3}), Shape()});
  EXPECT_THAT(l.dims(), ElementsAre(6));
  EXPECT_EQ(l.inner_stride(0), 1);
  EXPECT_EQ(l.inner_stride(1), 0);
}

TEST(BroadcastLayout, RowAndColumnBroadcast) {
  BroadcastLayout row(Shape({4, 3}), {Shape({4, 3}), Shape({3})});
  EXPECT_THAT(row.dims(), ElementsAre(4, 3));
  EXPECT_THAT(row.strides(0), ElementsAre(3, 1));
  EXPECT_THAT(row.strides(1), ElementsAre(0, 1));

  BroadcastLayout col(Shape({4, 3}), {Shape({4, 3}), Shape({4, 1})});
  EXPECT_THAT(col.dims(), ElementsAre(4, 3));
  EXPECT_THAT(col.strides(1), ElementsAre(1, 0));
}

TEST(BroadcastLayout, MiddleAxisAndSizeOneDims) {
  // Y [3] aligned at axis 1 of X [2, 3, 4] is [1, 3, 1].
  BroadcastLayout l(Shape({2, 3, 4}), {Shape({2, 3, 4}), Shape({1, 3, 1})});
  EXPECT_THAT(l.dims(), ElementsAre(2, 3, 4));
  EXPECT_THAT(l.strides(0), ElementsAre(12, 4, 1));
  EXPECT_THAT(l.strides(1), ElementsAre(0, 1, 0));

  BroadcastLayout ones(Shape({1, 5, 1}), {Shape({1, 5, 1}), Shape({5, 1})});
  EXPECT_THAT(ones.dims(), ElementsAre(5));
}

TEST(BroadcastLayout, BothSidesBroadcastAndScalarOutput) {
  BroadcastLayout l(Shape({3, 4}), {Shape({3, 1}), Shape({1, 4})});
  EXPECT_THAT(l.dims(), ElementsAre(3, 4));
  EXPECT_THAT(l.strides(0), ElementsAre(1, 0));
  EXPECT_THAT(l.strides(1), ElementsAre(0, 1));

  BroadcastLayout scalar(Shape(), {Shape(), Shape()});
  EXPECT_THAT(scalar.dims(), ElementsAre(1));
  EXPECT_THAT(scalar.strides(0), ElementsAre(0));
  EXPECT_EQ(scalar.num_elements(), 1);
}

TEST(StridedCounter, StartsAnywhereAndWraps) {
  const DimVector dims = {2, 3};
  const DimVector strides = {10, 1};
  StridedCounter c(dims, {strides}, 4);  // index (1, 1)
  EXPECT_EQ(c.offset(0), 11);
  c.Next();
  EXPECT_EQ(c.offset(0), 12);
  c.Next();  // past the end: back to (0, 0)
  EXPECT_EQ(c.offset(0), 0);
}

// Offsets of operand k for every output position, computed directly.
std::vector<int64_t> NaiveOffsets(const Shape& out, const Shape& operand) {
  std::vector<int64_t> offsets;
  for (int64_t pos = 0; pos < out.num_elements(); ++pos) {
    int64_t rest = pos, offset = 0, stride = 1;
    for (int d = out.rank() - 1, od = operand.rank() - 1; d >= 0; --d, --od) {
      const int64_t i = rest % out.dim(d);
      rest /= out.dim(d);
      if (od < 0) continue;
      if (operand.dim(od) != 1) offset += i * stride;
      stride *= operand.dim(od);
    }
    offsets.push_back(offset);
  }
  return offsets;
}

TEST(ForEachSegment, AnyRangeVisitsEveryPositionWithTheRightOffsets) {
  const Shape out({3, 1, 4, 5});
  const Shape x({3, 1, 4, 1});
  const Shape y({4, 5});
  const BroadcastLayout l(out, {x, y});
  const std::vector<int64_t> want_x = NaiveOffsets(out, x);
  const std::vector<int64_t> want_y = NaiveOffsets(out, y);
  for (int64_t chunk : {1, 4, 7, 60}) {
    std::vector<int64_t> got_x, got_y;
    for (int64_t begin = 0; begin < l.num_elements(); begin += chunk) {
      ForEachSegment(l, begin, std::min(l.num_elements(), begin + chunk),
                     [&](int64_t pos, const int64_t* in, int64_t len) {
                       EXPECT_EQ(pos, static_cast<int64_t>(got_x.size()));
                       for (int64_t i = 0; i < len; ++i) {
                         got_x.push_back(in[0] + i * l.inner_stride(0));
                         got_y.push_back(in[1] + i * l.inner_stride(1));
                       }
                     });
    }
    EXPECT_EQ(got_x, want_x) << "chunk " << chunk;
    EXPECT_EQ(got_y, want_y) << "chunk " << chunk;
  }
}

}  // namespace
}  // namespace tandem
