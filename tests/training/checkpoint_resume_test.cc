// Resuming from a checkpoint gives the identical next step: train a mixed
// program (an embedding table on the CPU with sparse Adam updates, a dense
// layer on sim:0) for a few steps, save, take one more step, then load the
// checkpoint into a fresh scope and take the same step: parameters,
// optimizer state and loss match bit for bit, each on its original place.
#include <cstring>
#include <string>
#include <vector>

#include "framework/backward/optimizer.h"
#include "framework/persistence/checkpoint.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

constexpr int64_t kBatch = 8;

struct Model {
  ProgramBuilder builder;
  Var loss;
};

void Build(Model* m) {
  ProgramBuilder& b = m->builder;
  Var ids = b.Data("ids", DataType::kInt64, Shape({kBatch}));
  Var label = b.Data("label", DataType::kFloat32, Shape({kBatch, 1}));
  Var emb;
  {
    auto guard = b.device_guard("cpu");
    emb = b.Embedding(ids, {50, 6}, /*is_sparse=*/true, -1, Initializer::Normal(0, 0.1, 3), "emb");
  }
  Var w = b.CreateParameter("w", DataType::kFloat32, Shape({6, 1}), Initializer::XavierUniform(4));
  m->loss = b.Mean(b.SquareErrorCost(b.Matmul(emb, w), label));
  AdamOptions options;
  options.weight_decay = 0.01;
  Adam adam(0.05, options);
  ASSERT_OK(adam.Minimize(&b, m->loss));
}

FeedMap Feeds(int step) {
  std::vector<double> ids(kBatch), labels(kBatch);
  for (int64_t i = 0; i < kBatch; ++i) {
    ids[i] = static_cast<double>((step * 17 + i * 5) % 50);
    labels[i] = (i % 3) - 1.0;
  }
  return {{"ids", MakeTensor(DataType::kInt64, Shape({kBatch}), ids)},
          {"label", MakeTensor(DataType::kFloat32, Shape({kBatch, 1}), labels)}};
}

// Host copies of every persistable variable, by name.
std::map<std::string, Tensor> Snapshot(const Program& program, const Scope& scope) {
  std::map<std::string, Tensor> out;
  for (const std::string& name : PersistableVars(program)) {
    out[name] = CopyTensorTo(scope.Find(name)->tensor(), CPUPlace()).value();
  }
  return out;
}

TEST(CheckpointResume, TheNextStepIsIdenticalBitForBit) {
  Model m;
  Build(&m);
  const Program& main = m.builder.main_program();
  const Place sim = *ParsePlace("sim:0");
  Executor exe(sim);
  Scope scope;
  ASSERT_OK(exe.Run(m.builder.startup_program(), &scope).status());
  ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(main, scope, {"ids", "label"}, {m.loss.name}));
  for (int step = 0; step < 5; ++step) {
    ASSERT_OK(exe.Run(plan.get(), &scope, Feeds(step)).status());
  }
  const std::string path = ::testing::TempDir() + "/resume.ckpt";
  ASSERT_OK(SaveCheckpoint(main, scope, path));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> loss, exe.Run(plan.get(), &scope, Feeds(5)));
  const std::map<std::string, Tensor> want = Snapshot(main, scope);

  Scope fresh;
  ASSERT_OK(LoadCheckpoint(path, &fresh));
  // Restored where they were saved from: the table and its Adam moments on
  // the CPU, w and its moments on sim:0, the scalars on the host.
  EXPECT_EQ(fresh.Find("emb")->tensor().place(), CPUPlace());
  EXPECT_EQ(fresh.Find("w")->tensor().place(), sim);
  ASSERT_OK_AND_ASSIGN(auto resumed, exe.Prepare(main, fresh, {"ids", "label"}, {m.loss.name}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> loss2, exe.Run(resumed.get(), &fresh, Feeds(5)));
  EXPECT_EQ(loss2[0].ToVector<float>(), loss[0].ToVector<float>());
  const std::map<std::string, Tensor> got = Snapshot(main, fresh);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_GE(got.size(), 2u + 4u + 4u + 1u);  // params, 2 x Adam state, learning rate
  for (const auto& [name, t] : want) {
    const Tensor& g = got.at(name);
    ASSERT_EQ(g.NumBytes(), t.NumBytes()) << name;
    EXPECT_EQ(std::memcmp(g.raw_data(), t.raw_data(), t.NumBytes()), 0) << name;
    EXPECT_EQ(fresh.Find(name)->tensor().place(), scope.Find(name)->tensor().place()) << name;
  }
}

}  // namespace
}  // namespace tandem
