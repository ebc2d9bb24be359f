// FuseL2NormalizeSquareErrorMean (framework/fusion/fuse_patterns.h) on the
// embedding workload's program: the forward and backward chains become one
// op each, training gives the unfused numbers within float32 rounding, and
// a chain whose intermediates are kept, guarded apart or without kernels
// stays as it is.
#include <cmath>
#include <string>
#include <vector>

#include "framework/base/status_macros.h"
#include "framework/fusion/fuse_patterns.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/embedding/embedding_model.h"

namespace tandem {
namespace {

std::vector<std::string> OpTypes(const Program& p) {
  std::vector<std::string> types;
  for (const OpDesc& op : p.block().ops()) types.push_back(op.type);
  return types;
}

int Count(const std::vector<std::string>& types, const std::string& type) {
  int n = 0;
  for (const std::string& t : types) n += t == type;
  return n;
}

Tensor Int64s(const std::vector<int64_t>& v) {
  return Tensor::FromVector<int64_t>(Shape({static_cast<int64_t>(v.size())}), v);
}

struct Trained {
  std::vector<double> losses;
  std::vector<double> table;
};

// `steps` SGD steps of the embedding model (dense or sparse table) on cpu,
// fused or not; the losses and the table after.
Trained Train(bool fuse, bool sparse, int steps) {
  ProgramBuilder b;
  EmbeddingConfig config;
  config.rows = 40;
  config.dim = 6;
  config.batch = 8;
  config.is_sparse = sparse;
  config.learning_rate = 0.5;
  absl::StatusOr<EmbeddingModel> m = BuildEmbeddingModel(config, &b);
  EXPECT_OK(m.status());
  Trained t;
  if (!m.ok()) return t;
  if (fuse) {
    absl::StatusOr<int> fused =
        FuseL2NormalizeSquareErrorMean({.keep = {m->loss.name}}, &b.main_program());
    EXPECT_OK(fused.status());
    EXPECT_EQ(fused.value_or(-1), 1);
  }
  Executor exe(CPUPlace());
  Scope scope;
  EXPECT_OK(exe.Run(b.startup_program(), &scope).status());
  for (int step = 0; step < steps; ++step) {
    std::vector<int64_t> ids(8);
    for (int k = 0; k < 8; ++k) ids[k] = (7 * step + 3 * k) % 40;  // repeats across steps
    absl::StatusOr<std::vector<Tensor>> out =
        exe.Run(b.main_program(), &scope, FeedMap{{m->ids.name, Int64s(ids)}}, {m->loss.name});
    EXPECT_OK(out.status());
    if (!out.ok()) return t;
    t.losses.push_back(ToDoubles((*out)[0])[0]);
  }
  t.table = ToDoubles(scope.Find("emb_w")->tensor());
  return t;
}

TEST(Fusion, TheEmbeddingLossBecomesOneOpEachWayAndTrainsTheSame) {
  for (const bool sparse : {false, true}) {
    SCOPED_TRACE(sparse ? "sparse table" : "dense table");
    ProgramBuilder b;
    EmbeddingConfig config;
    config.rows = 40;
    config.dim = 6;
    config.batch = 8;
    config.is_sparse = sparse;
    ASSERT_OK_AND_ASSIGN(EmbeddingModel m, BuildEmbeddingModel(config, &b));
    const std::vector<std::string> before = OpTypes(b.main_program());
    ASSERT_OK_AND_ASSIGN(int fused, FuseL2NormalizeSquareErrorMean({}, &b.main_program()));
    EXPECT_EQ(fused, 1);
    const std::vector<std::string> after = OpTypes(b.main_program());
    EXPECT_EQ(after.size(), before.size() - 4);
    for (const char* gone : {"l2_normalize", "square_error_cost", "mean", "mean_grad",
                             "square_error_cost_grad", "l2_normalize_grad"}) {
      EXPECT_EQ(Count(before, gone), 1) << gone;
      EXPECT_EQ(Count(after, gone), 0) << gone;
    }
    EXPECT_EQ(Count(after, "l2_normalize_square_error_mean"), 1);
    EXPECT_EQ(Count(after, "l2_normalize_square_error_mean_grad"), 1);

    const Trained plain = Train(/*fuse=*/false, sparse, 5);
    const Trained fast = Train(/*fuse=*/true, sparse, 5);
    ASSERT_EQ(plain.losses.size(), 5u);
    ASSERT_EQ(fast.losses.size(), 5u);
    for (int s = 0; s < 5; ++s) {
      EXPECT_NEAR(fast.losses[s], plain.losses[s], 1e-6 * std::abs(plain.losses[s])) << s;
    }
    EXPECT_GT(plain.losses[0], plain.losses[4]);  // it trains
    ASSERT_EQ(fast.table.size(), plain.table.size());
    for (size_t i = 0; i < plain.table.size(); ++i) {
      EXPECT_NEAR(fast.table[i], plain.table[i], 1e-6) << i;
    }
  }
}

// ExecutorOptions::fuse_patterns fuses at Prepare, on a copy: the plan
// holds the fused ops, the program the user built does not change, and a
// fetched intermediate keeps its chain.
TEST(Fusion, TheExecutorFusesAtPrepareWhenAsked) {
  ProgramBuilder b;
  EmbeddingConfig config;
  config.rows = 40;
  config.dim = 6;
  config.batch = 8;
  ASSERT_OK_AND_ASSIGN(EmbeddingModel m, BuildEmbeddingModel(config, &b));
  const size_t ops = b.main_program().block().ops().size();
  ExecutorOptions options;
  options.fuse_patterns = true;
  Executor exe(CPUPlace(), options);
  Scope scope;
  ASSERT_OK(exe.Run(b.startup_program(), &scope).status());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Plan> plan,
                       exe.Prepare(b.main_program(), scope, {m.ids.name}, {m.loss.name}));
  EXPECT_EQ(b.main_program().block().ops().size(), ops);
  EXPECT_EQ(Count(OpTypes(plan->placed().program), "l2_normalize_square_error_mean"), 1);
  EXPECT_EQ(Count(OpTypes(plan->placed().program), "l2_normalize_square_error_mean_grad"), 1);
  EXPECT_THAT(plan->PlacementTable(),
              ::testing::HasSubstr("fused at Prepare (fuse_patterns): 1 l2_normalize -> "
                                   "square_error_cost -> mean chain into "
                                   "l2_normalize_square_error_mean (with its gradient ops)\n"));
  ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> out,
      exe.Run(plan.get(), &scope, {{m.ids.name, Int64s({1, 2, 3, 4, 5, 6, 7, 8})}}));
  EXPECT_EQ(out.size(), 1u);
  // The normalised rows fetched: the chain stays.
  std::string rows;
  for (const OpDesc& op : b.main_program().block().ops()) {
    if (op.type == "l2_normalize") rows = op.Output("Out");
  }
  ASSERT_FALSE(rows.empty());
  ASSERT_OK_AND_ASSIGN(plan, exe.Prepare(b.main_program(), scope, {m.ids.name}, {rows}));
  EXPECT_EQ(Count(OpTypes(plan->placed().program), "l2_normalize_square_error_mean"), 0);
  EXPECT_EQ(Count(OpTypes(plan->placed().program), "l2_normalize"), 1);
  EXPECT_THAT(plan->PlacementTable(),
              ::testing::HasSubstr("fused at Prepare (fuse_patterns): nothing (no chain"));
  // Without fuse_patterns the table says nothing of fusion.
  Executor plain(CPUPlace());
  ASSERT_OK_AND_ASSIGN(plan, plain.Prepare(b.main_program(), scope, {m.ids.name}, {m.loss.name}));
  EXPECT_THAT(plan->PlacementTable(), ::testing::Not(::testing::HasSubstr("fused at Prepare")));
}

TEST(Fusion, KeptIntermediatesOtherGuardsAndMissingKernelsLeaveTheChain) {
  auto build = [](ProgramBuilder* b, bool guard_mean) -> absl::StatusOr<std::string> {
    Var x = b->Data("x", DataType::kFloat32, Shape({4, 3}));
    Var label = b->FillConstant({4, 3}, DataType::kFloat32, 0.5);
    Var y = b->L2Normalize(x, -1);
    Var cost = b->SquareErrorCost(y, label);
    auto guard = b->device_guard(guard_mean ? "cpu" : "");
    Var loss = b->Mean(cost);
    RETURN_IF_ERROR(b->status());
    return y.name;
  };
  {
    ProgramBuilder b;
    ASSERT_OK_AND_ASSIGN(std::string y, build(&b, false));
    ASSERT_OK_AND_ASSIGN(int fused,
                         FuseL2NormalizeSquareErrorMean({.keep = {y}}, &b.main_program()));
    EXPECT_EQ(fused, 0);  // the normalised rows are fetched
    ASSERT_OK_AND_ASSIGN(fused, FuseL2NormalizeSquareErrorMean({}, &b.main_program()));
    EXPECT_EQ(fused, 1);  // forward only: there is no backward
    EXPECT_EQ(OpTypes(b.main_program()),
              (std::vector<std::string>{"fill_constant", "l2_normalize_square_error_mean"}));
  }
  {
    ProgramBuilder b;
    ASSERT_OK(build(&b, /*guard_mean=*/true).status());
    ASSERT_OK_AND_ASSIGN(int fused, FuseL2NormalizeSquareErrorMean({}, &b.main_program()));
    EXPECT_EQ(fused, 0);  // mean under device_guard("cpu"), the rest not
  }
  {
    ProgramBuilder b;
    ASSERT_OK(build(&b, false).status());
    std::vector<std::string> asked;
    ASSERT_OK_AND_ASSIGN(int fused, FuseL2NormalizeSquareErrorMean({.has_kernels =
                                                                        [&](const std::string& d) {
                                                                          asked.push_back(d);
                                                                          return false;
                                                                        }},
                                                                   &b.main_program()));
    EXPECT_EQ(fused, 0);
    EXPECT_EQ(asked, std::vector<std::string>{""});
    EXPECT_EQ(Count(OpTypes(b.main_program()), "l2_normalize"), 1);
  }
}

}  // namespace
}  // namespace tandem
