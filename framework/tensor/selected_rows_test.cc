#include "framework/tensor/selected_rows.h"

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

}  // namespace
}  // namespace tandem
