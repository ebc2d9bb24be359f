// Activation recomputation's promise over seeded random training programs
// (random_program.h) on cpu, sim:0 and sim:1: with every deterministic op
// the generator draws allowed to run again in the backward, each run is bit
// for bit the reference run of the unrewritten program, in order,
// concurrent and pipelined (recomputed ops wait for their place in the
// backward: plan_passes.cc, HoldRecomputes). TANDEM_RECOMPUTE_PROGRAMS /
// _SEED for longer runs.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "framework/backward/recompute.h"
#include "gtest/gtest.h"
#include "tests/runtime/random_program.h"

namespace tandem {
namespace differential {
namespace {

// Every op the generator draws that computes the same values from the same
// inputs (not fill_constant, which the executor folds; no random op).
RecomputeOptions EveryDeterministicOp() {
  RecomputeOptions options;
  options.ops = {"elementwise_add",
                 "elementwise_sub",
                 "elementwise_mul",
                 "scale",
                 "relu",
                 "sigmoid",
                 "tanh",
                 "gelu",
                 "softmax",
                 "matmul",
                 "mul",
                 "fc",
                 "reduce_sum",
                 "reduce_mean",
                 "slice",
                 "split",
                 "concat",
                 "reshape",
                 "transpose",
                 "lookup_table",
                 "cast",
                 "layer_norm"};
  options.parameter_casts = true;
  return options;
}

TEST(RecomputeDifferential, RunsAreExactOnRandomPrograms) {
  const int programs = static_cast<int>(EnvInt("TANDEM_RECOMPUTE_PROGRAMS", 150));
  const int first_seed = static_cast<int>(EnvInt("TANDEM_RECOMPUTE_SEED", 1));
  constexpr int kSteps = 3;
  int rewritten = 0, ops_added = 0;
  for (int seed = first_seed; seed < first_seed + programs; ++seed) {
    GeneratedProgram p;
    ASSERT_TRUE(BuildRandomTrainingProgram(seed, RandomProgramOptions(), &p).ok()) << seed;
    SCOPED_TRACE(ProgramSummary(p));
    std::string error;
    const Trajectory reference = RunTrajectory(p, ExecMode::kInOrder, kSteps, &error);
    ASSERT_EQ(error, "");
    // Weights' casts are recomputed unless the updates write the 16-bit
    // working copies (then nothing casts them in the forward).
    RecomputeOptions options = EveryDeterministicOp();
    options.parameter_casts = !p.amp_working_copies;
    absl::StatusOr<RecomputeReport> report = ApplyRecompute(options, &p.builder->main_program());
    ASSERT_TRUE(report.ok()) << report.status();
    if (report->ops == 0) continue;
    ++rewritten;
    ops_added += report->ops;
    for (ExecMode mode : {ExecMode::kInOrder, ExecMode::kConcurrent2, ExecMode::kPipelined2,
                          ExecMode::kPipelinedDelayed}) {
      SCOPED_TRACE(ExecModeName(mode));
      const Trajectory got = RunTrajectory(p, mode, kSteps, &error);
      ASSERT_EQ(error, "");
      EXPECT_EQ(CompareTrajectories(reference, got), "");
    }
  }
  std::printf("%d of %d programs rewritten, %d ops recomputed\n", rewritten, programs, ops_added);
  EXPECT_GE(rewritten, programs / 2) << "programs with something to recompute";
}

}  // namespace
}  // namespace differential
}  // namespace tandem
