// The GPT model (models/gpt) trains: a periodic text becomes predictable,
// in float32 and with bfloat16 AMP.
#include <cmath>
#include <optional>
#include <vector>

#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"
#include "models/gpt/gpt_model.h"

namespace tandem {
namespace {

// A periodic text: after a few steps the next byte is predictable from the
// byte before, so the loss falls far below log(vocab).
std::vector<double> TrainPeriodic(std::optional<DataType> amp) {
  GptConfig c;
  c.vocab = 16, c.seq = 8, c.layers = 1, c.width = 16, c.heads = 2;
  c.amp = amp;
  ProgramBuilder b;
  Adam adam(1e-2);
  absl::StatusOr<GptModel> m = BuildGptModel(c, &adam, &b);
  EXPECT_OK(m.status());
  std::vector<double> losses;
  if (!m.ok()) return losses;
  Executor exe(CPUPlace());
  Scope scope;
  EXPECT_OK(exe.Run(b.startup_program(), &scope).status());
  auto plan = exe.Prepare(b.main_program(), scope, {"tokens", "targets"}, {m->loss.name});
  EXPECT_OK(plan.status());
  if (!plan.ok()) return losses;
  constexpr int64_t kBatch = 4, kPeriod = 5;
  for (int step = 0; step < 60; ++step) {
    std::vector<double> tokens, targets;
    for (int64_t r = 0; r < kBatch; ++r) {
      for (int64_t t = 0; t < c.seq; ++t) {
        tokens.push_back((r + step + t) % kPeriod * 3);
        targets.push_back((r + step + t + 1) % kPeriod * 3);
      }
    }
    auto out =
        exe.Run(plan->get(), &scope,
                {{"tokens", MakeTensor(DataType::kInt64, Shape({kBatch, c.seq}), tokens)},
                 {"targets", MakeTensor(DataType::kInt64, Shape({kBatch, c.seq, 1}), targets)}});
    EXPECT_OK(out.status());
    if (!out.ok()) break;
    losses.push_back(ToDoubles((*out)[0])[0]);
  }
  return losses;
}

TEST(GptModel, LearnsAPeriodicTextInFloat32AndBfloat16) {
  for (std::optional<DataType> amp :
       {std::optional<DataType>(), std::optional(DataType::kBFloat16)}) {
    const std::vector<double> losses = TrainPeriodic(amp);
    ASSERT_EQ(losses.size(), 60u);
    EXPECT_NEAR(losses.front(), std::log(16.0), 0.3);
    EXPECT_LT(losses.back(), 0.2) << (amp.has_value() ? "bfloat16" : "float32");
  }
}

}  // namespace
}  // namespace tandem
