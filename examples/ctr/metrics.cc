#include "examples/ctr/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"

namespace tandem {
namespace {

absl::Status CheckLabels(const char* metric, size_t predictions,
                         const std::vector<int64_t>& labels) {
  if (predictions != labels.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(metric, ": ", predictions, " predictions but ", labels.size(), " labels"));
  }
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] != 0 && labels[i] != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(metric, ": label ", i, " is ", labels[i], ", need 0 or 1"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<double> Auc(const std::vector<double>& scores, const std::vector<int64_t>& labels) {
  RETURN_IF_ERROR(CheckLabels("auc", scores.size(), labels));
  for (size_t i = 0; i < scores.size(); ++i) {
    if (std::isnan(scores[i])) {
      return absl::InvalidArgumentError(absl::StrCat("auc: score ", i, " is NaN"));
    }
  }
  const int64_t positives = std::count(labels.begin(), labels.end(), 1);
  const int64_t negatives = static_cast<int64_t>(labels.size()) - positives;
  if (positives == 0 || negatives == 0) {
    return absl::InvalidArgumentError(absl::StrCat("auc: needs both classes, got ", positives,
                                                   " positives and ", negatives, " negatives"));
  }
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  // Sum of the positives' ranks (1-based), tied scores sharing their mean rank.
  double positive_rank_sum = 0;
  for (size_t lo = 0; lo < order.size();) {
    size_t hi = lo;
    while (hi < order.size() && scores[order[hi]] == scores[order[lo]]) ++hi;
    const double mean_rank = (lo + 1 + hi) / 2.0;
    for (size_t k = lo; k < hi; ++k) positive_rank_sum += labels[order[k]] * mean_rank;
    lo = hi;
  }
  const double u = positive_rank_sum - positives * (positives + 1) / 2.0;
  return u / (static_cast<double>(positives) * negatives);
}

absl::StatusOr<double> LogLoss(const std::vector<double>& probabilities,
                               const std::vector<int64_t>& labels) {
  RETURN_IF_ERROR(CheckLabels("logloss", probabilities.size(), labels));
  if (labels.empty()) return absl::InvalidArgumentError("logloss: no predictions");
  constexpr double kClip = 1e-7;
  double sum = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const double p = probabilities[i];
    if (!(p >= 0 && p <= 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("logloss: probability ", i, " is ", p, ", need [0, 1]"));
    }
    const double q = std::clamp(labels[i] ? p : 1 - p, kClip, 1 - kClip);
    sum -= std::log(q);
  }
  return sum / labels.size();
}

}  // namespace tandem
