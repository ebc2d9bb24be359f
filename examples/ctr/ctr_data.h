// Synthetic click-through-rate data with a learnable signal, generated
// deterministically from a seed (no files, no state).
//
//   CtrDataConfig config;                        // 4 fields, 100k..1M ids each
//   ASSIGN_OR_RETURN(CtrDataset data, CtrDataset::Create(config));
//   CtrExamples train = data.Examples(CtrStream::kTrain, /*first=*/0, /*count=*/512);
//   train.ids[f][i]      // id of field f in example i, in [0, vocab_sizes[f])
//   train.labels[i]      // 1 (click) or 0
//
// Example i of a stream is a pure function of (seed, stream, i): any
// example can be made alone, in any order; the train and held-out streams
// share the hidden weights and differ in their draws. Per example:
//
//   id_f     = floor((V_f + 1) ^ u) - 1, u uniform in [0, 1): log-uniform
//              over [0, V_f), id k drawn with probability
//              ln((k + 2) / (k + 1)) / ln(V_f + 1), about 1 / ((k + 1.5)
//              ln V_f): the long tail of real CTR logs (the 1000 most
//              frequent ids of a 1M vocabulary take half the draws, most
//              ids are rare);
//   w_f(id)  = weight_std * z(seed, f, id), z standard normal: the hidden
//              weight of each id of each field;
//   logit    = bias + sum_f w_f(id_f) + noise_std * z(seed, stream, i);
//   label    = 1 with probability sigmoid(logit), else 0.
//
// `oracle_logits` (bias + sum_f w_f(id_f)) is the best possible score
// without the per-example noise: its AUC on a held-out set bounds what a
// model can reach. Thread-safe (const methods only).
#ifndef TANDEM_EXAMPLES_CTR_CTR_DATA_H_
#define TANDEM_EXAMPLES_CTR_CTR_DATA_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace tandem {

struct CtrDataConfig {
  std::vector<int64_t> vocab_sizes = {100000, 200000, 500000, 1000000};  // one per field
  double weight_std = 0.8;
  double bias = -1.0;
  double noise_std = 0.5;
  uint64_t seed = 1;
};

enum class CtrStream : uint64_t { kTrain = 0, kHeldOut = 1 };

struct CtrExamples {
  std::vector<std::vector<int64_t>> ids;  // [field][example]
  std::vector<int64_t> labels;            // [example], 0 or 1
  std::vector<double> oracle_logits;      // [example]
};

class CtrDataset {
 public:
  // InvalidArgument for no fields, a vocabulary size < 2, or a negative or
  // non-finite standard deviation or bias.
  static absl::StatusOr<CtrDataset> Create(CtrDataConfig config);

  const CtrDataConfig& config() const { return config_; }
  int num_fields() const { return static_cast<int>(config_.vocab_sizes.size()); }

  // Examples first .. first + count - 1 of `stream`.
  CtrExamples Examples(CtrStream stream, int64_t first, int64_t count) const;
  // The hidden weight of `id` in `field`.
  double HiddenWeight(int field, int64_t id) const;

 private:
  explicit CtrDataset(CtrDataConfig config) : config_(std::move(config)) {}
  CtrDataConfig config_;
};

}  // namespace tandem

#endif  // TANDEM_EXAMPLES_CTR_CTR_DATA_H_
