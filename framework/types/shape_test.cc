#include "framework/types/shape.h"

#include <limits>

#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(Shape, CountsAndPrints) {
  EXPECT_THAT(Shape({1, 3, 5, 5}).NumElements(), IsOkAndHolds(75));
  EXPECT_THAT(Shape().NumElements(), IsOkAndHolds(1));  // scalar
  EXPECT_THAT(Shape({4, 0, 7}).NumElements(), IsOkAndHolds(0));
  EXPECT_EQ(Shape({1, 3, 5, 5}).ToString(), "[1, 3, 5, 5]");
  EXPECT_EQ(Shape().ToString(), "[]");
}

TEST(Shape, OverflowIsInvalidArgument) {
  const int64_t big = int64_t{1} << 40;
  EXPECT_THAT(Shape::Make({big, big}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("element count overflows int64 at dim 1")));
  EXPECT_THAT(Shape({std::numeric_limits<int64_t>::max(), 2}).NumElements(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows")));
}

TEST(Shape, KnownElementsSkipsUnknownDimsAndRefusesOverflow) {
  EXPECT_THAT(Shape({-1, 3, 5}).KnownElements(), IsOkAndHolds(15));
  EXPECT_THAT(Shape({-1, 0, -1}).KnownElements(), IsOkAndHolds(0));
  const int64_t big = int64_t{1} << 40;
  EXPECT_THAT(Shape({big, -1, big}).KnownElements(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("element count overflows int64 at dim 2")));
  EXPECT_THAT(Shape({0, int64_t{1} << 62, 4}).KnownElements(),  // 0 elements, but 2^64 per row
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows int64 at dim 2")));
  EXPECT_THAT(Shape({2, -3}).KnownElements(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dim 1 is -3")));
}

TEST(Shape, NegativeDimIsInvalidArgument) {
  EXPECT_THAT(Shape::Make({3, -2}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dim 1 is negative (-2)")));
}

}  // namespace
}  // namespace tandem
