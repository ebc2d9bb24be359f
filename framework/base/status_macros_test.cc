#include "framework/base/status_macros.h"

#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError("odd");
  return x / 2;
}

absl::StatusOr<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int h, Half(x));
  ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

absl::Status CheckEven(int x) {
  RETURN_IF_ERROR(Half(x).status());
  return absl::OkStatus();
}

TEST(StatusMacros, AssignOrReturnPropagatesValueAndError) {
  EXPECT_THAT(Quarter(12), IsOkAndHolds(3));
  EXPECT_THAT(Quarter(6), StatusIs(absl::StatusCode::kInvalidArgument, "odd"));
}

TEST(StatusMacros, ReturnIfError) {
  EXPECT_OK(CheckEven(4));
  EXPECT_THAT(CheckEven(5), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace tandem
