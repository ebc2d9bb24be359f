// The embedding-offload workload (workload 1 of docs/design.md): an embedding
// table looked up by `ids`, l2_normalize, square_error_cost against a label
// of 0.5, mean, and SGD. With `table_on_cpu` the table and its lookup live
// under device_guard("cpu"); everything else runs on the executor's default
// place.
//
//   ProgramBuilder b;
//   ASSIGN_OR_RETURN(EmbeddingModel m, BuildEmbeddingModel({.rows = 1000}, &b));
//   exe.Run(b.startup_program(), &scope);  then feed m.ids, fetch m.loss
#ifndef TANDEM_MODELS_EMBEDDING_EMBEDDING_MODEL_H_
#define TANDEM_MODELS_EMBEDDING_EMBEDDING_MODEL_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "framework/program/program_builder.h"

namespace tandem {

struct EmbeddingConfig {
  int64_t rows = 10000000;
  int64_t dim = 150;
  int64_t batch = 1;
  double learning_rate = 0.001;
  bool table_on_cpu = true;  // device_guard("cpu") around the table
  bool is_sparse = false;    // SelectedRows gradient, row-wise update
  int64_t seed = 7;          // table initialisation
};

struct EmbeddingModel {
  Var ids;     // int64 [batch], fed every step
  Var loss;    // float32 [1]
  Var table;   // float32 [rows, dim] parameter
  std::string learning_rate;  // the learning-rate variable
};

// Builds the main and startup programs into `builder`.
absl::StatusOr<EmbeddingModel> BuildEmbeddingModel(const EmbeddingConfig& config,
                                                   ProgramBuilder* builder);

}  // namespace tandem

#endif  // TANDEM_MODELS_EMBEDDING_EMBEDDING_MODEL_H_
