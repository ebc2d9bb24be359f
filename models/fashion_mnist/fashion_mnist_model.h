// The Fashion-MNIST classifiers: an MLP and a small CNN over 28 x 28
// grey-scale images, trained with softmax cross-entropy.
//
//   ProgramBuilder b;
//   FashionMnistConfig config;                    // MLP 784 -> 256 -> 128 -> 10
//   Adam adam(1e-3);
//   ASSIGN_OR_RETURN(FashionMnistModel m, BuildFashionMnistModel(config, &adam, &b));
//   // train: run b.main_program(), feeding m.image and m.label, fetching m.loss;
//   // test:  run m.eval (the forward ops only), fetching m.correct and m.total.
//
// Architectures (every layer but the last followed by relu):
//   mlp: fc(hidden[0]) ... fc(hidden[n-1]), fc(10).
//   cnn: conv2d(32, 5x5, pad 2), max pool 2x2; conv2d(64, 5x5, pad 2), max
//        pool 2x2; fc(hidden[0]) ... , fc(10).
// With first_layer_on_cpu the first layer (fc + relu, or conv2d + relu +
// pool) and its backward and update ops run under device_guard("cpu");
// the rest runs on the executor's default place. Parameters are named
// "layer<i>..." and initialised from `seed` (Xavier-uniform weights, zero
// biases), so two builds with one config give one set of parameters.
#ifndef TANDEM_MODELS_FASHION_MNIST_FASHION_MNIST_MODEL_H_
#define TANDEM_MODELS_FASHION_MNIST_FASHION_MNIST_MODEL_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/backward/optimizer.h"
#include "framework/program/program.h"
#include "framework/program/program_builder.h"

namespace tandem {

enum class FashionMnistArch { kMlp, kCnn };

struct FashionMnistConfig {
  FashionMnistArch arch = FashionMnistArch::kMlp;
  std::vector<int64_t> hidden = {256, 128};  // fully connected hidden layers
  bool first_layer_on_cpu = false;
  int64_t seed = 1;  // parameter initialisation; > 0
  // Mixed precision (framework/amp/amp.h): the fc and conv2d layers compute
  // in this dtype (bfloat16 or float16) with float32 master weights, in
  // training and in `eval`; float16 with dynamic loss scaling
  // (Optimizer::EnableDynamicLossScaling). nullopt: float32 throughout.
  std::optional<DataType> amp;
};

struct FashionMnistModel {
  Var image;     // float32 [batch, 28, 28], fed: pixels in [0, 1]
  Var label;     // int64 [batch], fed: classes 0..9
  Var loss;      // float32 [1]: mean cross-entropy of the batch
  Var correct;   // int64 [1]: rows whose arg-max is the label
  Var total;     // int64 [1]: rows
  Program eval;  // the forward ops only (no backward, no update)
};

// Builds the training program into `builder` (forward, backward and the
// updates of `optimizer`) and its startup program. InvalidArgument for an
// empty or non-positive hidden size, a seed < 1 or an amp dtype that is not
// 16-bit floating; the builder's or the optimizer's error otherwise.
absl::StatusOr<FashionMnistModel> BuildFashionMnistModel(const FashionMnistConfig& config,
                                                         Optimizer* optimizer,
                                                         ProgramBuilder* builder);

}  // namespace tandem

#endif  // TANDEM_MODELS_FASHION_MNIST_FASHION_MNIST_MODEL_H_
