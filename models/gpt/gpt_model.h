// A GPT-style decoder-only language model over bytes: token and position
// embeddings, pre-norm transformer blocks of causal multi-head
// self-attention and a GELU MLP, a final layer norm and a projection to
// the vocabulary, trained with softmax cross-entropy on the next byte.
//
//   ProgramBuilder b;
//   GptConfig config = GptConfig::Preset("tiny").value();   // 2 x 64, 4 heads, seq 64
//   Adam adam(3e-4);
//   ASSIGN_OR_RETURN(GptModel m, BuildGptModel(config, &adam, &b));
//   // train: run b.main_program(), feeding m.tokens and m.targets, fetching m.loss;
//   // evaluate: run m.eval (the forward ops only), fetching m.loss.
//
// Block i (parameters "block<i>.<layer>..."):
//   h = x + proj(self_attention(qkv(layer_norm(x))))
//   x' = h + fc2(gelu(fc1(layer_norm(h))))      fc1: 4 x width, gelu's tanh form
// Weights are initialised normal(0, 0.02) from `seed` (the residual
// projections' with 0.02 / sqrt(2 * layers), as GPT-2), biases zero, layer
// norms' scales one. Two builds with one config give one set of parameters.
#ifndef TANDEM_MODELS_GPT_GPT_MODEL_H_
#define TANDEM_MODELS_GPT_GPT_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "framework/backward/optimizer.h"
#include "framework/backward/recompute.h"
#include "framework/program/program.h"
#include "framework/program/program_builder.h"

namespace tandem {

struct GptConfig {
  int64_t vocab = 256;  // bytes
  int64_t seq = 64;     // context length: tokens per sequence
  int64_t layers = 2;
  int64_t width = 64;  // the model dim, a multiple of heads
  int64_t heads = 4;
  int64_t seed = 1;  // parameter initialisation; >= 1
  // Mixed precision (framework/amp/amp.h): the products and the attention
  // in bfloat16 or float16 with float32 master weights; float16 with
  // dynamic loss scaling. nullopt: float32 throughout.
  std::optional<DataType> amp;
  // Optimizer offload: every parameter (its float32 master value) and its
  // optimizer state start on the host (ProgramBuilder::parameters_on("cpu"))
  // while the ops run on the executor's place; needs `amp` (the device
  // holds the 16-bit working copies the casts send up, and the 16-bit
  // gradients come down to the host updates). An offload planner
  // (framework/autoplace/optimizer_offload.h) may bring some back to the
  // device to use a memory budget: the executor moves them before its runs.
  bool offload_optimizer = false;
  // Activation recomputation (framework/backward/recompute.h): the layer
  // norms' and gelus' outputs (and their 16-bit casts) are made again in
  // the backward instead of being kept from the forward. Same losses, less
  // device memory. nullopt: everything the backward reads is kept.
  std::optional<RecomputeOptions> recompute;

  // "tiny" (2 layers x 64, 4 heads, seq 64: CI), "small" (6 x 384, 6
  // heads, seq 256) or "gpt2" (12 x 768, 12 heads, seq 512: GPT-2 small's
  // shape over bytes). InvalidArgument naming the presets otherwise.
  static absl::StatusOr<GptConfig> Preset(const std::string& name);
  // Parameters (weights and biases) of the model.
  int64_t NumParameters() const;
};

struct GptModel {
  Var tokens;                 // int64 [batch, seq], fed: bytes 0..vocab-1
  Var targets;                // int64 [batch, seq, 1], fed: the next byte of each token
  Var loss;                   // float32 [1]: mean cross-entropy in nats per token
  Program eval;               // the forward ops only (no backward, no update)
  RecomputeReport recompute;  // what config.recompute made again (empty without it)
};

// Builds the training program into `builder` (forward, backward and the
// updates of `optimizer`) and its startup program. InvalidArgument for
// non-positive sizes, a width that is not a multiple of heads, a seed < 1,
// an amp dtype that is not 16-bit floating or an offload without amp; the
// builder's or the optimizer's error otherwise.
absl::StatusOr<GptModel> BuildGptModel(const GptConfig& config, Optimizer* optimizer,
                                       ProgramBuilder* builder);

}  // namespace tandem

#endif  // TANDEM_MODELS_GPT_GPT_MODEL_H_
