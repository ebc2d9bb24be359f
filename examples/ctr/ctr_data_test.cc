#include "examples/ctr/ctr_data.h"

#include <cmath>

#include "examples/ctr/metrics.h"
#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;

CtrDataset MakeDataset(CtrDataConfig config = {}) {
  absl::StatusOr<CtrDataset> d = CtrDataset::Create(std::move(config));
  EXPECT_OK(d.status());
  return *std::move(d);
}

TEST(CtrDataTest, AnExampleDependsOnlyOnSeedStreamAndIndex) {
  const CtrDataset data = MakeDataset();
  const CtrExamples all = data.Examples(CtrStream::kTrain, 0, 100);
  const CtrExamples tail = data.Examples(CtrStream::kTrain, 60, 40);
  for (int f = 0; f < data.num_fields(); ++f) {
    EXPECT_EQ(std::vector<int64_t>(all.ids[f].begin() + 60, all.ids[f].end()), tail.ids[f]);
  }
  EXPECT_EQ(std::vector<int64_t>(all.labels.begin() + 60, all.labels.end()), tail.labels);
  // The held-out stream draws other examples.
  const CtrExamples held_out = data.Examples(CtrStream::kHeldOut, 0, 100);
  EXPECT_NE(held_out.ids[3], all.ids[3]);
  // Another seed gives other ids and other hidden weights.
  CtrDataConfig other;
  other.seed = 2;
  EXPECT_NE(MakeDataset(other).Examples(CtrStream::kTrain, 0, 100).ids[3], all.ids[3]);
  EXPECT_NE(MakeDataset(other).HiddenWeight(0, 5), data.HiddenWeight(0, 5));
}

TEST(CtrDataTest, IdsAreLongTailedWithinTheVocabulary) {
  CtrDataConfig config;
  config.vocab_sizes = {10, 1000000};
  const CtrDataset data = MakeDataset(config);
  const int64_t n = 200000;
  const CtrExamples ex = data.Examples(CtrStream::kTrain, 0, n);
  int64_t zeros = 0, below_1000 = 0, small_max = 0;
  for (int64_t i = 0; i < n; ++i) {
    small_max = std::max(small_max, ex.ids[0][i]);
    ASSERT_GE(ex.ids[0][i], 0);
    ASSERT_GE(ex.ids[1][i], 0);
    ASSERT_LT(ex.ids[1][i], 1000000);
    zeros += ex.ids[1][i] == 0;
    below_1000 += ex.ids[1][i] < 1000;
  }
  EXPECT_EQ(small_max, 9);
  // P(id = 0) = ln 2 / ln(1e6 + 1) = 0.0502; P(id < 1000) = ln 1001 / ln(1e6 + 1) = 0.5001.
  EXPECT_NEAR(zeros / double(n), 0.0502, 0.003);
  EXPECT_NEAR(below_1000 / double(n), 0.5001, 0.005);
}

TEST(CtrDataTest, LabelsFollowTheHiddenWeights) {
  CtrDataConfig config;
  config.noise_std = 0;
  const CtrDataset data = MakeDataset(config);
  const int64_t n = 50000;
  const CtrExamples ex = data.Examples(CtrStream::kHeldOut, 0, n);
  double click_rate = 0, expected_rate = 0;
  for (int64_t i = 0; i < n; ++i) {
    double logit = config.bias;
    for (int f = 0; f < data.num_fields(); ++f) logit += data.HiddenWeight(f, ex.ids[f][i]);
    ASSERT_DOUBLE_EQ(ex.oracle_logits[i], logit);
    click_rate += ex.labels[i];
    expected_rate += 1 / (1 + std::exp(-logit));
  }
  EXPECT_NEAR(click_rate / n, expected_rate / n, 0.01);
  // The oracle ranks clicks well above chance: a learnable signal.
  ASSERT_OK_AND_ASSIGN(double auc, Auc(ex.oracle_logits, ex.labels));
  EXPECT_GT(auc, 0.75);
}

TEST(CtrDataTest, HiddenWeightsHaveTheConfiguredSpread) {
  const CtrDataset data = MakeDataset();
  double sum = 0, sum_sq = 0;
  const int n = 100000;
  for (int id = 0; id < n; ++id) {
    const double w = data.HiddenWeight(2, id);
    sum += w;
    sum_sq += w * w;
  }
  EXPECT_NEAR(sum / n, 0, 0.01);
  EXPECT_NEAR(std::sqrt(sum_sq / n), data.config().weight_std, 0.01);
}

TEST(CtrDataTest, RejectsBadConfigs) {
  CtrDataConfig none;
  none.vocab_sizes = {};
  EXPECT_THAT(CtrDataset::Create(none), StatusIs(absl::StatusCode::kInvalidArgument));
  CtrDataConfig tiny;
  tiny.vocab_sizes = {100, 1};
  EXPECT_THAT(CtrDataset::Create(tiny),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("vocabulary size of field 1 must be >= 2, got 1")));
  CtrDataConfig noisy;
  noisy.noise_std = -1;
  EXPECT_THAT(CtrDataset::Create(noisy), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace tandem
