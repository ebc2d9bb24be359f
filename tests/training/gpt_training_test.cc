// The GPT model (models/gpt) trains: a periodic text becomes predictable,
// in float32 and with bfloat16 AMP.
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"
#include "models/gpt/gpt_model.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;

// A periodic text: after a few steps the next byte is predictable from the
// byte before, so the loss falls far below log(vocab).
struct PeriodicRun {
  std::vector<double> losses;
  std::string table;  // the training plan's placement table
  RunStats stats;     // of the last step
};

PeriodicRun TrainPeriodic(std::optional<DataType> amp, const Place& place = CPUPlace(),
                          bool offload = false, int steps = 60) {
  GptConfig c;
  c.vocab = 16, c.seq = 8, c.layers = 1, c.width = 16, c.heads = 2;
  c.amp = amp;
  c.offload_optimizer = offload;
  ProgramBuilder b;
  Adam adam(1e-2);
  absl::StatusOr<GptModel> m = BuildGptModel(c, &adam, &b);
  EXPECT_OK(m.status());
  PeriodicRun run;
  if (!m.ok()) return run;
  Executor exe(place);
  Scope scope;
  EXPECT_OK(exe.Run(b.startup_program(), &scope).status());
  auto plan = exe.Prepare(b.main_program(), scope, {"tokens", "targets"}, {m->loss.name});
  EXPECT_OK(plan.status());
  if (!plan.ok()) return run;
  run.table = (*plan)->PlacementTable();
  constexpr int64_t kBatch = 4, kPeriod = 5;
  for (int step = 0; step < steps; ++step) {
    std::vector<double> tokens, targets;
    for (int64_t r = 0; r < kBatch; ++r) {
      for (int64_t t = 0; t < c.seq; ++t) {
        tokens.push_back((r + step + t) % kPeriod * 3);
        targets.push_back((r + step + t + 1) % kPeriod * 3);
      }
    }
    run.stats = RunStats();
    auto out =
        exe.Run(plan->get(), &scope,
                {{"tokens", MakeTensor(DataType::kInt64, Shape({kBatch, c.seq}), tokens)},
                 {"targets", MakeTensor(DataType::kInt64, Shape({kBatch, c.seq, 1}), targets)}},
                &run.stats);
    EXPECT_OK(out.status());
    if (!out.ok()) break;
    run.losses.push_back(ToDoubles((*out)[0])[0]);
  }
  return run;
}

TEST(GptModel, LearnsAPeriodicTextInFloat32AndBfloat16) {
  for (std::optional<DataType> amp :
       {std::optional<DataType>(), std::optional(DataType::kBFloat16)}) {
    const std::vector<double> losses = TrainPeriodic(amp).losses;
    ASSERT_EQ(losses.size(), 60u);
    EXPECT_NEAR(losses.front(), std::log(16.0), 0.3);
    EXPECT_LT(losses.back(), 0.2) << (amp.has_value() ? "bfloat16" : "float32");
  }
}

// Optimizer offload on sim:0: the float32 weights and Adam's moments stay on
// the host, the fc weights cross as bfloat16 casts made on the host, their
// updates run there, and training is exact: bit for bit the losses of the
// run that keeps everything on the device.
TEST(GptModel, OptimizerOffloadKeepsMasterWeightsOnTheHostAndTrainsTheSame) {
  const Place sim = *ParsePlace("sim:0");
  const PeriodicRun device = TrainPeriodic(DataType::kBFloat16, sim, false, 30);
  const PeriodicRun offload = TrainPeriodic(DataType::kBFloat16, sim, true, 30);
  ASSERT_EQ(offload.losses.size(), 30u);
  EXPECT_EQ(offload.losses, device.losses);
  // The fc weights' casts and updates on the host, with the cast rule's reason.
  EXPECT_THAT(offload.table, HasSubstr("to bfloat16 where 'block0.attn.qkv.w_0' lives"));
  int adam_on_cpu = 0, adam_on_sim = 0;
  for (absl::string_view line : absl::StrSplit(offload.table, '\n')) {
    if (!absl::StrContains(line, " adam ")) continue;
    (absl::StrContains(line, " cpu ") ? adam_on_cpu : adam_on_sim)++;
  }
  // Every update on the host: the weights cast there, the embeddings and
  // layer norms (read in float32 on the device) because they live there.
  EXPECT_EQ(adam_on_cpu, 17);
  EXPECT_EQ(adam_on_sim, 0);
  // Up: the 16-bit weight ([16, 48] bfloat16); down: its 16-bit gradient.
  std::map<std::string, int64_t> up, down;
  for (const CopyRecord& c : offload.stats.ledger) (c.to.is_host() ? down : up)[c.var] += c.bytes;
  EXPECT_EQ(up["block0.attn.qkv.w_0.cast_bfloat16"], 16 * 48 * 2);
  EXPECT_EQ(down["block0.attn.qkv.w_0.cast_bfloat16@GRAD"], 16 * 48 * 2);
  EXPECT_EQ(up.count("block0.attn.qkv.w_0"), 0u);  // the float32 master stays
  for (const CopyRecord& c : device.stats.ledger) {
    EXPECT_TRUE(c.var == "tokens" || c.var == "targets") << c.var;  // the feeds only
  }
}

TEST(GptModel, OptimizerOffloadNeedsAmp) {
  GptConfig c;
  c.offload_optimizer = true;
  ProgramBuilder b;
  Adam adam(1e-3);
  EXPECT_THAT(
      BuildGptModel(c, &adam, &b).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("optimizer offload needs amp")));
}

}  // namespace
}  // namespace tandem
