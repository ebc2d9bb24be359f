#include "framework/backward/optimizer.h"
#include "framework/program/program_builder.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::AllOf;

const OpDesc* FindOp(const Program& p, const std::string& type, int nth = 0) {
  for (const OpDesc& op : p.block().ops()) {
    if (op.type == type && nth-- == 0) return &op;
  }
  return nullptr;
}

TEST(ProgramBuilder, DeviceGuardScopesNestAndRestore) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({-1, 4}));
  Var a, c, d;
  {
    auto outer = b.device_guard("cpu");
    a = b.Scale(x, 2.0);
    {
      auto inner = b.device_guard("gpu:1");
      c = b.Scale(a, 3.0);
    }
    d = b.Scale(c, 4.0);
  }
  Var e = b.Scale(d, 5.0);
  ASSERT_OK(b.status());
  const auto& ops = b.main_program().block().ops();
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[0].op_device, "cpu");
  EXPECT_EQ(ops[1].op_device, "gpu:1");
  EXPECT_EQ(ops[2].op_device, "cpu");
  EXPECT_EQ(ops[3].op_device, "");
  EXPECT_EQ(b.current_device(), "");
  const VarDesc* ed = b.main_program().block().FindVar(e.name);
  ASSERT_NE(ed, nullptr);
  EXPECT_EQ(ed->shape, Shape({-1, 4}));  // shape inference ran at build time
  EXPECT_EQ(a.name, "scale_0.tmp_0");
}

TEST(ProgramBuilder, InvalidDeviceAndBadOpsAreStickyErrors) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 3}));
  {
    auto g = b.device_guard("tpu:0");
    EXPECT_FALSE(b.Scale(x, 1.0).valid());
  }
  EXPECT_THAT(b.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                   AllOf(HasSubstr("device_guard: invalid place 'tpu:0'"),
                                         HasSubstr("accepted forms: cpu, gpu, gpu:N"))));
  ProgramBuilder c;
  Var p = c.Data("p", DataType::kFloat32, Shape({2, 3}));
  Var q = c.Data("q", DataType::kFloat32, Shape({4}));
  EXPECT_FALSE(c.ElementwiseAdd(p, q).valid());
  EXPECT_THAT(c.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("X [2, 3] and Y [4] cannot be broadcast")));
  ProgramBuilder d;
  EXPECT_FALSE(d.Scale(Var{"missing"}, 1.0).valid());
  EXPECT_THAT(d.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("unknown variable 'missing'")));
}

ProgramBuilder* TwoLayerProgram(ProgramBuilder* b, Var* loss) {
  Var x = b->Data("x", DataType::kFloat32, Shape({8, 4}));
  Var w1 = b->CreateParameter("w1", DataType::kFloat32, Shape({4, 3}));
  Var h;
  {
    auto g = b->device_guard("cpu");
    h = b->Matmul(x, w1);
  }
  Var w2 = b->CreateParameter("w2", DataType::kFloat32, Shape({3, 1}),
                              Initializer::Constant(0.5));
  Var y = b->Matmul(h, w2);
  // h feeds two ops: its gradient is accumulated.
  Var skip = b->Matmul(h, w2, false, false, 2.0);
  Var sum = b->ElementwiseAdd(y, skip);
  *loss = b->Matmul(sum, sum, /*transpose_x=*/true);
  return b;
}

TEST(Backward, GradOpsInheritPlacesAndAccumulate) {
  ProgramBuilder b;
  Var loss;
  TwoLayerProgram(&b, &loss);
  SGD sgd(0.01);
  ASSERT_OK(sgd.Minimize(&b, loss));
  const Program& p = b.main_program();
  // The loss-gradient fill goes with the loss op (default place).
  const OpDesc* fill = FindOp(p, "fill_constant");
  ASSERT_NE(fill, nullptr);
  EXPECT_EQ(fill->role, OpRole::kLoss);
  EXPECT_EQ(fill->op_device, "");
  EXPECT_EQ(fill->Output("Out"), loss.name + "@GRAD");
  // The grad of the first matmul (under device_guard("cpu")) runs on cpu.
  int cpu_grads = 0, accumulations = 0;
  for (const OpDesc& op : p.block().ops()) {
    if (op.type == "matmul_grad" && op.Input("X") == "x") {
      EXPECT_EQ(op.op_device, "cpu");
      ++cpu_grads;
    }
    if (op.role == OpRole::kBackward && op.type == "elementwise_add" &&
        op.Output("Out").find("@GRAD") != std::string::npos) {
      ++accumulations;
    }
  }
  EXPECT_EQ(cpu_grads, 1);
  EXPECT_GE(accumulations, 1);  // h@GRAD and w2@GRAD have two contributions
  // Optimizer: sgd of w1 on cpu (where its first reader runs), w2 on default.
  const OpDesc* sgd_w1 = nullptr;
  const OpDesc* sgd_w2 = nullptr;
  for (const OpDesc& op : p.block().ops()) {
    if (op.type != "sgd") continue;
    (op.Input("Param") == "w1" ? sgd_w1 : sgd_w2) = &op;
  }
  ASSERT_NE(sgd_w1, nullptr);
  ASSERT_NE(sgd_w2, nullptr);
  EXPECT_EQ(sgd_w1->op_device, "cpu");
  EXPECT_EQ(sgd_w2->op_device, "");
  EXPECT_EQ(sgd_w1->Output("ParamOut"), "w1");
  // The learning rate is initialised on the host.
  const OpDesc* lr_init = nullptr;
  for (const OpDesc& op : b.startup_program().block().ops()) {
    if (op.Output("Out") == sgd.learning_rate_var()) lr_init = &op;
  }
  ASSERT_NE(lr_init, nullptr);
  EXPECT_EQ(lr_init->op_device, "cpu");
}

TEST(Backward, NoParameterIsAnError) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
  Var y = b.Scale(x, 2.0);
  EXPECT_THAT(AppendBackward(&b, y), StatusIs(absl::StatusCode::kFailedPrecondition,
                                              HasSubstr("no trainable parameter")));
  EXPECT_THAT(SGD(-1).Minimize(&b, y), StatusIs(absl::StatusCode::kInvalidArgument,
                                                HasSubstr("learning rate must be finite and > 0")));
}

TEST(ProgramJson, RoundTripsAndPrintsPlaces) {
  ProgramBuilder b;
  Var loss;
  TwoLayerProgram(&b, &loss);
  {
    auto policy = b.transfer_policy(TransferPolicy::kDisallow);
    b.Scale(loss, 1.0);
  }
  ASSERT_OK(SGD(0.1).Minimize(&b, loss));
  const std::string json = b.main_program().ToJson();
  ASSERT_OK_AND_ASSIGN(Program back, Program::FromJson(json));
  EXPECT_TRUE(back == b.main_program());
  EXPECT_EQ(back.ToJson(), json);
  const std::string text = b.main_program().DebugString();
  EXPECT_THAT(text, HasSubstr("[cpu] matmul(X=[x], Y=[w1])"));
  EXPECT_THAT(text, HasSubstr("[default] (optimize) sgd("));
  EXPECT_THAT(text, HasSubstr("w1: float32[4, 3] parameter"));
}

TEST(ProgramJson, MalformedInputIsInvalidArgument) {
  EXPECT_THAT(Program::FromJson("{\"format\": \"other\"}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a Tandem program")));
  EXPECT_THAT(Program::FromJson("{\"format\": \"tandem.program\", \"version\": 9}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unsupported version 9")));
  EXPECT_THAT(Program::FromJson(R"({"format": "tandem.program", "version": 1, "vars": [
                  {"name": "x", "dtype": "float16", "shape": [1]}], "ops": []})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("vars[0]"), HasSubstr("float16"))));
  EXPECT_THAT(Program::FromJson("{"), StatusIs(absl::StatusCode::kInvalidArgument,
                                               HasSubstr("line 1")));
}

}  // namespace
}  // namespace tandem
