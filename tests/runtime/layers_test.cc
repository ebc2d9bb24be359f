// The layout and layer ops end to end: ProgramBuilder methods, backward
// through every gradient, training on cpu and sim, dropout masks per step,
// reshape's shared buffer and the builder's errors.
#include <cmath>
#include <optional>

#include "framework/amp/amp.h"
#include "framework/backward/optimizer.h"
#include "framework/device/device_registry.h"
#include "framework/kernel/eager.h"
#include "framework/program/program_builder.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

const Place kSim0 = *ParsePlace("sim:0");

// The output `arg` of the first op of `type` in `b`'s main program.
std::string OutputOf(ProgramBuilder& b, const std::string& type, const std::string& arg) {
  for (const OpDesc& op : b.main_program().block().ops()) {
    if (op.type == type) return op.Output(arg);
  }
  return "";
}

// A small CNN regression: conv2d + bias, max pool, layer_norm, dropout,
// reshape, split / concat (pieces swapped), transpose twice, matmul, mean
// squared error. Returns the loss; *mask is dropout's Mask.
Var SmallCnn(ProgramBuilder* b, std::string* mask) {
  Var x = b->Data("x", DataType::kFloat32, Shape({-1, 1, 8, 8}));
  Var label = b->Data("label", DataType::kFloat32, Shape({-1, 1}));
  Var h = b->Conv2D(x, 4, 3, /*stride=*/1, /*padding=*/1, /*groups=*/1, /*with_bias=*/true, "conv");
  h = b->Pool2D(h, 2, "max", 2);
  h = b->LayerNorm(h, 1, 1e-5, true, true, "norm");
  h = b->Dropout(h, 0.25);
  h = b->Reshape(h, {0, -1});
  std::vector<Var> halves = b->Split(h, 2, 1);
  EXPECT_EQ(halves.size(), 2u);
  if (halves.size() == 2) h = b->Concat({halves[1], halves[0]}, 1);
  h = b->Transpose(b->Transpose(h, {1, 0}), {1, 0});
  Var w = b->CreateParameter("w", DataType::kFloat32, Shape({64, 1}),
                             Initializer::Uniform(-0.1, 0.1, 3));
  Var loss = b->Mean(b->SquareErrorCost(b->Matmul(h, w), label));
  *mask = OutputOf(*b, "dropout", "Mask");
  return loss;
}

FeedMap Batch() {
  const Tensor x = RandomTensor(DataType::kFloat32, Shape({16, 1, 8, 8}), 11);
  const std::vector<double> xs = ToDoubles(x);
  std::vector<double> label(16, 0.0);
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 64; ++j) label[i] += xs[i * 64 + j] * (j % 2 ? 0.05 : -0.03);
  }
  return {{"x", x}, {"label", MakeTensor(DataType::kFloat32, Shape({16, 1}), label)}};
}

struct Trajectory {
  std::vector<double> losses;
  std::vector<std::vector<double>> masks;
};

Trajectory Train(const Place& place, int steps) {
  ProgramBuilder b;
  std::string mask;
  Var loss = SmallCnn(&b, &mask);
  EXPECT_OK(SGD(0.05).Minimize(&b, loss));
  EXPECT_OK(b.status());
  Executor exe(place);
  Scope scope;
  EXPECT_OK(exe.Run(b.startup_program(), &scope).status());
  absl::StatusOr<std::unique_ptr<Plan>> plan =
      exe.Prepare(b.main_program(), scope, {"x", "label"}, {loss.name, mask});
  EXPECT_OK(plan.status());
  Trajectory t;
  if (!plan.ok()) return t;
  const FeedMap feeds = Batch();
  for (int i = 0; i < steps; ++i) {
    absl::StatusOr<std::vector<Tensor>> out = exe.Run(plan->get(), &scope, feeds);
    EXPECT_OK(out.status());
    if (!out.ok()) return t;
    t.losses.push_back(ToDoubles((*out)[0])[0]);
    t.masks.push_back(ToDoubles((*out)[1]));
  }
  return t;
}

TEST(Layers, SmallCnnTrainsAlikeOnCpuAndSim) {
  const int steps = 40;
  const Trajectory cpu = Train(CPUPlace(), steps);
  const Trajectory sim = Train(kSim0, steps);
  ASSERT_EQ(cpu.losses.size(), static_cast<size_t>(steps));
  ASSERT_EQ(sim.losses.size(), static_cast<size_t>(steps));
  EXPECT_LT(cpu.losses.back(), 0.5 * cpu.losses.front());
  for (int i = 0; i < steps; ++i) {
    // oneDNN (cpu) and the portable kernels (sim) round differently.
    EXPECT_NEAR(cpu.losses[i], sim.losses[i], 1e-3 * cpu.losses[0]) << "step " << i;
    // Masks are bit-identical across places, and new every step.
    EXPECT_EQ(cpu.masks[i], sim.masks[i]) << "step " << i;
  }
  EXPECT_NE(cpu.masks[0], cpu.masks[1]);
  double kept = 0;
  for (double m : cpu.masks[0]) kept += m;
  EXPECT_NEAR(kept / cpu.masks[0].size(), 0.75, 0.1);
}

// Attention that must look one token back: token t holds a value and its
// position one-hot; its label is the value of token t - 1 (0 for the first
// token).
struct CopyBackTask {
  static constexpr int64_t kBatch = 8, kSeq = 6, kFeatures = 1 + kSeq;
  Var out, loss;

  explicit CopyBackTask(ProgramBuilder* b) {
    Var x = b->Data("x", DataType::kFloat32, Shape({kBatch, kSeq, kFeatures}));
    Var label = b->Data("label", DataType::kFloat32, Shape({kBatch, kSeq, 1}));
    Var qkv = b->Fc(x, 3 * 8, /*in_num_col_dims=*/2, true, "qkv", Initializer::XavierUniform(31));
    out = b->SelfAttention(qkv, /*num_heads=*/2);
    Var pred = b->Fc(out, 1, 2, true, "head", Initializer::XavierUniform(32));
    loss = b->Mean(b->SquareErrorCost(pred, label));
  }

  static FeedMap Feeds(uint64_t seed) {
    const std::vector<double> values =
        ToDoubles(RandomTensor(DataType::kFloat32, Shape({kBatch, kSeq}), seed));
    std::vector<double> x(kBatch * kSeq * kFeatures, 0.0), label(kBatch * kSeq, 0.0);
    for (int64_t b = 0; b < kBatch; ++b) {
      for (int64_t t = 0; t < kSeq; ++t) {
        x[(b * kSeq + t) * kFeatures] = values[b * kSeq + t];
        x[(b * kSeq + t) * kFeatures + 1 + t] = 1;
        if (t > 0) label[b * kSeq + t] = values[b * kSeq + t - 1];
      }
    }
    return {{"x", MakeTensor(DataType::kFloat32, Shape({kBatch, kSeq, kFeatures}), x)},
            {"label", MakeTensor(DataType::kFloat32, Shape({kBatch, kSeq, 1}), label)}};
  }
};

std::vector<double> TrainCopyBack(const Place& place, int steps,
                                  std::optional<DataType> amp = std::nullopt) {
  ProgramBuilder b;
  CopyBackTask task(&b);
  if (amp.has_value()) {
    EXPECT_OK(ApplyAmp(AmpOptions{*amp}, &b.main_program()).status());
  }
  EXPECT_OK(Adam(0.02).Minimize(&b, task.loss));
  EXPECT_OK(b.status());
  Executor exe(place);
  Scope scope;
  EXPECT_OK(exe.Run(b.startup_program(), &scope).status());
  absl::StatusOr<std::unique_ptr<Plan>> plan =
      exe.Prepare(b.main_program(), scope, {"x", "label"}, {task.loss.name});
  EXPECT_OK(plan.status());
  std::vector<double> losses;
  if (!plan.ok()) return losses;
  for (int i = 0; i < steps; ++i) {
    absl::StatusOr<std::vector<Tensor>> out =
        exe.Run(plan->get(), &scope, CopyBackTask::Feeds(100 + i % 8));
    EXPECT_OK(out.status());
    if (!out.ok()) break;
    losses.push_back(ToDoubles((*out)[0])[0]);
  }
  return losses;
}

TEST(Layers, SelfAttentionLearnsToLookBackAlikeOnCpuAndSim) {
  const int steps = 200;
  const std::vector<double> cpu = TrainCopyBack(CPUPlace(), steps);
  const std::vector<double> sim = TrainCopyBack(kSim0, steps);
  ASSERT_EQ(cpu.size(), static_cast<size_t>(steps));
  ASSERT_EQ(sim.size(), static_cast<size_t>(steps));
  // The first features are uniform in [-1, 1): predicting 0 leaves about 1/3.
  EXPECT_LT(cpu.back(), 0.25 * cpu.front());
  for (int i = 0; i < steps; i += 20) {
    EXPECT_NEAR(cpu[i], sim[i], 1e-3 * cpu[0]) << "step " << i;
  }
}

TEST(Layers, SelfAttentionRunsInBfloat16UnderAmpWithFloat32Statistics) {
  ProgramBuilder b;
  CopyBackTask task(&b);
  ASSERT_OK(ApplyAmp(AmpOptions{DataType::kBFloat16}, &b.main_program()).status());
  int found = 0;
  for (const OpDesc& op : b.main_program().block().ops()) {
    if (op.type != "self_attention") continue;
    ++found;
    const Block& block = b.main_program().block();
    EXPECT_EQ(block.FindVar(op.Input("QKV"))->dtype, DataType::kBFloat16);
    EXPECT_EQ(block.FindVar(op.Output("Out"))->dtype, DataType::kBFloat16);
    EXPECT_EQ(block.FindVar(op.Output("Lse"))->dtype, DataType::kFloat32);
  }
  EXPECT_EQ(found, 1);
  const std::vector<double> losses = TrainCopyBack(CPUPlace(), 200, DataType::kBFloat16);
  ASSERT_EQ(losses.size(), 200u);
  EXPECT_LT(losses.back(), 0.25 * losses.front());
}

TEST(Layers, CausalSelfAttentionIgnoresLaterTokens) {
  ProgramBuilder b;
  CopyBackTask task(&b);
  ASSERT_OK(b.status());
  Executor exe(CPUPlace());
  Scope scope;
  ASSERT_OK(exe.Run(b.startup_program(), &scope).status());
  ASSERT_OK_AND_ASSIGN(auto plan,
                       exe.Prepare(b.main_program(), scope, {"x", "label"}, {task.out.name}));
  FeedMap feeds = CopyBackTask::Feeds(7);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> before, exe.Run(plan.get(), &scope, feeds));
  // Change the last token of every sequence.
  std::vector<double> xs = ToDoubles(feeds["x"]);
  constexpr int64_t kRow = CopyBackTask::kSeq * CopyBackTask::kFeatures;
  for (int64_t b = 0; b < CopyBackTask::kBatch; ++b) {
    for (int64_t f = 0; f < CopyBackTask::kFeatures; ++f) xs[b * kRow + kRow - 1 - f] += 5;
  }
  feeds["x"] = MakeTensor(DataType::kFloat32, feeds["x"].shape(), xs);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> after, exe.Run(plan.get(), &scope, feeds));
  const std::vector<double> a = ToDoubles(before[0]), c = ToDoubles(after[0]);
  ASSERT_EQ(a.size(), static_cast<size_t>(CopyBackTask::kBatch * CopyBackTask::kSeq * 8));
  constexpr int64_t kOutRow = CopyBackTask::kSeq * 8;
  int changed_rows = 0;
  for (int64_t b = 0; b < CopyBackTask::kBatch; ++b) {
    for (int64_t i = 0; i < kOutRow; ++i) {
      const int64_t k = b * kOutRow + i;
      if (i < kOutRow - 8) {
        EXPECT_EQ(a[k], c[k]) << "batch " << b << " element " << i;
      } else {
        changed_rows += a[k] != c[k];
      }
    }
  }
  EXPECT_GT(changed_rows, CopyBackTask::kBatch);  // the last token does see itself
}

TEST(Layers, ReshapeSharesTheBuffer) {
  const Tensor x = RandomTensor(DataType::kFloat32, Shape({2, 3, 4}), 5);
  OpDesc op;
  op.type = "reshape";
  op.attrs["shape"] = std::vector<int64_t>{4, -1};
  ASSERT_OK_AND_ASSIGN(EagerOutputs out, RunOpEager(op, CPUPlace(), {{"X", {Variable(x)}}}));
  const Tensor& y = out.at("Out")[0].tensor();
  EXPECT_EQ(y.shape(), Shape({4, 6}));
  EXPECT_EQ(y.raw_data(), x.raw_data());
}

TEST(Layers, GradientOfAVariableConcatenatedTwiceAddsUp) {
  ProgramBuilder b;
  Var w = b.CreateParameter("w", DataType::kFloat32, Shape({2}), Initializer::Constant(1));
  Var loss = b.Mean(b.Concat({w, w}, 0));
  ASSERT_OK_AND_ASSIGN(GradMap grads, AppendBackward(&b, loss));
  ASSERT_OK(b.status());
  Executor exe(CPUPlace());
  Scope scope;
  ASSERT_OK(exe.Run(b.startup_program(), &scope).status());
  ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {}, {grads.at("w")}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, exe.Run(plan.get(), &scope));
  // d mean([w, w]) / dw_i = 2 / 4 from the two copies.
  EXPECT_EQ(ToDoubles(out[0]), (std::vector<double>{0.5, 0.5}));
}

// The backward pass sums the second contribution into the first in place
// (g = elementwise_add(g, partial)); the kernel still reads the old g.
TEST(Layers, GradientsOfAVariableReadTwiceAddUp) {
  ProgramBuilder b;
  Var w = b.CreateParameter("w", DataType::kFloat32, Shape({2}), Initializer::Constant(1));
  Var loss = b.Mean(b.ElementwiseAdd(b.Scale(w, 2.0), b.Scale(w, 3.0)));
  ASSERT_OK_AND_ASSIGN(GradMap grads, AppendBackward(&b, loss));
  Executor exe(CPUPlace());
  Scope scope;
  ASSERT_OK(exe.Run(b.startup_program(), &scope).status());
  ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {}, {grads.at("w")}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, exe.Run(plan.get(), &scope));
  EXPECT_EQ(ToDoubles(out[0]), (std::vector<double>{2.5, 2.5}));
}

TEST(Layers, SplitPiecesWithoutGradientGetZeros) {
  ProgramBuilder b;
  Var w = b.CreateParameter("w", DataType::kFloat32, Shape({5}), Initializer::Constant(1));
  std::vector<Var> pieces = b.SplitSections(w, {2, -1});
  ASSERT_EQ(pieces.size(), 2u);
  Var loss = b.Mean(pieces[1]);  // only the second piece reaches the loss
  ASSERT_OK_AND_ASSIGN(GradMap grads, AppendBackward(&b, loss));
  Executor exe(kSim0);
  Scope scope;
  ASSERT_OK(exe.Run(b.startup_program(), &scope).status());
  ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {}, {grads.at("w")}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, exe.Run(plan.get(), &scope));
  const double third = 1.0 / 3;
  EXPECT_EQ(ToDoubles(out[0]),
            (std::vector<double>{0, 0, static_cast<float>(third), static_cast<float>(third),
                                 static_cast<float>(third)}));
}

TEST(Layers, BuilderNamesParametersAndReportsBadLayers) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({-1, 3, 8, 8}));
  Var y = b.Conv2D(x, 6, 3, 1, 1, /*groups=*/3);
  Var z = b.LayerNorm(y, 1);
  ASSERT_OK(b.status());
  const VarDesc* filter = b.main_program().block().FindVar("conv2d_0.w_0");
  ASSERT_NE(filter, nullptr);
  EXPECT_EQ(filter->shape, Shape({6, 1, 3, 3}));
  EXPECT_TRUE(filter->is_parameter);
  EXPECT_NE(b.main_program().block().FindVar("conv2d_0.b_0"), nullptr);
  const VarDesc* scale = b.main_program().block().FindVar("layer_norm_0.scale_0");
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ(scale->shape, Shape({6 * 8 * 8}));
  EXPECT_EQ(b.main_program().block().FindVar(z.name)->shape, Shape({-1, 6, 8, 8}));
  // The filter's Xavier bound: sqrt(6 / (fan_in + fan_out)), fans 1*9, 6*9.
  for (const OpDesc& op : b.startup_program().block().ops()) {
    if (op.Output("Out") != "conv2d_0.w_0") continue;
    EXPECT_EQ(op.type, "uniform_random");
    EXPECT_DOUBLE_EQ(std::get<double>(op.attrs.at("max")), std::sqrt(6.0 / 63));
  }

  ProgramBuilder unknown;
  Var u = unknown.Data("u", DataType::kFloat32, Shape({-1, -1, 8, 8}));
  EXPECT_FALSE(unknown.Conv2D(u, 4, 3).valid());
  EXPECT_THAT(unknown.status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Conv2D: input 'u' [-1, -1, 8, 8] with groups 1, num_filters 4 "
                                 "and filter_size 3: need NCHW input with known channels")));
  ProgramBuilder axis;
  Var a = axis.Data("a", DataType::kFloat32, Shape({2, 3}));
  EXPECT_FALSE(axis.LayerNorm(a, 2).valid());
  EXPECT_THAT(axis.status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("LayerNorm: input 'a' [2, 3] with begin_norm_axis 2")));
  ProgramBuilder split;
  Var s = split.Data("s", DataType::kFloat32, Shape({5}));
  EXPECT_TRUE(split.Split(s, 2).empty());
  EXPECT_THAT(split.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                       "op 'split': num 2 does not divide dim 5 for X [5] along "
                                       "axis 0"));
  ProgramBuilder reshape;
  Var r = reshape.Data("r", DataType::kFloat32, Shape({2, 3}));
  EXPECT_FALSE(reshape.Reshape(r, {4, -1}).valid());
  EXPECT_THAT(reshape.status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("cannot reshape X [2, 3] (6 elements) to [4, -1]")));
}

// A trainable value's shape read by crop_tensor (workload 2's chain, on a
// value that depends on a parameter): the shape has no gradient, and
// backward asks for none.
TEST(Layers, ShapeOfATrainableValueNeedsNoGradient) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 3}));
  Var w = b.CreateParameter("w", DataType::kFloat32, Shape({2, 3}));
  Var y = b.Tanh(b.ElementwiseMul(x, w));
  Var shape = b.ShapeOf(y);
  const VarDesc* shape_var = b.main_program().block().FindVar(shape.name);
  ASSERT_NE(shape_var, nullptr) << b.status();
  EXPECT_TRUE(shape_var->stop_gradient);
  Var loss = b.Mean(b.CropTensor(y, shape));
  SGD sgd(0.1);
  ASSERT_OK(sgd.Minimize(&b, loss));
  ASSERT_OK(b.status());
  int sgd_ops = 0;
  for (const OpDesc& op : b.main_program().block().ops()) sgd_ops += op.type == "sgd";
  EXPECT_EQ(sgd_ops, 1);
}

}  // namespace
}  // namespace tandem
