#include "models/gpt/gpt_model.h"

#include <vector>

#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;

TEST(GptModel, PresetsAndParameterCount) {
  ASSERT_OK_AND_ASSIGN(GptConfig gpt2, GptConfig::Preset("gpt2"));
  EXPECT_EQ(gpt2.layers, 12);
  EXPECT_EQ(gpt2.width, 768);
  EXPECT_EQ(gpt2.seq, 512);
  // 12 blocks of 12 d^2 + 13 d, the embeddings and the head: about 85.6 M over bytes.
  EXPECT_EQ(gpt2.NumParameters(),
            256 * 768 + 512 * 768 + 12 * (12 * 768 * 768 + 13 * 768) + 2 * 768 + 768 * 256);
  EXPECT_THAT(GptConfig::Preset("huge").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown size 'huge' (tiny, small or gpt2)")));

  ASSERT_OK_AND_ASSIGN(GptConfig tiny, GptConfig::Preset("tiny"));
  ProgramBuilder b;
  Adam adam(1e-3);
  ASSERT_OK_AND_ASSIGN(GptModel m, BuildGptModel(tiny, &adam, &b));
  int64_t parameters = 0;
  for (const VarDesc& var : b.main_program().block().vars()) {
    if (var.is_parameter) parameters += var.shape.num_elements();
  }
  EXPECT_EQ(parameters, tiny.NumParameters());
  EXPECT_EQ(b.main_program().block().FindVar(m.loss.name)->shape, Shape({1}));
}

TEST(GptModel, RejectsBadConfigs) {
  GptConfig c;
  c.width = 66;  // not a multiple of 4 heads
  ProgramBuilder b;
  Adam adam(1e-3);
  EXPECT_THAT(BuildGptModel(c, &adam, &b).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("width a multiple of heads, and seed >= 1; got vocab 256, seq "
                                 "64, layers 2, width 66, heads 4")));
  c = GptConfig();
  c.amp = DataType::kFloat64;
  EXPECT_THAT(BuildGptModel(c, &adam, &b).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("amp must be bfloat16 or float16, got float64")));
}

// With recomputation, per block the two layer norms, their 16-bit casts and
// the gelu run again (and the final layer norm and its cast): their outputs
// and the norms' statistics are no longer kept for the backward.
TEST(GptModel, RecomputesTheLayerNormsAndGelus) {
  for (const int64_t layers : {1, 3}) {
    GptConfig c;
    c.layers = layers;
    c.amp = DataType::kBFloat16;
    c.recompute = RecomputeOptions{};
    ProgramBuilder b;
    Adam adam(1e-3);
    ASSERT_OK_AND_ASSIGN(GptModel m, BuildGptModel(c, &adam, &b));
    EXPECT_EQ(m.recompute.ops, 5 * layers + 2);
    EXPECT_EQ(static_cast<int64_t>(m.recompute.values.size()), 7 * layers + 3);
    int gelus = 0;
    for (const std::string& v : m.recompute.values) gelus += v.find("(gelu #") != std::string::npos;
    EXPECT_EQ(gelus, layers);
    int copies = 0;
    for (const OpDesc& op : b.main_program().block().ops()) {
      copies += op.origin.kind == OpOrigin::Kind::kRecomputeOf;
    }
    EXPECT_EQ(copies, m.recompute.ops);
  }
  GptConfig plain;
  ProgramBuilder b;
  Adam adam(1e-3);
  ASSERT_OK_AND_ASSIGN(GptModel m, BuildGptModel(plain, &adam, &b));
  EXPECT_EQ(m.recompute.ops, 0);
}

}  // namespace
}  // namespace tandem
