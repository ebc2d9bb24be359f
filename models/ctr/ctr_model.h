// A click-through-rate model: one embedding table per sparse id field, kept
// on the CPU, and a dense MLP on the executor's default place.
//
//   ProgramBuilder b;
//   CtrModelConfig config;                    // 4 fields, 100k..1M rows each
//   Adam adam(2e-3);
//   ASSIGN_OR_RETURN(CtrModel m, BuildCtrModel(config, &adam, &b));
//   // train: run b.main_program() feeding m.ids[f] and m.label, fetching m.loss;
//   // predict: run m.eval, fetching m.probabilities (column 1: P(click)).
//
// Model: for each field f, emb_f = lookup_table(ids_f, table_f [V_f, dim])
// with table_f and its lookup under device_guard("cpu") (when
// tables_on_cpu) and a sparse (SelectedRows) gradient (when is_sparse), so
// the tables, their gradients and their optimizer updates never leave the
// host; then concat(emb_0 .. emb_F-1) -> fc + relu per hidden size -> fc(2)
// -> softmax_with_cross_entropy against the click label, averaged. Two
// logits under softmax are the logistic model of their difference, so the
// loss is the sigmoid cross-entropy (logloss) of z1 - z0 and softmax column
// 1 is the click probability. Tables start uniform in [-0.01, 0.01), fc
// weights Xavier-uniform, all seeded by `seed`.
#ifndef TANDEM_MODELS_CTR_CTR_MODEL_H_
#define TANDEM_MODELS_CTR_CTR_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/backward/optimizer.h"
#include "framework/program/program.h"
#include "framework/program/program_builder.h"

namespace tandem {

struct CtrModelConfig {
  std::vector<int64_t> vocab_sizes = {100000, 200000, 500000, 1000000};  // table rows per field
  int64_t embedding_dim = 16;
  std::vector<int64_t> hidden = {64, 32};
  bool tables_on_cpu = true;  // device_guard("cpu") around the tables and lookups
  bool is_sparse = true;      // sparse table gradients and row-wise updates
  int64_t seed = 1;           // > 0
  // Mixed precision (framework/amp/amp.h) of the dense MLP's fc layers, in
  // training and in `eval`; float16 with dynamic loss scaling
  // (Optimizer::EnableDynamicLossScaling). nullopt: float32 throughout.
  std::optional<DataType> amp;
};

struct CtrModel {
  std::vector<Var> ids;             // int64 [batch] per field, fed
  Var label;                        // int64 [batch], fed: 1 click, 0 none
  Var loss;                         // float32 [1]: mean logloss of the batch
  Var probabilities;                // float32 [batch, 2]: column 1 is P(click)
  std::vector<std::string> tables;  // the table parameters, per field
  Program eval;                     // the forward ops only
};

// InvalidArgument for no field, a table or layer size < 1, or a seed < 1;
// the builder's or the optimizer's error otherwise.
absl::StatusOr<CtrModel> BuildCtrModel(const CtrModelConfig& config, Optimizer* optimizer,
                                       ProgramBuilder* builder);

}  // namespace tandem

#endif  // TANDEM_MODELS_CTR_CTR_MODEL_H_
