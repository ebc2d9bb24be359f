// Workload 1 (embedding offload) all on the gpu, end to end (skipped without a GPU): sparse and
// dense training agree with the cpu over several steps (the kernels' check
// slots and staging buffers reused from step to step) copying only the fed
// ids, and a bad id fails its run with lookup_table's error while the next
// run goes on.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/device/device_registry.h"
#include "framework/program/program_builder.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"
#include "models/embedding/embedding_model.h"

namespace tandem {
namespace {

class EmbeddingGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (DeviceRegistry::Global().DeviceCount(DeviceType::GPU()) == 0) GTEST_SKIP() << "no GPU";
  }
};

EmbeddingConfig Config(bool sparse) {
  EmbeddingConfig c;
  c.rows = 1000;
  c.dim = 16;
  c.batch = 8;
  c.learning_rate = 0.5;
  c.table_on_cpu = false;
  c.is_sparse = sparse;
  return c;
}

// Repeated ids within and across batches.
const std::vector<double> kIds = {3, 999, 128, 3, 0, 517, 42, 128, 3, 3, 7, 999, 0, 1, 2, 3};

struct Trained {
  std::vector<double> losses;
  std::vector<double> table;
  RunStats last;
};

Trained Train(const Place& place, bool sparse, int steps) {
  Trained t;
  ProgramBuilder b;
  const EmbeddingConfig config = Config(sparse);
  absl::StatusOr<EmbeddingModel> m = BuildEmbeddingModel(config, &b);
  EXPECT_OK(m.status());
  if (!m.ok()) return t;
  Executor exe(place);
  Scope scope;
  EXPECT_OK(exe.Run(b.startup_program(), &scope).status());
  auto plan = exe.Prepare(b.main_program(), scope, {m->ids.name}, {m->loss.name});
  EXPECT_OK(plan.status());
  if (!plan.ok()) return t;
  for (int s = 0; s < steps; ++s) {
    std::vector<double> ids(kIds.begin() + (s % 2) * 8, kIds.begin() + (s % 2) * 8 + 8);
    auto out = exe.Run(plan->get(), &scope,
                       {{m->ids.name, MakeTensor(DataType::kInt64, {config.batch}, ids)}}, &t.last);
    EXPECT_OK(out.status());
    if (!out.ok()) return t;
    t.losses.push_back(ToDoubles((*out)[0])[0]);
  }
  t.table = ToDoubles(scope.Find("emb_w")->tensor());
  return t;
}

TEST_F(EmbeddingGpuTest, TrainsLikeTheCpuCopyingOnlyTheIds) {
  for (bool sparse : {true, false}) {
    SCOPED_TRACE(sparse ? "sparse" : "dense");
    const Trained cpu = Train(CPUPlace(), sparse, 6);
    const Trained gpu = Train(GPUPlace(0), sparse, 6);
    ASSERT_EQ(gpu.losses.size(), cpu.losses.size());
    for (size_t i = 0; i < cpu.losses.size(); ++i) {
      EXPECT_NEAR(gpu.losses[i], cpu.losses[i], 1e-5) << "step " << i;
    }
    ASSERT_EQ(gpu.table.size(), cpu.table.size());
    for (size_t i = 0; i < cpu.table.size(); ++i) {
      ASSERT_NEAR(gpu.table[i], cpu.table[i], 1e-5) << "element " << i;
    }
    EXPECT_LT(cpu.losses.back(), cpu.losses.front());
    // The fed ids go to the device once, for lookup_table; lookup_table_grad
    // reads the host original; nothing comes back but the fetched loss.
    EXPECT_EQ(gpu.last.copies_h2d, 1);
    EXPECT_EQ(gpu.last.bytes_h2d, 8 * 8);
    EXPECT_EQ(gpu.last.copies_d2h, 0);
    EXPECT_EQ(gpu.last.fetch_copies, 1);
  }
}

TEST_F(EmbeddingGpuTest, BadIdFailsItsRunWithLookupTablesErrorAndTheNextRunTrains) {
  const std::string lookup_error =
      "op 'lookup_table': id 1000 at position 2 is out of range [0, 1000) of table 'emb_w'";
  for (bool sparse : {true, false}) {
    SCOPED_TRACE(sparse ? "sparse" : "dense");
    ProgramBuilder b;
    ASSERT_OK_AND_ASSIGN(EmbeddingModel m, BuildEmbeddingModel(Config(sparse), &b));
    Executor exe(GPUPlace(0));
    Scope scope;
    ASSERT_OK(exe.Run(b.startup_program(), &scope).status());
    ASSERT_OK_AND_ASSIGN(auto plan,
                         exe.Prepare(b.main_program(), scope, {m.ids.name}, {m.loss.name}));
    const std::vector<double> bad = {1, 2, 1000, 3, -4, 5, 6, 7};
    EXPECT_THAT(exe.Run(plan.get(), &scope, {{m.ids.name, MakeTensor(DataType::kInt64, {8}, bad)}}),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(lookup_error)));
    const std::vector<double> good = {1, 2, 999, 3, 4, 5, 6, 7};
    for (int run = 0; run < 2; ++run) {  // nothing of the bad run is left to report
      EXPECT_OK(exe.Run(plan.get(), &scope, {{m.ids.name, MakeTensor(DataType::kInt64, {8}, good)}})
                    .status());
    }
  }
}

// A program of one lookup_table (ids [3] into a 10 x 4 table), prepared on
// gpu:0.
class LookupAloneTest : public EmbeddingGpuTest {
 protected:
  void SetUp() override {
    EmbeddingGpuTest::SetUp();
    if (IsSkipped()) return;
    Var ids = b_.Data("ids", DataType::kInt64, Shape({3}));
    Var emb = b_.Embedding(ids, {10, 4});
    ASSERT_OK(b_.status());
    ASSERT_OK(exe_.Run(b_.startup_program(), &scope_).status());
    ASSERT_OK_AND_ASSIGN(plan_, exe_.Prepare(b_.main_program(), scope_, {"ids"}, {emb.name}));
  }

  ProgramBuilder b_;
  Executor exe_{GPUPlace(0)};
  Scope scope_;
  std::unique_ptr<Plan> plan_;
};

// Without a gradient, the bad id surfaces at the run's closing
// synchronisation: the run fails, the next one does not.
TEST_F(LookupAloneTest, ReportsBadIdsAtTheEndOfItsRun) {
  EXPECT_THAT(
      exe_.Run(plan_.get(), &scope_, {{"ids", MakeTensor(DataType::kInt64, {3}, {0, 10, 9})}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("op 'lookup_table': id 10 at position 1 is out of range [0, 10)")));
  ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> out,
      exe_.Run(plan_.get(), &scope_, {{"ids", MakeTensor(DataType::kInt64, {3}, {0, 9, 9})}}));
  const std::vector<double> rows = ToDoubles(out[0]);
  ASSERT_EQ(rows.size(), 12u);
  EXPECT_EQ(std::vector<double>(rows.begin() + 4, rows.begin() + 8),
            std::vector<double>(rows.begin() + 8, rows.end()));  // id 9 twice
}

// Pipelined runs end on events, not by synchronising the stream the next
// run already uses: each run still reports its own bad id, and only its own
// (the runs before and after it succeed), over many runs.
TEST_F(LookupAloneTest, PipelinedRunsReportEachRunsBadIdsAtItsEnd) {
  auto feeds = [](int64_t id) {
    return FeedMap{{"ids", MakeTensor(DataType::kInt64, {3}, {0, id, 9})}};
  };
  ASSERT_OK(exe_.Run(plan_.get(), &scope_, feeds(1)).status());
  for (int round = 0; round < 50; ++round) {
    SCOPED_TRACE(round);
    const bool with_bad = round % 10 == 3;
    ASSERT_OK_AND_ASSIGN(RunHandle before, exe_.RunAsync(plan_.get(), &scope_, feeds(2)));
    ASSERT_OK_AND_ASSIGN(RunHandle middle,
                         exe_.RunAsync(plan_.get(), &scope_, feeds(with_bad ? 10 : 3)));
    ASSERT_OK_AND_ASSIGN(RunHandle after, exe_.RunAsync(plan_.get(), &scope_, feeds(4)));
    EXPECT_OK(before.Wait().status());
    absl::StatusOr<std::vector<Tensor>> out = middle.Wait();
    if (with_bad) {
      EXPECT_THAT(out.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("op 'lookup_table': id 10 at position 1 is out "
                                                   "of range [0, 10)")));
    } else {
      EXPECT_OK(out.status());
    }
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> last, after.Wait());
    const std::vector<double> rows = ToDoubles(last[0]);
    ASSERT_EQ(rows.size(), 12u);
  }
}

}  // namespace
}  // namespace tandem
