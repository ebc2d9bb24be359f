// The optimizer offload planner's promises over seeded random training
// programs (random_program.h) on sim:0, against the run without it: a plan
// it accepts under a budget has an estimated device peak within that
// budget; every run it places (under a budget half way between the
// all-device and the all-host peaks, and with every parameter on the host)
// is bit for bit the reference run, wherever the values live at the end;
// and a budget below the all-host peak is ResourceExhausted naming the
// smallest that fits. TANDEM_OFFLOAD_PROGRAMS / _SEED for longer runs.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "framework/autoplace/optimizer_offload.h"
#include "framework/base/status_macros.h"
#include "gtest/gtest.h"
#include "tests/runtime/random_program.h"

namespace tandem {
namespace differential {
namespace {

// The estimated peak of the program's device under `planner` (the pipelined
// one: the runs below overlap), or the Prepare error.
absl::StatusOr<int64_t> PlannedPeak(const GeneratedProgram& p,
                                    std::shared_ptr<PlacementPlanner> planner) {
  ExecutorOptions options;
  options.placement_planner = std::move(planner);
  Executor exe(p.default_place, options);
  Scope scope;
  RETURN_IF_ERROR(exe.Run(p.builder->startup_program(), &scope).status());
  ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan,
                   exe.Prepare(p.builder->main_program(), scope, p.feed_names, p.fetches));
  const PlaceMemory* m = plan->MemoryEstimate().Find(p.default_place);
  return m == nullptr ? 0 : m->pipelined_peak_bytes;
}

TEST(OffloadDifferential, BudgetsHoldAndRunsAreExactOnRandomPrograms) {
  const int programs = static_cast<int>(EnvInt("TANDEM_OFFLOAD_PROGRAMS", 120));
  const int first_seed = static_cast<int>(EnvInt("TANDEM_OFFLOAD_SEED", 1));
  constexpr int kSteps = 3;
  RandomProgramOptions options;
  options.default_places = {"sim:0"};
  int partial = 0, refused = 0;
  for (int seed = first_seed; seed < first_seed + programs; ++seed) {
    GeneratedProgram p;
    ASSERT_TRUE(BuildRandomTrainingProgram(seed, options, &p).ok()) << seed;
    SCOPED_TRACE(ProgramSummary(p));
    std::string error;
    const Trajectory reference = RunTrajectory(p, ExecMode::kInOrder, kSteps, &error);
    ASSERT_EQ(error, "");
    absl::StatusOr<int64_t> none = PlannedPeak(p, MakeOffloadPlanner({.fraction = 0.0}));
    absl::StatusOr<int64_t> all = PlannedPeak(p, MakeOffloadPlanner({.fraction = 1.0}));
    ASSERT_TRUE(none.ok() && all.ok()) << none.status() << " / " << all.status();

    const Trajectory offloaded = RunTrajectory(p, ExecMode::kPipelined2, kSteps, &error,
                                               MakeOffloadPlanner({.fraction = 1.0}));
    ASSERT_EQ(error, "");
    EXPECT_EQ(CompareTrajectories(reference, offloaded, /*compare_places=*/false), "");
    if (*all >= *none) continue;  // nothing the planner could move saves memory

    const int64_t budget = (*all + *none) / 2;
    absl::StatusOr<int64_t> planned = PlannedPeak(p, MakeOffloadPlanner({.budget_bytes = budget}));
    ASSERT_TRUE(planned.ok()) << planned.status();
    EXPECT_LE(*planned, budget);
    const Trajectory half = RunTrajectory(p, ExecMode::kPipelined2, kSteps, &error,
                                          MakeOffloadPlanner({.budget_bytes = budget}));
    ASSERT_EQ(error, "");
    EXPECT_EQ(CompareTrajectories(reference, half, /*compare_places=*/false), "");
    ++partial;

    absl::StatusOr<int64_t> too_small =
        PlannedPeak(p, MakeOffloadPlanner({.budget_bytes = *all - 1}));
    EXPECT_EQ(too_small.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_TRUE(
        absl::StrContains(too_small.status().message(),
                          absl::StrCat("the smallest budget that would fit (memory_budget_mb=",
                                       (*all + (1 << 20) - 1) >> 20, ")")))
        << too_small.status();
    ++refused;
  }
  std::printf("%d of %d programs with a partial offload under half-way budgets\n", partial,
              programs);
  // The generator gives the planner something to move in most programs.
  EXPECT_GE(partial, programs / 4) << "programs with a partial offload";
  EXPECT_EQ(refused, partial);
}

}  // namespace
}  // namespace differential
}  // namespace tandem
