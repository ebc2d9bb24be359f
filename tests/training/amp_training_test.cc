// Automatic mixed precision end to end: a two-layer classifier trained with
// its products in bfloat16 (and float16) against the same model in float32
// on cpu and sim:0 (losses, the first step's float32 gradients, the master
// weights), and the errors a user meets (16-bit ids, a 16-bit checkpoint in
// a float32 program).
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "framework/amp/amp.h"
#include "framework/backward/optimizer.h"
#include "framework/persistence/checkpoint.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

constexpr int64_t kBatch = 32, kIn = 12, kHidden = 24, kClasses = 4;
constexpr int kSteps = 40;

struct Model {
  ProgramBuilder b;
  Var loss;
  std::vector<std::string> grads;  // of layer1.w_0 and layer2.w_0, in float32
};

// x -> fc(24) -> tanh -> fc(4) -> softmax cross-entropy, with or without
// AMP. `fold`: the updates read the 16-bit gradients (the default, see
// Optimizer::set_fold_gradient_casts); off keeps the float32 ones to fetch.
void Build(std::optional<DataType> amp, Model* m, bool fold = false) {
  ProgramBuilder& b = m->b;
  Var x = b.Data("x", DataType::kFloat32, Shape({kBatch, kIn}));
  Var label = b.Data("label", DataType::kInt64, Shape({kBatch, 1}));
  Var h = b.Tanh(b.Fc(x, kHidden, 1, true, "layer1", Initializer::XavierUniform(11)));
  Var logits = b.Fc(h, kClasses, 1, true, "layer2", Initializer::XavierUniform(12));
  m->loss = b.Mean(b.SoftmaxWithCrossEntropy(logits, label));
  ASSERT_OK(b.status());
  if (amp.has_value()) {
    ASSERT_OK_AND_ASSIGN(AmpReport report, ApplyAmp(AmpOptions{*amp}, &b.main_program()));
    EXPECT_EQ(report.low_precision_ops.size(), 2u);  // the two fc
  }
  SGD sgd(0.5);
  sgd.set_fold_gradient_casts(fold);
  ASSERT_OK(sgd.Minimize(&b, m->loss));
  if (!fold) m->grads = {GradVarName("layer1.w_0"), GradVarName("layer2.w_0")};
}

// A separable problem: the label is the arg-max of four fixed projections.
std::pair<Tensor, Tensor> Batch(int step) {
  const std::vector<double> xs = RandomValues(DataType::kFloat32, kBatch * kIn, 100 + step);
  std::vector<int64_t> labels(kBatch);
  for (int64_t r = 0; r < kBatch; ++r) {
    double best = -1e9;
    for (int64_t c = 0; c < kClasses; ++c) {
      double s = 0;
      for (int64_t i = 0; i < kIn; ++i) s += xs[r * kIn + i] * ((i * 7 + c * 3) % 5 - 2);
      if (s > best) best = s, labels[r] = c;
    }
  }
  return {MakeTensor(DataType::kFloat32, Shape({kBatch, kIn}), xs),
          Tensor::FromVector<int64_t>(Shape({kBatch, 1}), labels)};
}

struct Trajectory {
  std::vector<double> losses;
  std::vector<std::vector<double>> first_grads;
  DataType w_dtype;
};

Trajectory Train(std::optional<DataType> amp, const Place& place, bool fold = false,
                 Program* program = nullptr) {
  Model m;
  Build(amp, &m, fold);
  if (program != nullptr) *program = m.b.main_program();
  Executor exe(place);
  Scope scope;
  Trajectory t;
  EXPECT_OK(exe.Run(m.b.startup_program(), &scope).status());
  std::vector<std::string> fetches = {m.loss.name};
  fetches.insert(fetches.end(), m.grads.begin(), m.grads.end());
  absl::StatusOr<std::unique_ptr<Plan>> plan =
      exe.Prepare(m.b.main_program(), scope, {"x", "label"}, fetches);
  EXPECT_OK(plan.status());
  if (!plan.ok()) return t;
  for (int step = 0; step < kSteps; ++step) {
    auto [x, label] = Batch(step);
    absl::StatusOr<std::vector<Tensor>> out =
        exe.Run(plan->get(), &scope, {{"x", x}, {"label", label}});
    EXPECT_OK(out.status());
    if (!out.ok()) return t;
    t.losses.push_back(ToDoubles((*out)[0])[0]);
    if (step == 0) {
      for (size_t i = 1; i < out->size(); ++i) {
        EXPECT_EQ((*out)[i].dtype(), DataType::kFloat32) << fetches[i];
        t.first_grads.push_back(ToDoubles((*out)[i]));
      }
    }
  }
  t.w_dtype = scope.Find("layer1.w_0")->tensor().dtype();
  return t;
}

class AmpTraining : public ::testing::TestWithParam<std::string> {};

// The updates read the 16-bit gradients directly (the widening casts
// folded into them): bit for bit the losses of the program that widens
// them first, with no cast writing a weight's gradient, and the sgd ops'
// Grad 16-bit.
TEST_P(AmpTraining, UpdatesReadingSixteenBitGradientsTrainBitForBitTheSame) {
  ASSERT_OK_AND_ASSIGN(const Place place, ParsePlace(GetParam()));
  for (DataType dtype : {DataType::kBFloat16, DataType::kFloat16}) {
    SCOPED_TRACE(DataTypeName(dtype));
    Program folded, widened;
    const Trajectory fold = Train(dtype, place, /*fold=*/true, &folded);
    const Trajectory wide = Train(dtype, place, /*fold=*/false, &widened);
    ASSERT_EQ(fold.losses.size(), static_cast<size_t>(kSteps));
    EXPECT_EQ(fold.losses, wide.losses);
    auto casts_to_weight_grads = [](const Program& p) {
      int n = 0;
      for (const OpDesc& op : p.block().ops()) {
        n += op.type == "cast" && absl::StartsWith(op.Output("Out"), "layer") &&
             absl::EndsWith(op.Output("Out"), ".w_0@GRAD");
      }
      return n;
    };
    EXPECT_EQ(casts_to_weight_grads(widened), 2);
    EXPECT_EQ(casts_to_weight_grads(folded), 0);
    EXPECT_EQ(folded.block().ops().size() + 4, widened.block().ops().size());  // 2 w, 2 b
    for (const OpDesc& op : folded.block().ops()) {
      if (op.type != "sgd") continue;
      EXPECT_EQ(folded.block().FindVar(op.Input("Grad"))->dtype, dtype) << op.Input("Param");
    }
  }
}

TEST_P(AmpTraining, LowPrecisionProductsTrainLikeFloat32WithFloat32MasterWeights) {
  ASSERT_OK_AND_ASSIGN(const Place place, ParsePlace(GetParam()));
  const Trajectory fp32 = Train(std::nullopt, place);
  ASSERT_EQ(fp32.losses.size(), static_cast<size_t>(kSteps));
  EXPECT_LT(fp32.losses.back(), 0.6 * fp32.losses.front());  // it learns
  for (DataType dtype : {DataType::kBFloat16, DataType::kFloat16}) {
    SCOPED_TRACE(DataTypeName(dtype));
    const Trajectory low = Train(dtype, place);
    ASSERT_EQ(low.losses.size(), static_cast<size_t>(kSteps));
    EXPECT_EQ(low.w_dtype, DataType::kFloat32);  // the master weight
    // One rounding per product (2^-9 for bfloat16, 2^-12 for float16
    // relative), compounded over the steps: the losses stay within a few
    // units of the 16-bit type's precision.
    const double tol = dtype == DataType::kBFloat16 ? 0.03 : 0.005;
    for (int s = 0; s < kSteps; ++s) {
      EXPECT_NEAR(low.losses[s], fp32.losses[s], tol * fp32.losses[s]) << "step " << s;
    }
    // The first step's float32 gradients of the weights, against float32's
    // in norm (single elements may differ more, where a sum's terms cancel).
    // tanh, not relu: a relu whose input rounds across zero changes a whole
    // term, so relu's gradients differ by a few such flips, not by rounding.
    ASSERT_EQ(low.first_grads.size(), fp32.first_grads.size());
    for (size_t g = 0; g < fp32.first_grads.size(); ++g) {
      double norm = 0, diff = 0;
      for (size_t i = 0; i < fp32.first_grads[g].size(); ++i) {
        norm += fp32.first_grads[g][i] * fp32.first_grads[g][i];
        const double d = low.first_grads[g][i] - fp32.first_grads[g][i];
        diff += d * d;
      }
      EXPECT_GT(norm, 0);
      const double relative = std::sqrt(diff / norm);
      EXPECT_LT(relative, dtype == DataType::kBFloat16 ? 0.01 : 0.0015) << "grad " << g;
      EXPECT_GT(relative, 0) << "grad " << g;  // 16-bit rounding shows: not float32's
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Places, AmpTraining, ::testing::Values("cpu", "sim:0"),
                         [](const auto& info) { return info.param == "cpu" ? "cpu" : "sim"; });

// Adam's 16-bit working copies (Optimizer::set_working_copies, on by
// default): the update writes each weight's bfloat16 copy, which the
// next step's forward reads instead of casting the weight. Bit for bit the
// losses and weights of the program that casts in the forward, on cpu,
// sim:0 and with the weights on the host and the ops on sim:0 (optimizer
// offload); the copy left in the scope is the cast of the final weight.
struct AdamRun {
  std::vector<double> losses;
  std::map<std::string, std::vector<double>> weights, copies;
  Program main, startup;
};

AdamRun TrainAdam(const std::string& place, bool working_copies) {
  AdamRun r;
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({kBatch, kIn}));
  Var label = b.Data("label", DataType::kInt64, Shape({kBatch, 1}));
  Var loss;
  {
    auto params = b.parameters_on(place == "mixed" ? "cpu" : "");
    Var h = b.Tanh(b.Fc(x, kHidden, 1, true, "layer1", Initializer::XavierUniform(11)));
    Var logits = b.Fc(h, kClasses, 1, true, "layer2", Initializer::XavierUniform(12));
    loss = b.Mean(b.SoftmaxWithCrossEntropy(logits, label));
  }
  EXPECT_OK(ApplyAmp(AmpOptions{DataType::kBFloat16}, &b.main_program()).status());
  Adam adam(0.01);
  adam.EnableGradientClipping(0.5);
  adam.set_working_copies(working_copies);
  EXPECT_OK(adam.Minimize(&b, loss));
  r.main = b.main_program();
  r.startup = b.startup_program();
  Executor exe(*ParsePlace(place == "mixed" ? "sim:0" : place));
  Scope scope;
  EXPECT_OK(exe.Run(b.startup_program(), &scope).status());
  absl::StatusOr<std::unique_ptr<Plan>> plan =
      exe.Prepare(b.main_program(), scope, {"x", "label"}, {loss.name});
  EXPECT_OK(plan.status());
  if (!plan.ok()) return r;
  for (int step = 0; step < 12; ++step) {
    auto [xs, labels] = Batch(step);
    absl::StatusOr<std::vector<Tensor>> out =
        exe.Run(plan->get(), &scope, {{"x", xs}, {"label", labels}});
    EXPECT_OK(out.status());
    if (!out.ok()) return r;
    r.losses.push_back(ToDoubles((*out)[0])[0]);
  }
  for (const char* w : {"layer1.w_0", "layer2.w_0", "layer1.b_0"}) {
    r.weights[w] = ToDoubles(scope.Find(w)->tensor());
    const Variable* copy = scope.Find(absl::StrCat(w, ".cast_bfloat16"));
    if (copy != nullptr && copy->is_tensor()) r.copies[w] = ToDoubles(copy->tensor());
  }
  return r;
}

TEST(AmpWorkingCopies, AdamWritesTheSixteenBitCopiesAndTrainsBitForBitTheSame) {
  for (const std::string place : {"cpu", "sim:0", "mixed"}) {
    SCOPED_TRACE(place);
    const AdamRun copies = TrainAdam(place, true);
    const AdamRun casts = TrainAdam(place, false);
    ASSERT_EQ(copies.losses.size(), 12u);
    EXPECT_EQ(copies.losses, casts.losses);
    EXPECT_EQ(copies.weights, casts.weights);
    EXPECT_LT(copies.losses.back(), copies.losses.front());
    // No forward cast of a parameter is left; each adam writes the copy.
    int forward_casts = 0, copies_written = 0;
    for (const OpDesc& op : copies.main.block().ops()) {
      forward_casts += op.type == "cast" && copies.main.block().FindVar(op.Input("X")) != nullptr &&
                       copies.main.block().FindVar(op.Input("X"))->persistable;
      if (op.type != "adam" || op.outputs.count("ParamCastOut") == 0) continue;
      ++copies_written;
      const VarDesc* copy = copies.main.block().FindVar(op.Output("ParamCastOut"));
      ASSERT_NE(copy, nullptr);
      EXPECT_TRUE(copy->persistable);
      EXPECT_EQ(copy->dtype, DataType::kBFloat16);
      EXPECT_EQ(op.Output("ParamCastOut"), op.Input("Param") + ".cast_bfloat16");
    }
    EXPECT_EQ(forward_casts, 0);
    EXPECT_EQ(copies_written, 4);  // the weights and biases of both fc
    int startup_casts = 0;
    for (const OpDesc& op : copies.startup.block().ops()) startup_casts += op.type == "cast";
    EXPECT_EQ(startup_casts, 4);
    int casts_kept = 0;
    for (const OpDesc& op : casts.main.block().ops()) {
      casts_kept += op.type == "cast" && op.origin.kind == OpOrigin::Kind::kAmpCast &&
                    casts.main.block().FindVar(op.Input("X"))->persistable;
    }
    EXPECT_EQ(casts_kept, 4);
    // The copy in the scope: the final weights rounded to bfloat16.
    ASSERT_EQ(copies.copies.size(), 3u);
    for (const auto& [w, copy] : copies.copies) {
      const std::vector<double>& weight = copies.weights.at(w);
      ASSERT_EQ(copy.size(), weight.size()) << w;
      for (size_t i = 0; i < copy.size(); ++i) {
        ASSERT_EQ(copy[i],
                  static_cast<double>(static_cast<float>(bfloat16(static_cast<float>(weight[i])))))
            << w << "[" << i << "]";
      }
    }
  }
}

// Two embedding tables under device_guard("cpu"), joined by concat on
// sim:0 for an fc there (the CTR model's shape): with AMP the concat runs
// in bfloat16 (a pass-through op), the casts of the gathered rows run on
// the host (rule cast-at-source), so the rows go up and their gradients
// come down in bfloat16, half the bytes of float32; the tables are still
// updated in float32 on the host.
// x -> fc -> gelu -> fc -> loss in bfloat16 with gelu passed through (the
// default) or not (float32 gelu with casts around it); losses per step.
std::vector<double> TrainGeluMlp(bool gelu_passes, const Place& place, int* casts) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({kBatch, kIn}));
  Var label = b.Data("label", DataType::kInt64, Shape({kBatch, 1}));
  Var h = b.Gelu(b.Fc(x, kHidden, 1, true, "layer1", Initializer::XavierUniform(11)), true);
  Var logits = b.Fc(h, kClasses, 1, true, "layer2", Initializer::XavierUniform(12));
  Var loss = b.Mean(b.SoftmaxWithCrossEntropy(logits, label));
  AmpOptions options{DataType::kBFloat16};
  if (!gelu_passes) options.pass_through.erase("gelu");
  absl::StatusOr<AmpReport> report = ApplyAmp(options, &b.main_program());
  EXPECT_OK(report.status());
  *casts = report.ok() ? report->casts : -1;
  SGD sgd(0.5);
  EXPECT_OK(sgd.Minimize(&b, loss));
  Executor exe(place);
  Scope scope;
  EXPECT_OK(exe.Run(b.startup_program(), &scope).status());
  auto plan = exe.Prepare(b.main_program(), scope, {"x", "label"}, {loss.name});
  EXPECT_OK(plan.status());
  std::vector<double> losses;
  for (int step = 0; plan.ok() && step < 20; ++step) {
    auto [xs, labels] = Batch(step);
    auto out = exe.Run(plan->get(), &scope, {{"x", xs}, {"label", labels}});
    EXPECT_OK(out.status());
    if (!out.ok()) break;
    losses.push_back(ToDoubles((*out)[0])[0]);
  }
  return losses;
}

// gelu's 16-bit kernels round once, as the cast after a float32 gelu does:
// passing it through drops two casts and changes no value, bit for bit.
TEST(AmpPassThrough, GeluInSixteenBitsTrainsExactlyAsWithCastsAroundIt) {
  for (const char* place : {"cpu", "sim:0"}) {
    int casts_through = 0, casts_around = 0;
    const std::vector<double> through = TrainGeluMlp(true, *ParsePlace(place), &casts_through);
    const std::vector<double> around = TrainGeluMlp(false, *ParsePlace(place), &casts_around);
    ASSERT_EQ(through.size(), 20u) << place;
    EXPECT_EQ(through, around) << place;
    EXPECT_EQ(casts_through, casts_around - 2) << place;  // fc1's output back, gelu's out
    EXPECT_LT(through.back(), 0.7 * through.front()) << place;
  }
}

TEST(AmpCopies, RowsCrossInSixteenBitsBothWays) {
  constexpr int64_t kIds = 64, kDim = 32;
  auto bytes_per_step = [&](bool amp, std::string* placement) {
    ProgramBuilder b;
    Var ids = b.Data("ids", DataType::kInt64, Shape({kIds, 1}));
    std::vector<Var> embs;
    {
      auto guard = b.device_guard("cpu");
      for (int t = 0; t < 2; ++t) {
        embs.push_back(b.Embedding(ids, {1000, kDim}, /*is_sparse=*/false, -1,
                                   Initializer::Uniform(-1, 1, 5 + t), absl::StrCat("table", t)));
      }
    }
    // Joined on sim:0 (concat runs in 16 bits there, its inputs cast on the host).
    Var out = b.Fc(b.Concat(embs, 1), 8, 1, true, "head", Initializer::XavierUniform(6));
    Var loss = b.Mean(out);
    EXPECT_OK(b.status());
    if (amp) EXPECT_OK(ApplyAmp(AmpOptions{}, &b.main_program()).status());
    SGD sgd(0.1);
    EXPECT_OK(sgd.Minimize(&b, loss));
    Executor exe(*ParsePlace("sim:0"));
    Scope scope;
    EXPECT_OK(exe.Run(b.startup_program(), &scope).status());
    std::vector<int64_t> id_values(kIds);
    for (int64_t i = 0; i < kIds; ++i) id_values[i] = (i * 37) % 1000;
    const Tensor feed = Tensor::FromVector<int64_t>(Shape({kIds, 1}), id_values);
    absl::StatusOr<std::unique_ptr<Plan>> plan =
        exe.Prepare(b.main_program(), scope, {"ids"}, {loss.name});
    EXPECT_OK(plan.status());
    if (!plan.ok()) return std::make_pair(int64_t{-1}, int64_t{-1});
    *placement = (*plan)->PlacementTable();
    RunStats stats;
    EXPECT_OK(exe.Run(plan->get(), &scope, {{"ids", feed}}, &stats).status());
    EXPECT_EQ(scope.Find("table0")->tensor().dtype(), DataType::kFloat32);
    return std::make_pair(stats.bytes_h2d, stats.bytes_d2h);
  };
  std::string fp32_table, amp_table;
  const auto [up32, down32] = bytes_per_step(false, &fp32_table);
  const auto [up16, down16] = bytes_per_step(true, &amp_table);
  // float32: two tables' rows up, their gradients down (2 x 64 x 32 x 4
  // bytes each way); bfloat16: half.
  EXPECT_EQ(up32, 2 * kIds * kDim * 4) << fp32_table;
  EXPECT_EQ(down32, 2 * kIds * kDim * 4) << fp32_table;
  EXPECT_EQ(up16, 2 * kIds * kDim * 2) << amp_table;
  EXPECT_EQ(down16, 2 * kIds * kDim * 2) << amp_table;
  EXPECT_THAT(amp_table, HasSubstr("cast-at-source")) << amp_table;
}

TEST(AmpErrors, SixteenBitIdsAreRejectedNamingTheOpAndArgument) {
  ProgramBuilder b;
  Var ids = b.Data("ids", DataType::kBFloat16, Shape({4}));
  Var table =
      b.CreateParameter("table", DataType::kFloat32, Shape({10, 3}), Initializer::Constant(1));
  // The builder refuses the op ...
  b.LookupTable(ids, table);
  EXPECT_THAT(b.status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("op 'lookup_table': Ids must be int64, got bfloat16")));
  // ... and so does Prepare, for a program made another way (JSON, Python).
  ProgramBuilder ok;
  Var ok_ids = ok.Data("ids", DataType::kInt64, Shape({4}));
  ok.LookupTable(ok_ids, ok.CreateParameter("table", DataType::kFloat32, Shape({10, 3}),
                                            Initializer::Constant(1)));
  ASSERT_OK(ok.status());
  Program program = ok.main_program();
  program.block().FindVar("ids")->dtype = DataType::kBFloat16;
  Executor exe(CPUPlace());
  Scope scope;
  ASSERT_OK(exe.Run(ok.startup_program(), &scope).status());
  EXPECT_THAT(exe.Prepare(program, scope, {"ids"}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("op 'lookup_table': Ids must be int64, got bfloat16")));
}

TEST(AmpErrors, ASixteenBitCheckpointInAFloat32ProgramIsAClearError) {
  Model m;
  Build(std::nullopt, &m);
  Executor exe(CPUPlace());
  Scope scope;
  ASSERT_OK(exe.Run(m.b.startup_program(), &scope).status());
  // A checkpoint whose layer1.w_0 was saved in bfloat16.
  Scope saved;
  saved.Var("layer1.w_0")
      ->set(MakeTensor(DataType::kBFloat16, Shape({kIn, kHidden}),
                       std::vector<double>(kIn * kHidden, 0.5)));
  const std::string path = ::testing::TempDir() + "/bf16.ckpt";
  ASSERT_OK(SaveCheckpoint(saved, {"layer1.w_0"}, path));
  ASSERT_OK(LoadCheckpoint(path, &scope));
  auto [x, label] = Batch(0);
  absl::StatusOr<std::unique_ptr<Plan>> plan =
      exe.Prepare(m.b.main_program(), scope, {"x", "label"}, {m.loss.name});
  absl::Status status = plan.status();
  if (plan.ok()) status = exe.Run(plan->get(), &scope, {{"x", x}, {"label", label}}).status();
  EXPECT_THAT(status,
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("persistable 'layer1.w_0' holds bfloat16[12, 24] but the program "
                                 "declares float32[12, 24]")));
}

}  // namespace
}  // namespace tandem
