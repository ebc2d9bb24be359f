#include "framework/tensor/selected_rows.h"

#include <cstdint>
#include <vector>

#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(SelectedRows, DenseShapeAndValidation) {
  SelectedRows ok(10, {7, 3, 7}, Tensor::FromVector<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(ok.DenseShape(), Shape({10, 2}));
  EXPECT_OK(ok.Validate());

  SelectedRows bad_row(10, {7, 10}, Tensor::FromVector<float>({2, 1}, {1, 2}));
  EXPECT_THAT(bad_row.Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("row index 10 at position 1 is outside [0, 10)")));

  SelectedRows bad_count(10, {1}, Tensor::FromVector<float>({2, 1}, {1, 2}));
  EXPECT_THAT(bad_count.Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("does not have 1 rows")));
}

TEST(FirstOutOfRange, FirstBadPositionOrMinusOne) {
  const std::vector<int64_t> ids = {0, 9, 3, 10, -1};
  EXPECT_EQ(FirstOutOfRange(ids.data(), 3, 10), -1);
  EXPECT_EQ(FirstOutOfRange(ids.data(), 5, 10), 3);
  EXPECT_EQ(FirstOutOfRange(ids.data() + 4, 1, 10), 0);
  EXPECT_EQ(FirstOutOfRange(ids.data(), 0, 0), -1);
}

TEST(FirstOutOfRange, FindsTheFirstBadIdPastManyBlocks) {
  std::vector<int64_t> ids(5000, 3);
  EXPECT_EQ(FirstOutOfRange(ids.data(), 5000, 4), -1);
  ids[4321] = 4;
  ids[4999] = -7;
  EXPECT_EQ(FirstOutOfRange(ids.data(), 5000, 4), 4321);
  EXPECT_EQ(FirstOutOfRange(ids.data(), 4321, 4), -1);
  EXPECT_EQ(FirstOutOfRange(ids.data() + 4322, 678, 4), 677);
}

}  // namespace
}  // namespace tandem
