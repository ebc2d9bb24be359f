#include "models/embedding/embedding_model.h"

#include "absl/strings/str_cat.h"
#include "framework/backward/optimizer.h"

namespace tandem {

absl::StatusOr<EmbeddingModel> BuildEmbeddingModel(const EmbeddingConfig& config,
                                                   ProgramBuilder* b) {
  if (config.rows <= 0 || config.dim <= 0 || config.batch <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("embedding model: rows, dim and batch must be > 0, got ", config.rows, ", ",
                     config.dim, ", ", config.batch));
  }
  EmbeddingModel m;
  m.ids = b->Data("ids", DataType::kInt64, Shape({config.batch}));
  Var label = b->FillConstant({config.batch, config.dim}, DataType::kFloat32, 0.5);
  Var emb;
  {
    auto guard = b->device_guard(config.table_on_cpu ? "cpu" : "");
    emb = b->Embedding(m.ids, {config.rows, config.dim}, config.is_sparse, /*padding_idx=*/-1,
                       Initializer::Uniform(-0.05, 0.05, config.seed), "emb_w");
  }
  m.table = {"emb_w"};
  Var out = b->L2Normalize(emb, /*axis=*/-1);
  Var cost = b->SquareErrorCost(out, label);
  m.loss = b->Mean(cost);
  if (!b->status().ok()) return b->status();
  SGD sgd(config.learning_rate);
  absl::Status s = sgd.Minimize(b, m.loss);
  if (!s.ok()) return s;
  m.learning_rate = sgd.learning_rate_var();
  return m;
}

}  // namespace tandem
