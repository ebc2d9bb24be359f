// GoogleTest matchers for absl::Status / StatusOr (Abseil 20220623 has none).
//
//   EXPECT_OK(DoThing());
//   ASSERT_OK_AND_ASSIGN(Tensor t, MakeTensor());
//   EXPECT_THAT(Parse("tpu"), StatusIs(absl::StatusCode::kInvalidArgument,
//                                      HasSubstr("is not valid")));
//   EXPECT_THAT(Half(4), IsOkAndHolds(2));
#ifndef TANDEM_FRAMEWORK_TESTING_STATUS_MATCHERS_H_
#define TANDEM_FRAMEWORK_TESTING_STATUS_MATCHERS_H_

#include <ostream>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace testing_internal {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

}  // namespace testing_internal

using ::testing::HasSubstr;

MATCHER(IsOk, "is OK") {
  const absl::Status& s = testing_internal::GetStatus(arg);
  if (!s.ok()) *result_listener << "status is " << s;
  return s.ok();
}

MATCHER_P(IsOkAndHolds, value_matcher, "is OK and holds a matching value") {
  if (!arg.ok()) {
    *result_listener << "status is " << arg.status();
    return false;
  }
  return ::testing::ExplainMatchResult(value_matcher, *arg, result_listener);
}

// StatusIs(code) or StatusIs(code, message_matcher); a plain string must
// equal the whole message, HasSubstr(...) matches part of it.
MATCHER_P(StatusIs, code, "has status code " + absl::StatusCodeToString(code)) {
  const absl::Status& s = testing_internal::GetStatus(arg);
  *result_listener << "status is " << s;
  return s.code() == code;
}

MATCHER_P2(StatusIs, code, message_matcher,
           "has status code " + absl::StatusCodeToString(code) +
               " and a matching message") {
  const absl::Status& s = testing_internal::GetStatus(arg);
  *result_listener << "status is " << s;
  if (s.code() != code) return false;
  const std::string message(s.message());
  return ::testing::ExplainMatchResult(
      ::testing::MatcherCast<const std::string&>(message_matcher), message,
      result_listener);
}

}  // namespace tandem

#define EXPECT_OK(expr) EXPECT_THAT((expr), ::tandem::IsOk())
#define ASSERT_OK(expr) ASSERT_THAT((expr), ::tandem::IsOk())

#define TANDEM_TEST_CONCAT_INNER_(a, b) a##b
#define TANDEM_TEST_CONCAT_(a, b) TANDEM_TEST_CONCAT_INNER_(a, b)
#define ASSERT_OK_AND_ASSIGN(lhs, rexpr)                                \
  auto TANDEM_TEST_CONCAT_(tandem_test_so_, __LINE__) = (rexpr);        \
  ASSERT_OK(TANDEM_TEST_CONCAT_(tandem_test_so_, __LINE__).status());   \
  lhs = std::move(TANDEM_TEST_CONCAT_(tandem_test_so_, __LINE__)).value()

#endif  // TANDEM_FRAMEWORK_TESTING_STATUS_MATCHERS_H_
