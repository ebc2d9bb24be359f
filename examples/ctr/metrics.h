// Binary-classification metrics computed on the host from predictions.
//
//   ASSIGN_OR_RETURN(double auc, Auc(click_probabilities, labels));
//   ASSIGN_OR_RETURN(double logloss, LogLoss(click_probabilities, labels));
//
// Functions are pure and thread-safe.
#ifndef TANDEM_EXAMPLES_CTR_METRICS_H_
#define TANDEM_EXAMPLES_CTR_METRICS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace tandem {

// Area under the ROC curve: the probability that a random positive scores
// above a random negative, ties counting one half (the Mann-Whitney U
// statistic over positives x negatives). InvalidArgument if the sizes
// differ, a label is not 0 or 1, a score is NaN, or either class is absent.
absl::StatusOr<double> Auc(const std::vector<double>& scores, const std::vector<int64_t>& labels);

// Mean of -log(p) over positives and -log(1 - p) over negatives, with p
// clipped to [1e-7, 1 - 1e-7]. InvalidArgument if the sizes differ or are
// zero, a label is not 0 or 1, or a probability is outside [0, 1] or NaN.
absl::StatusOr<double> LogLoss(const std::vector<double>& probabilities,
                               const std::vector<int64_t>& labels);

}  // namespace tandem

#endif  // TANDEM_EXAMPLES_CTR_METRICS_H_
