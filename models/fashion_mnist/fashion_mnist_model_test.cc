#include "models/fashion_mnist/fashion_mnist_model.h"

#include <set>

#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Shapes of the trainable parameters, by name.
std::map<std::string, Shape> Parameters(const Program& program) {
  std::map<std::string, Shape> params;
  for (const VarDesc& v : program.block().vars()) {
    if (v.is_parameter) params[v.name] = v.shape;
  }
  return params;
}

std::vector<std::string> OpTypes(const Program& program) {
  std::vector<std::string> types;
  for (const OpDesc& op : program.block().ops()) types.push_back(op.type);
  return types;
}

TEST(FashionMnistModelTest, MlpLayersAndEvalProgram) {
  ProgramBuilder b;
  Adam adam(1e-3);
  ASSERT_OK_AND_ASSIGN(FashionMnistModel m, BuildFashionMnistModel({}, &adam, &b));
  EXPECT_EQ(Parameters(b.main_program()),
            (std::map<std::string, Shape>{{"layer0.b_0", Shape({256})},
                                          {"layer0.w_0", Shape({784, 256})},
                                          {"layer1.b_0", Shape({128})},
                                          {"layer1.w_0", Shape({256, 128})},
                                          {"layer2.b_0", Shape({10})},
                                          {"layer2.w_0", Shape({128, 10})}}));
  // The eval program is the forward pass: no gradient or update op.
  EXPECT_THAT(OpTypes(m.eval), ElementsAre("fc", "relu", "fc", "relu", "fc",
                                           "softmax_with_cross_entropy", "mean", "accuracy"));
  int adam_ops = 0;
  for (const std::string& type : OpTypes(b.main_program())) adam_ops += type == "adam";
  EXPECT_EQ(adam_ops, 6);
  EXPECT_EQ(m.eval.block().FindVar(m.correct.name)->dtype, DataType::kInt64);
}

TEST(FashionMnistModelTest, CnnLayers) {
  ProgramBuilder b;
  Momentum momentum(0.01, 0.9);
  FashionMnistConfig config;
  config.arch = FashionMnistArch::kCnn;
  config.hidden = {128};
  ASSERT_OK_AND_ASSIGN(FashionMnistModel m, BuildFashionMnistModel(config, &momentum, &b));
  const std::map<std::string, Shape> params = Parameters(b.main_program());
  EXPECT_EQ(params.at("layer0.w_0"), Shape({32, 1, 5, 5}));
  EXPECT_EQ(params.at("layer1.w_0"), Shape({64, 32, 5, 5}));
  EXPECT_EQ(params.at("layer2.w_0"), Shape({64 * 7 * 7, 128}));
  EXPECT_EQ(params.at("layer3.w_0"), Shape({128, 10}));
  EXPECT_EQ(params.size(), 8u);
}

TEST(FashionMnistModelTest, FirstLayerOnCpuGuardsExactlyTheFirstLayer) {
  for (FashionMnistArch arch : {FashionMnistArch::kMlp, FashionMnistArch::kCnn}) {
    ProgramBuilder b;
    Adam adam(1e-3);
    FashionMnistConfig config;
    config.arch = arch;
    config.first_layer_on_cpu = true;
    ASSERT_OK_AND_ASSIGN(FashionMnistModel m, BuildFashionMnistModel(config, &adam, &b));
    std::vector<std::string> on_cpu;
    for (const OpDesc& op : m.eval.block().ops()) {
      if (op.op_device == "cpu") on_cpu.push_back(op.type);
    }
    if (arch == FashionMnistArch::kMlp) {
      EXPECT_THAT(on_cpu, ElementsAre("fc", "relu"));
    } else {
      EXPECT_THAT(on_cpu, ElementsAre("reshape", "conv2d", "elementwise_add", "relu", "pool2d"));
    }
  }
}

TEST(FashionMnistModelTest, SameConfigSameInitialisation) {
  ProgramBuilder b1, b2;
  Adam a1(1e-3), a2(1e-3);
  ASSERT_OK(BuildFashionMnistModel({}, &a1, &b1).status());
  ASSERT_OK(BuildFashionMnistModel({}, &a2, &b2).status());
  EXPECT_EQ(b1.startup_program(), b2.startup_program());
  FashionMnistConfig other;
  other.seed = 2;
  ProgramBuilder b3;
  Adam a3(1e-3);
  ASSERT_OK(BuildFashionMnistModel(other, &a3, &b3).status());
  EXPECT_FALSE(b1.startup_program() == b3.startup_program());
}

TEST(FashionMnistModelTest, RejectsBadConfigs) {
  Adam adam(1e-3);
  for (const std::vector<int64_t>& hidden : {std::vector<int64_t>{}, {128, 0}}) {
    ProgramBuilder b;
    FashionMnistConfig config;
    config.hidden = hidden;
    EXPECT_THAT(BuildFashionMnistModel(config, &adam, &b),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("need one or more hidden sizes >= 1")));
  }
  ProgramBuilder b;
  FashionMnistConfig config;
  config.seed = 0;
  EXPECT_THAT(BuildFashionMnistModel(config, &adam, &b),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("seed 0")));
}

}  // namespace
}  // namespace tandem
