#include "models/fashion_mnist/fashion_mnist_model.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/base/status_macros.h"
#include "models/common/training_program.h"

namespace tandem {
namespace {

constexpr int64_t kClasses = 10;

// Xavier-uniform weights of layer `layer`, seeded from the model's seed.
Initializer LayerInit(const FashionMnistConfig& config, int layer) {
  return Initializer::XavierUniform(config.seed * 1000 + layer);
}

// conv2d(filters, 5x5, pad 2) + relu + 2x2 max pool (stride 2), as layer `layer`.
Var ConvBlock(const FashionMnistConfig& config, Var x, int64_t filters, int layer,
              ProgramBuilder* b) {
  Var conv = b->Conv2D(x, filters, /*filter_size=*/5, /*stride=*/1, /*padding=*/2, /*groups=*/1,
                       /*with_bias=*/true, absl::StrCat("layer", layer), LayerInit(config, layer));
  return b->Pool2D(b->Relu(conv), /*pool_size=*/2, "max", /*pool_stride=*/2);
}

// Layer 0: fc + relu for the MLP, conv + relu + pool for the CNN.
Var FirstLayer(const FashionMnistConfig& config, Var image, ProgramBuilder* b) {
  if (config.arch == FashionMnistArch::kMlp) {
    return b->Relu(b->Fc(image, config.hidden[0], /*in_num_col_dims=*/1, /*with_bias=*/true,
                         "layer0", LayerInit(config, 0)));
  }
  return ConvBlock(config, b->Reshape(image, {-1, 1, 28, 28}), 32, 0, b);
}

}  // namespace

absl::StatusOr<FashionMnistModel> BuildFashionMnistModel(const FashionMnistConfig& config,
                                                         Optimizer* optimizer, ProgramBuilder* b) {
  const bool sizes_ok =
      !config.hidden.empty() && std::all_of(config.hidden.begin(), config.hidden.end(),
                                            [](int64_t size) { return size >= 1; });
  if (!sizes_ok || config.seed < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fashion_mnist model: need one or more hidden sizes >= 1 and a seed >= 1, got hidden [",
        absl::StrJoin(config.hidden, ", "), "] and seed ", config.seed));
  }
  FashionMnistModel m;
  m.image = b->Data("image", DataType::kFloat32, Shape({-1, 28, 28}));
  m.label = b->Data("label", DataType::kInt64, Shape({-1}));
  Var h;
  {
    auto guard = b->device_guard(config.first_layer_on_cpu ? "cpu" : "");
    h = FirstLayer(config, m.image, b);
  }
  int layer = 1;
  size_t first_fc = 1;  // the MLP's layer 0 used hidden[0]
  if (config.arch == FashionMnistArch::kCnn) {
    h = ConvBlock(config, h, 64, layer++, b);
    first_fc = 0;
  }
  for (size_t i = first_fc; i < config.hidden.size(); ++i, ++layer) {
    h = b->Relu(b->Fc(h, config.hidden[i], 1, true, absl::StrCat("layer", layer),
                      LayerInit(config, layer)));
  }
  Var logits = b->Fc(h, kClasses, 1, true, absl::StrCat("layer", layer), LayerInit(config, layer));
  m.loss = b->Mean(b->SoftmaxWithCrossEntropy(logits, m.label));
  b->Accuracy(logits, m.label, /*k=*/1, &m.correct, &m.total);
  ASSIGN_OR_RETURN(m.eval, FinishTrainingProgram(config.amp, m.loss, optimizer, b));
  return m;
}

}  // namespace tandem
