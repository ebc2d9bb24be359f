#include "models/ctr/ctr_model.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/base/status_macros.h"
#include "models/common/training_program.h"

namespace tandem {

absl::StatusOr<CtrModel> BuildCtrModel(const CtrModelConfig& config, Optimizer* optimizer,
                                       ProgramBuilder* b) {
  auto positive = [](const std::vector<int64_t>& v) {
    return !v.empty() && std::all_of(v.begin(), v.end(), [](int64_t x) { return x >= 1; });
  };
  if (!positive(config.vocab_sizes) || !positive(config.hidden) || config.embedding_dim < 1 ||
      config.seed < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ctr model: vocab_sizes [", absl::StrJoin(config.vocab_sizes, ", "), "], hidden [",
        absl::StrJoin(config.hidden, ", "), "], embedding_dim ", config.embedding_dim, " and seed ",
        config.seed, ": need at least one of each size, all >= 1"));
  }
  CtrModel m;
  std::vector<Var> embeddings;
  for (size_t f = 0; f < config.vocab_sizes.size(); ++f) {
    m.ids.push_back(b->Data(absl::StrCat("ids_", f), DataType::kInt64, Shape({-1})));
    m.tables.push_back(absl::StrCat("table_", f));
    auto guard = b->device_guard(config.tables_on_cpu ? "cpu" : "");
    embeddings.push_back(
        b->Embedding(m.ids[f], {config.vocab_sizes[f], config.embedding_dim}, config.is_sparse,
                     /*padding_idx=*/-1, Initializer::Uniform(-0.01, 0.01, config.seed * 1000 + f),
                     m.tables[f]));
  }
  m.label = b->Data("label", DataType::kInt64, Shape({-1}));
  Var h = b->Concat(embeddings, /*axis=*/1);
  int64_t layer = 0;
  for (int64_t size : config.hidden) {
    h = b->Relu(b->Fc(h, size, 1, true, absl::StrCat("dense", layer),
                      Initializer::XavierUniform(config.seed * 1000 + 100 + layer)));
    ++layer;
  }
  Var logits = b->Fc(h, 2, 1, true, absl::StrCat("dense", layer),
                     Initializer::XavierUniform(config.seed * 1000 + 100 + layer));
  m.loss =
      b->Mean(b->SoftmaxWithCrossEntropy(logits, m.label, /*ignore_index=*/-100, &m.probabilities));
  ASSIGN_OR_RETURN(m.eval, FinishTrainingProgram(config.amp, m.loss, optimizer, b));
  return m;
}

}  // namespace tandem
