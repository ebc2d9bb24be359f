#include <random>

#include "absl/strings/str_cat.h"
#include "framework/backward/optimizer.h"
#include "framework/device/device_registry.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"
#include "models/crop/crop_model.h"
#include "models/embedding/embedding_model.h"

namespace tandem {
namespace {

using ::testing::AllOf;

#define CHECK_OK(expr)                     \
  do {                                     \
    const absl::Status check_ok_ = (expr); \
    CHECK(check_ok_.ok()) << check_ok_;    \
  } while (0)

// Accelerator places to test on: sim:0 always, gpu:0 when present.
std::vector<Place> Accelerators() {
  std::vector<Place> places = {*ParsePlace("sim:0")};
  if (DeviceRegistry::Global().DeviceCount(DeviceType::GPU()) > 0) places.push_back(GPUPlace(0));
  return places;
}

// ---- Workload 2: shape-op placement ------------------------------------------

TEST(CropWorkload, SliceOnDeviceCopiesTheShapeThereAndBack) {
  for (const Place& place : Accelerators()) {
    SCOPED_TRACE(place.ToString());
    for (bool slice_on_cpu : {false, true}) {
      ProgramBuilder b;
      ASSERT_OK_AND_ASSIGN(Var out, BuildCropModel(slice_on_cpu, &b));
      Executor exe(place);
      Scope scope;
      ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {}, {out.name}));
      for (int it = 0; it < 3; ++it) {
        RunStats stats;
        ASSERT_OK_AND_ASSIGN(std::vector<Tensor> result, exe.Run(plan.get(), &scope, {}, &stats));
        EXPECT_EQ(result[0].shape(), Shape({1, 3, 5, 5}));
        EXPECT_EQ(ToDoubles(result[0]), std::vector<double>(75, 1.0));
        // shape() writes its int32[4] output on the host (HostMemory). A
        // device slice needs it on the device (1 H2D of 16 bytes), and
        // crop_tensor reads Shape on the host again (1 D2H). Under
        // device_guard("cpu") the slice reads and writes host memory: 0.
        // The H2D is queued on the device's stream (async, from pinned
        // memory: `shape` writes its output there because it is copied
        // next); the D2H waits for the data (sync).
        EXPECT_EQ(stats.copies_h2d, slice_on_cpu ? 0 : 1);
        EXPECT_EQ(stats.copies_d2h, slice_on_cpu ? 0 : 1);
        EXPECT_EQ(stats.bytes_h2d, slice_on_cpu ? 0 : 16);
        EXPECT_EQ(stats.sync_copies, slice_on_cpu ? 0 : 1);
        EXPECT_EQ(stats.async_copies, slice_on_cpu ? 0 : 1);
      }
    }
  }
}

// ---- Workload 1: embedding offload -------------------------------------------

struct TrainResult {
  std::vector<double> losses;
  std::vector<double> table_rows;  // rows touched, after training
  RunStats last_stats;
};

TrainResult TrainEmbedding(const Place& place, EmbeddingConfig config, int steps,
                           const std::vector<int64_t>& ids) {
  TrainResult r;
  ProgramBuilder b;
  absl::StatusOr<EmbeddingModel> m = BuildEmbeddingModel(config, &b);
  CHECK(m.ok()) << m.status();
  Executor exe(place);
  Scope scope;
  CHECK_OK(exe.Run(b.startup_program(), &scope).status());
  auto plan = exe.Prepare(b.main_program(), scope, {m->ids.name}, {m->loss.name});
  CHECK(plan.ok()) << plan.status();
  for (int s = 0; s < steps; ++s) {
    std::vector<double> step_ids(config.batch);
    for (int64_t i = 0; i < config.batch; ++i) step_ids[i] = ids[(s * config.batch + i) % ids.size()];
    auto out = exe.Run(plan->get(), &scope,
                       {{m->ids.name, MakeTensor(DataType::kInt64, {config.batch}, step_ids)}},
                       &r.last_stats);
    CHECK(out.ok()) << out.status();
    r.losses.push_back(ToDoubles((*out)[0])[0]);
  }
  const std::vector<double> table = ToDoubles(scope.Find("emb_w")->tensor());
  for (int64_t id : ids) {
    r.table_rows.insert(r.table_rows.end(), table.begin() + id * config.dim,
                        table.begin() + (id + 1) * config.dim);
  }
  return r;
}

EmbeddingConfig SmallEmbedding(bool table_on_cpu, bool sparse) {
  EmbeddingConfig c;
  c.rows = 1000;
  c.dim = 16;
  c.batch = 4;
  c.learning_rate = 0.5;
  c.table_on_cpu = table_on_cpu;
  c.is_sparse = sparse;
  return c;
}

const std::vector<int64_t> kIds = {3, 999, 128, 3, 0, 517, 42, 128};

TEST(EmbeddingWorkload, CopiesPerStepWithTheTableOnCpu) {
  for (const Place& place : Accelerators()) {
    for (bool sparse : {false, true}) {
      SCOPED_TRACE(absl::StrCat(place.ToString(), sparse ? " sparse" : " dense"));
      TrainResult r = TrainEmbedding(place, SmallEmbedding(true, sparse), 3, kIds);
      const RunStats& s = r.last_stats;
      // ids are fed on the host and looked up on the CPU: no copy. The
      // looked-up rows emb [4, 16] go to the device once for l2_normalize;
      // l2_normalize_grad reads the same copy (cached per variable and
      // destination). emb@GRAD comes back once for lookup_table_grad on the
      // CPU. The table's sgd runs on the CPU with the host learning rate:
      // no copy of the table, its gradient or the learning rate.
      EXPECT_EQ(s.copies_h2d, 1);
      EXPECT_EQ(s.copies_d2h, 1);
      EXPECT_EQ(s.bytes_h2d, 4 * 16 * 4);
      EXPECT_EQ(s.bytes_d2h, 4 * 16 * 4);
      EXPECT_EQ(s.fetch_copies, 1);  // the loss, returned to the caller
      for (const CopyRecord& c : s.ledger) {
        EXPECT_EQ(c.var.find("learning_rate"), std::string::npos) << c.var;
        EXPECT_EQ(c.var.find("emb_w"), std::string::npos) << c.var;  // table, its grad
      }
    }
  }
}

TEST(EmbeddingWorkload, AllOnTheDeviceCopiesOnlyTheIds) {
  for (const Place& place : Accelerators()) {
    SCOPED_TRACE(place.ToString());
    TrainResult r = TrainEmbedding(place, SmallEmbedding(false, false), 2, kIds);
    EXPECT_EQ(r.last_stats.copies_h2d, 1);  // the fed ids
    EXPECT_EQ(r.last_stats.bytes_h2d, 4 * 8);
    EXPECT_EQ(r.last_stats.copies_d2h, 0);
  }
}

void ExpectClose(const std::vector<double>& a, const std::vector<double>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], tol * (1 + std::abs(b[i]))) << "index " << i;
  }
}

TEST(EmbeddingWorkload, MixedPlacementMatchesAllCpuOver20Steps) {
  for (bool sparse : {false, true}) {
    SCOPED_TRACE(sparse ? "sparse" : "dense");
    TrainResult cpu = TrainEmbedding(CPUPlace(), SmallEmbedding(false, sparse), 20, kIds);
    EXPECT_LT(cpu.losses.back(), cpu.losses.front());
    for (const Place& place : Accelerators()) {
      SCOPED_TRACE(place.ToString());
      TrainResult mixed = TrainEmbedding(place, SmallEmbedding(true, sparse), 20, kIds);
      ExpectClose(mixed.losses, cpu.losses, 1e-5);
      ExpectClose(mixed.table_rows, cpu.table_rows, 1e-5);
    }
  }
}

TEST(EmbeddingWorkload, OutOfRangeIdIsInvalidArgumentAndTheDeviceStaysUsable) {
  for (const Place& place : Accelerators()) {
    for (bool table_on_cpu : {true, false}) {
      SCOPED_TRACE(absl::StrCat(place.ToString(), table_on_cpu ? " table on cpu" : " all on device"));
      ProgramBuilder b;
      ASSERT_OK_AND_ASSIGN(EmbeddingModel m, BuildEmbeddingModel(SmallEmbedding(table_on_cpu, false), &b));
      Executor exe(place);
      Scope scope;
      ASSERT_OK(exe.Run(b.startup_program(), &scope).status());
      ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {m.ids.name}, {m.loss.name}));
      EXPECT_THAT(exe.Run(plan.get(), &scope,
                          {{m.ids.name, MakeTensor(DataType::kInt64, {4}, {1, 2, 1000, 3})}}),
                  StatusIs(absl::StatusCode::kInvalidArgument,
                           AllOf(HasSubstr("lookup_table"), HasSubstr("1000"),
                                 HasSubstr("position 2"), HasSubstr("[0, 1000)"))));
      // A good batch still runs afterwards.
      ASSERT_OK(exe.Run(plan.get(), &scope,
                        {{m.ids.name, MakeTensor(DataType::kInt64, {4}, {1, 2, 999, 3})}})
                    .status());
    }
  }
}

// ---- Random programs, random placements ------------------------------------

struct RandomProgram {
  std::vector<double> losses;
  std::map<std::string, std::vector<double>> params;
};

// A random chain over [8, 6] activations: matmul with a [6, 6] parameter,
// elementwise_add with a [6] bias, or scale; then a squared error to 0.5.
// `devices` holds one op_device per op ("" = default).
RandomProgram TrainRandom(uint64_t seed, const Place& default_place, bool randomize,
                          const std::vector<std::string>& choices) {
  std::mt19937_64 rng(seed);
  std::mt19937_64 place_rng(seed * 7 + 1);
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({8, 6}));
  Var h = x;
  std::vector<std::string> param_names;
  const int n_ops = 4 + static_cast<int>(rng() % 4);
  for (int i = 0; i < n_ops; ++i) {
    std::string device = randomize ? choices[place_rng() % choices.size()] : "";
    auto guard = b.device_guard(device);
    switch (rng() % 3) {
      case 0: {
        Var w = b.CreateParameter(absl::StrCat("w", i), DataType::kFloat32, Shape({6, 6}),
                                  Initializer::Uniform(-0.5, 0.5, 100 + i));
        param_names.push_back(w.name);
        h = b.Matmul(h, w);
        break;
      }
      case 1: {
        Var bias = b.CreateParameter(absl::StrCat("b", i), DataType::kFloat32, Shape({6}),
                                     Initializer::Uniform(-0.5, 0.5, 200 + i));
        param_names.push_back(bias.name);
        h = b.ElementwiseAdd(h, bias);
        break;
      }
      default:
        h = b.Scale(h, 0.9, 0.1);
    }
  }
  Var w_last = b.CreateParameter("w_last", DataType::kFloat32, Shape({6, 6}),
                                 Initializer::Uniform(-0.5, 0.5, 999));
  param_names.push_back(w_last.name);
  h = b.Matmul(h, w_last);
  Var label = b.FillConstant({8, 6}, DataType::kFloat32, 0.5);
  Var loss;
  {
    auto guard = b.device_guard(randomize ? choices[place_rng() % choices.size()] : "");
    loss = b.Mean(b.SquareErrorCost(h, label));
  }
  CHECK_OK(SGD(0.05).Minimize(&b, loss));
  Executor exe(default_place);
  Scope scope;
  CHECK_OK(exe.Run(b.startup_program(), &scope).status());
  auto plan = exe.Prepare(b.main_program(), scope, {"x"}, {loss.name});
  CHECK(plan.ok()) << plan.status();
  const Tensor xt = RandomTensor(DataType::kFloat32, {8, 6}, seed);
  RandomProgram r;
  for (int s = 0; s < 20; ++s) {
    auto out = exe.Run(plan->get(), &scope, {{"x", xt}});
    CHECK(out.ok()) << out.status();
    r.losses.push_back(ToDoubles((*out)[0])[0]);
  }
  for (const std::string& p : param_names) r.params[p] = ToDoubles(scope.Find(p)->tensor());
  return r;
}

TEST(RandomPlacement, SameLossesAndParametersAsAllCpu) {
  std::vector<std::string> choices = {"", "cpu", "sim:0", "sim:1"};
  if (DeviceRegistry::Global().DeviceCount(DeviceType::GPU()) > 0) choices.push_back("gpu:0");
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    RandomProgram cpu = TrainRandom(seed, CPUPlace(), false, choices);
    EXPECT_LT(cpu.losses.back(), cpu.losses.front());
    RandomProgram mixed = TrainRandom(seed, *ParsePlace("sim:0"), true, choices);
    ExpectClose(mixed.losses, cpu.losses, 1e-5);
    for (const auto& [name, values] : cpu.params) {
      SCOPED_TRACE(name);
      ExpectClose(mixed.params.at(name), values, 1e-5);
    }
  }
}

}  // namespace
}  // namespace tandem
