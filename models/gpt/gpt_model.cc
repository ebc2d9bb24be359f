#include "models/gpt/gpt_model.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "models/common/training_program.h"

namespace tandem {
namespace {

constexpr double kInitStd = 0.02;

absl::Status CheckConfig(const GptConfig& c) {
  if (c.vocab < 2 || c.seq < 1 || c.layers < 1 || c.width < 1 || c.heads < 1 ||
      c.width % c.heads != 0 || c.seed < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gpt model: need vocab >= 2, seq, layers, width and heads >= 1 with width a multiple of "
        "heads, and seed >= 1; got vocab ",
        c.vocab, ", seq ", c.seq, ", layers ", c.layers, ", width ", c.width, ", heads ", c.heads,
        ", seed ", c.seed));
  }
  if (c.amp.has_value() && !IsLowPrecisionFloat(*c.amp)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpt model: amp must be bfloat16 or float16, got ", DataTypeName(*c.amp)));
  }
  if (c.offload_optimizer && !c.amp.has_value()) {
    return absl::InvalidArgumentError(
        "gpt model: optimizer offload needs amp (bfloat16 or float16): the device holds the "
        "16-bit working copies of the host's float32 weights");
  }
  return absl::OkStatus();
}

// Builds the layers with one seed stream: each weight gets the next seed.
class GptBuilder {
 public:
  GptBuilder(const GptConfig& config, ProgramBuilder* b) : c_(config), b_(b) {}

  Var Forward(Var tokens) {
    Var x = b_->Embedding(tokens, {c_.vocab, c_.width}, /*is_sparse=*/false, -1, Normal(kInitStd),
                          "wte");
    Var positions =
        b_->CreateParameter("wpe", DataType::kFloat32, Shape({c_.seq, c_.width}), Normal(kInitStd));
    x = b_->ElementwiseAdd(x, positions, /*axis=*/1);
    for (int64_t i = 0; i < c_.layers; ++i) x = Block(x, absl::StrCat("block", i));
    x = b_->LayerNorm(x, /*begin_norm_axis=*/2, 1e-5, true, true, "ln_f");
    return b_->Fc(x, c_.vocab, /*in_num_col_dims=*/2, /*with_bias=*/false, "lm_head",
                  Normal(kInitStd));
  }

 private:
  Initializer Normal(double std) { return Initializer::Normal(0, std, c_.seed * 1000 + ++seeds_); }

  Var Linear(Var x, int64_t size, const std::string& name, double std = kInitStd) {
    return b_->Fc(x, size, /*in_num_col_dims=*/2, /*with_bias=*/true, name, Normal(std));
  }

  Var Block(Var x, const std::string& name) {
    const double residual_std = kInitStd / std::sqrt(2.0 * c_.layers);
    Var h = b_->LayerNorm(x, 2, 1e-5, true, true, name + ".ln_1");
    h = b_->SelfAttention(Linear(h, 3 * c_.width, name + ".attn.qkv"), c_.heads);
    x = b_->ElementwiseAdd(x, Linear(h, c_.width, name + ".attn.proj", residual_std));
    h = b_->LayerNorm(x, 2, 1e-5, true, true, name + ".ln_2");
    h = b_->Gelu(Linear(h, 4 * c_.width, name + ".mlp.fc1"), /*approximate=*/true);
    return b_->ElementwiseAdd(x, Linear(h, c_.width, name + ".mlp.fc2", residual_std));
  }

  const GptConfig& c_;
  ProgramBuilder* b_;
  int64_t seeds_ = 0;
};

}  // namespace

absl::StatusOr<GptConfig> GptConfig::Preset(const std::string& name) {
  GptConfig c;
  if (name == "tiny") return c;
  if (name == "small") {
    c.layers = 6, c.width = 384, c.heads = 6, c.seq = 256;
    return c;
  }
  if (name == "gpt2") {
    c.layers = 12, c.width = 768, c.heads = 12, c.seq = 512;
    return c;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("gpt model: unknown size '", name, "' (tiny, small or gpt2)"));
}

int64_t GptConfig::NumParameters() const {
  const int64_t d = width;
  const int64_t per_block = 2 * 2 * d            // two layer norms
                            + d * 3 * d + 3 * d  // qkv
                            + d * d + d          // attention projection
                            + d * 4 * d + 4 * d  // fc1
                            + 4 * d * d + d;     // fc2
  return vocab * d + seq * d + layers * per_block + 2 * d + d * vocab;
}

absl::StatusOr<GptModel> BuildGptModel(const GptConfig& config, Optimizer* optimizer,
                                       ProgramBuilder* b) {
  RETURN_IF_ERROR(CheckConfig(config));
  GptModel m;
  m.tokens = b->Data("tokens", DataType::kInt64, Shape({-1, config.seq}));
  m.targets = b->Data("targets", DataType::kInt64, Shape({-1, config.seq, 1}));
  GptBuilder gpt(config, b);
  Var logits;
  {
    auto parameters = b->parameters_on(config.offload_optimizer ? "cpu" : "");
    logits = gpt.Forward(m.tokens);
  }
  m.loss = b->Mean(b->SoftmaxWithCrossEntropy(logits, m.targets));
  // Recomputed weight casts replace the persistent 16-bit working copies.
  if (config.recompute.has_value() && config.recompute->parameter_casts) {
    optimizer->set_working_copies(false);
  }
  ASSIGN_OR_RETURN(m.eval, FinishTrainingProgram(config.amp, m.loss, optimizer, b));
  if (config.recompute.has_value()) {
    ASSIGN_OR_RETURN(m.recompute, ApplyRecompute(*config.recompute, &b->main_program()));
  }
  return m;
}

}  // namespace tandem
