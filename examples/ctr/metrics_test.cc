#include "examples/ctr/metrics.h"

#include <cmath>

#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::DoubleNear;
using ::testing::HasSubstr;

TEST(AucTest, PerfectReversedAndTiedRankings) {
  EXPECT_THAT(Auc({0.1, 0.2, 0.8, 0.9}, {0, 0, 1, 1}), IsOkAndHolds(1.0));
  EXPECT_THAT(Auc({0.9, 0.8, 0.2, 0.1}, {0, 0, 1, 1}), IsOkAndHolds(0.0));
  EXPECT_THAT(Auc({0.5, 0.5, 0.5, 0.5}, {0, 1, 0, 1}), IsOkAndHolds(0.5));
}

TEST(AucTest, CountsPairsAndHalfTies) {
  // Pairs (positive, negative): 0.35>0.1 yes, 0.35>0.4 no, 0.8 beats both: 3 / 4.
  EXPECT_THAT(Auc({0.1, 0.4, 0.35, 0.8}, {0, 0, 1, 1}), IsOkAndHolds(0.75));
  // Positive 0.4 ties negative 0.4 (1/2) and beats 0.1; positive 0.3 beats 0.1 only:
  // (1 + 0.5 + 1 + 0) / 4.
  EXPECT_THAT(Auc({0.1, 0.4, 0.4, 0.3}, {0, 0, 1, 1}), IsOkAndHolds(0.625));
}

TEST(AucTest, RejectsBadInput) {
  EXPECT_THAT(Auc({0.1, 0.2}, {0}), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("2 predictions but 1 labels")));
  EXPECT_THAT(Auc({0.1, 0.2}, {0, 2}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("label 1 is 2")));
  EXPECT_THAT(Auc({0.1, 0.2}, {1, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("2 positives and 0")));
  EXPECT_THAT(Auc({NAN, 0.2}, {0, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("score 0 is NaN")));
}

TEST(LogLossTest, MeanNegativeLogLikelihood) {
  const double expected = -(std::log(0.8) + std::log(1 - 0.3)) / 2;
  EXPECT_THAT(LogLoss({0.8, 0.3}, {1, 0}), IsOkAndHolds(DoubleNear(expected, 1e-12)));
  // A confident wrong answer is clipped, not infinite.
  EXPECT_THAT(LogLoss({0.0}, {1}), IsOkAndHolds(DoubleNear(-std::log(1e-7), 1e-9)));
}

TEST(LogLossTest, RejectsBadInput) {
  EXPECT_THAT(LogLoss({}, {}), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(LogLoss({1.5}, {1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("probability 0 is 1.5")));
  EXPECT_THAT(LogLoss({0.5}, {-1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("label 0 is -1")));
}

}  // namespace
}  // namespace tandem
