// The GPT model (models/gpt) trains: a periodic text becomes predictable,
// in float32 and with bfloat16 AMP.
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "framework/autoplace/optimizer_offload.h"
#include "framework/device/device_registry.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"
#include "models/gpt/gpt_model.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A periodic text: after a few steps the next byte is predictable from the
// byte before, so the loss falls far below log(vocab).
struct PeriodicRun {
  std::vector<double> losses;
  std::string table;          // the training plan's placement table
  RunStats stats;             // of the last step
  int64_t device_peak = 0;    // the plan's estimated peak on the device (pipelined)
  int64_t measured_peak = 0;  // the device allocator's peak over the training runs
};

// Update ops on the host and on the device, from a placement table.
std::pair<int, int> UpdatesOnHostAndDevice(const std::string& table) {
  int host = 0, device = 0;
  for (absl::string_view line : absl::StrSplit(table, '\n')) {
    if (!absl::StrContains(line, " adam ")) continue;
    (absl::StrContains(line, " cpu ") ? host : device)++;
  }
  return {host, device};
}

PeriodicRun TrainPeriodic(std::optional<DataType> amp, const Place& place = CPUPlace(),
                          bool offload = false, int steps = 60,
                          std::shared_ptr<PlacementPlanner> planner = nullptr,
                          std::optional<RecomputeOptions> recompute = std::nullopt,
                          int64_t layers = 1) {
  GptConfig c;
  c.vocab = 16, c.seq = 8, c.layers = layers, c.width = 16, c.heads = 2;
  c.amp = amp;
  c.offload_optimizer = offload;
  c.recompute = std::move(recompute);
  ProgramBuilder b;
  Adam adam(1e-2);
  absl::StatusOr<GptModel> m = BuildGptModel(c, &adam, &b);
  EXPECT_OK(m.status());
  PeriodicRun run;
  if (!m.ok()) return run;
  ExecutorOptions options;
  options.placement_planner = std::move(planner);
  Executor exe(place, options);
  Scope scope;
  EXPECT_OK(exe.Run(b.startup_program(), &scope).status());
  auto plan = exe.Prepare(b.main_program(), scope, {"tokens", "targets"}, {m->loss.name});
  EXPECT_OK(plan.status());
  if (!plan.ok()) return run;
  run.table = (*plan)->PlacementTable();
  if (const PlaceMemory* p = (*plan)->MemoryEstimate().Find(place)) {
    run.device_peak = p->pipelined_peak_bytes;
  }
  constexpr int64_t kBatch = 4, kPeriod = 5;
  Allocator* allocator = (*DeviceRegistry::Global().GetDevice(place))->allocator();
  allocator->ResetPeak();
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
  run.measured_peak = allocator->GetStats().peak_bytes_in_use;
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
  // The fc weights' 16-bit working copies: written by their updates on the
  // host (no cast in the step), copied up for the forward.
  EXPECT_THAT(offload.table, Not(HasSubstr("cast-at-source to bfloat16 where '")));
  EXPECT_THAT(offload.table,
              HasSubstr("variable 'block0.attn.qkv.w_0.cast_bfloat16' is on cpu; op 'fc'"));
  // Every update on the host: the weights cast there, the embeddings and
  // layer norms (read in float32 on the device) because they live there.
  EXPECT_EQ(UpdatesOnHostAndDevice(offload.table), std::make_pair(17, 0));
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

// The offload planner (framework/autoplace/optimizer_offload.h) on sim:0:
// with every parameter on the host it places what parameters_on("cpu")
// gives; under a budget between the all-device and the all-host peaks it
// offloads a prefix of the parameters, last read first, the plan's estimate
// fits the budget, and the losses stay bit for bit the all-device run's.
TEST(GptModel, OffloadPlannerFitsABudgetWithAPartialOffloadAndTrainsTheSame) {
  const Place sim = *ParsePlace("sim:0");
  const PeriodicRun device = TrainPeriodic(DataType::kBFloat16, sim, false, 20);
  const PeriodicRun all =
      TrainPeriodic(DataType::kBFloat16, sim, true, 20, MakeOffloadPlanner({.fraction = 1.0}));
  EXPECT_EQ(all.losses, device.losses);
  EXPECT_EQ(UpdatesOnHostAndDevice(all.table), std::make_pair(17, 0));
  EXPECT_THAT(all.table, HasSubstr("optimizer offload on sim:0: fraction 1.00; 17 of 17 parameters "
                                   "on the host"));
  const PeriodicRun none =
      TrainPeriodic(DataType::kBFloat16, sim, true, 20, MakeOffloadPlanner({.fraction = 0.0}));
  EXPECT_EQ(none.losses, device.losses);
  EXPECT_EQ(UpdatesOnHostAndDevice(none.table), std::make_pair(0, 17));
  ASSERT_LT(all.device_peak, none.device_peak);

  // A budget half way: some parameters go, the last read (the head) first.
  const int64_t budget = (all.device_peak + none.device_peak) / 2;
  const PeriodicRun part = TrainPeriodic(DataType::kBFloat16, sim, true, 20,
                                         MakeOffloadPlanner({.budget_bytes = budget}));
  EXPECT_EQ(part.losses, device.losses);
  EXPECT_LE(part.device_peak, budget);
  const auto [host, on_device] = UpdatesOnHostAndDevice(part.table);
  EXPECT_GT(host, 0);
  EXPECT_GT(on_device, 0);
  EXPECT_EQ(host + on_device, 17);
  EXPECT_THAT(part.table,
              HasSubstr("where 'lm_head.w_0' lives; offloaded (1 of 17 last read first"));
  EXPECT_THAT(part.table, HasSubstr("where 'wte' is read"));  // read first: kept
  EXPECT_THAT(part.table, HasSubstr(absl::StrCat(host, " of 17 parameters on the host")));

  // Room to spare: nothing moves; the parameters go up to the device.
  const PeriodicRun roomy =
      TrainPeriodic(DataType::kBFloat16, sim, true, 20,
                    MakeOffloadPlanner({.budget_bytes = 2 * none.device_peak}));
  EXPECT_EQ(UpdatesOnHostAndDevice(roomy.table), std::make_pair(0, 17));
  EXPECT_EQ(roomy.losses, device.losses);
}

// Activation recomputation: the layer norms' and gelus' outputs made again
// in the backward give bit for bit the same losses, all on the device and
// with the optimizer offloaded, and the device holds less: estimated and
// measured by sim:0's allocator.
TEST(GptModel, RecomputeTrainsTheSameWithLessDeviceMemory) {
  const Place sim = *ParsePlace("sim:0");
  RecomputeOptions weights;
  weights.parameter_casts = true;
  for (const bool offload : {false, true}) {
    SCOPED_TRACE(offload ? "optimizer offload" : "all on the device");
    const PeriodicRun kept =
        TrainPeriodic(DataType::kBFloat16, sim, offload, 12, nullptr, std::nullopt, /*layers=*/4);
    const PeriodicRun again =
        TrainPeriodic(DataType::kBFloat16, sim, offload, 12, nullptr, RecomputeOptions{}, 4);
    ASSERT_EQ(again.losses.size(), 12u);
    EXPECT_EQ(again.losses, kept.losses);
    EXPECT_LT(again.device_peak, kept.device_peak);
    EXPECT_LT(again.measured_peak, kept.measured_peak);
    EXPECT_THAT(again.table, HasSubstr("recomputes 'gelu'"));
    EXPECT_THAT(again.table, HasSubstr("recomputes 'layer_norm'"));
    // The 16-bit weight copies too: made again (on the host when offloaded,
    // then sent up again), less still on the device, the same losses.
    const PeriodicRun most =
        TrainPeriodic(DataType::kBFloat16, sim, offload, 12, nullptr, weights, 4);
    EXPECT_EQ(most.losses, kept.losses);
    EXPECT_LT(most.measured_peak, again.measured_peak);
    EXPECT_THAT(most.table, HasSubstr("recomputes 'cast'"));
  }
}

// The planner's refusals: a budget even a full offload cannot meet names
// the smallest budget that fits; a fraction outside [0, 1].
TEST(GptModel, OffloadPlannerRefusesWhatCannotFit) {
  GptConfig c;
  c.vocab = 16, c.seq = 8, c.layers = 1, c.width = 16, c.heads = 2;
  c.amp = DataType::kBFloat16;
  c.offload_optimizer = true;
  ProgramBuilder b;
  Adam adam(1e-2);
  ASSERT_OK_AND_ASSIGN(GptModel m, BuildGptModel(c, &adam, &b));
  const Place sim = *ParsePlace("sim:0");
  const std::map<std::string, Shape> shapes = {{"tokens", Shape({4, 8})},
                                               {"targets", Shape({4, 8, 1})}};
  for (const auto& [options, message] : std::vector<std::pair<OffloadOptions, std::string>>{
           {{.budget_bytes = 1000},
            "optimizer offload: the plan does not fit the memory budget of sim:0, 1000 bytes"},
           {{.fraction = 1.5},
            "optimizer offload: the offloaded fraction must be in [0, 1], got 1.5"},
           {{.budget_bytes = -1}, "optimizer offload: memory budget -1 bytes is negative"}}) {
    Scope scope;
    ASSERT_OK(Executor(sim).Run(b.startup_program(), &scope).status());
    ExecutorOptions eo;
    eo.feed_shapes = shapes;
    eo.placement_planner = MakeOffloadPlanner(options);
    Executor exe(sim, eo);
    absl::Status s =
        exe.Prepare(b.main_program(), scope, {"tokens", "targets"}, {m.loss.name}).status();
    EXPECT_THAT(s, StatusIs(options.fraction.has_value() || options.budget_bytes < 0
                                ? absl::StatusCode::kInvalidArgument
                                : absl::StatusCode::kResourceExhausted,
                            HasSubstr(message)));
    if (options.budget_bytes == 1000) {
      EXPECT_THAT(s.message(),
                  HasSubstr("with all 17 parameters and their optimizer state in host memory "
                            "it still needs an estimated "));
      EXPECT_THAT(s.message(),
                  HasSubstr("the smallest budget that would fit (memory_budget_mb=1)"));
    }
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
