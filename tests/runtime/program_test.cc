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
                                   AllOf(HasSubstr("device_guard: place \"tpu:0\" is not valid: "
                                                   "unknown device type 'tpu'"),
                                         HasSubstr("lower-case registered type (cpu, gpu"))));
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
  Var w2 = b->CreateParameter("w2", DataType::kFloat32, Shape({3, 1}), Initializer::Constant(0.5));
  Var y = b->Matmul(h, w2);
  // h feeds two ops: its gradient is accumulated.
  Var skip = b->Matmul(h, w2, false, false, 2.0);
  Var sum = b->ElementwiseAdd(y, skip);
  *loss = b->Matmul(sum, sum, /*transpose_x=*/true);
  return b;
}

TEST(Backward, GeneratedOpsRecordWhatTheyDeriveFromAndAccumulate) {
  ProgramBuilder b;
  Var loss;
  TwoLayerProgram(&b, &loss);
  SGD sgd(0.01);
  ASSERT_OK(sgd.Minimize(&b, loss));
  const Program& p = b.main_program();
  // Generated ops carry no op_device: the placer places them from their
  // origin (tests/runtime/placement_test.cc checks where they land).
  const OpDesc* fill = FindOp(p, "fill_constant");
  ASSERT_NE(fill, nullptr);
  EXPECT_EQ(fill->role, OpRole::kLoss);
  EXPECT_EQ(fill->op_device, "");
  EXPECT_EQ(fill->origin.kind, OpOrigin::Kind::kLossGradOf);
  EXPECT_EQ(p.block().ops()[fill->origin.op].Output("Out"), loss.name);
  EXPECT_EQ(fill->Output("Out"), loss.name + "@GRAD");
  int cpu_matmul_grads = 0, accumulations = 0;
  for (const OpDesc& op : p.block().ops()) {
    if (op.role == OpRole::kBackward) {
      EXPECT_EQ(op.op_device, "") << op.DebugString();
    }
    if (op.type == "matmul_grad" && op.Input("X") == "x") {
      EXPECT_EQ(op.origin.kind, OpOrigin::Kind::kGradOf);
      EXPECT_EQ(op.origin.op, 0);  // the matmul under device_guard("cpu")
      ++cpu_matmul_grads;
    }
    if (op.role == OpRole::kBackward && op.type == "elementwise_add" &&
        op.Output("Out").find("@GRAD") != std::string::npos) {
      EXPECT_EQ(op.origin.kind, OpOrigin::Kind::kGradSumOf);
      EXPECT_EQ(op.origin.var, op.Input("Y"));  // the partial gradient it adds
      ++accumulations;
    }
  }
  EXPECT_EQ(cpu_matmul_grads, 1);
  EXPECT_GE(accumulations, 1);  // h@GRAD and w2@GRAD have two contributions
  int updates = 0;
  for (const OpDesc& op : p.block().ops()) {
    if (op.type != "sgd") continue;
    EXPECT_EQ(op.origin.kind, OpOrigin::Kind::kUpdateOf);
    EXPECT_EQ(op.origin.var, op.Input("Param"));
    EXPECT_EQ(op.op_device, "");
    EXPECT_EQ(op.Output("ParamOut"), op.Input("Param"));
    ++updates;
  }
  EXPECT_EQ(updates, 2);
  // The learning rate's initialiser is a host scalar, unpinned.
  const OpDesc* lr_init = nullptr;
  for (const OpDesc& op : b.startup_program().block().ops()) {
    if (op.Output("Out") == sgd.learning_rate_var()) lr_init = &op;
  }
  ASSERT_NE(lr_init, nullptr);
  EXPECT_EQ(lr_init->op_device, "");
  EXPECT_EQ(lr_init->origin.kind, OpOrigin::Kind::kHostState);
}

TEST(Backward, OriginsRoundTripThroughJson) {
  ProgramBuilder b;
  Var loss;
  TwoLayerProgram(&b, &loss);
  Momentum momentum(0.01, 0.9);
  ASSERT_OK(momentum.Minimize(&b, loss));
  for (const Program* p : {&b.main_program(), &b.startup_program()}) {
    ASSERT_OK_AND_ASSIGN(Program back, Program::FromJson(p->ToJson()));
    EXPECT_EQ(back, *p);
  }
  const OpDesc* velocity_init = nullptr;
  for (const OpDesc& op : b.startup_program().block().ops()) {
    if (op.Output("Out") == momentum.state_vars("w1").at("velocity")) velocity_init = &op;
  }
  ASSERT_NE(velocity_init, nullptr);
  EXPECT_EQ(velocity_init->origin.kind, OpOrigin::Kind::kStateOf);
  EXPECT_EQ(velocity_init->origin.var, "w1");
}

TEST(Backward, JsonRejectsAnOriginThatIsNotAnEarlierOp) {
  ProgramBuilder b;
  Var loss;
  TwoLayerProgram(&b, &loss);
  ASSERT_OK(SGD(0.01).Minimize(&b, loss));
  Program p = b.main_program();
  p.block().mutable_ops()[1].origin = {OpOrigin::Kind::kGradOf, 1, ""};
  EXPECT_THAT(Program::FromJson(p.ToJson()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ops[1].origin.op must be the index of an earlier op (0..0)")));
  p.block().mutable_ops()[1].origin = {OpOrigin::Kind::kGradOf, 0, ""};
  std::string json = p.ToJson();
  const std::string kind = "\"grad_of\"";
  json.replace(json.find(kind), kind.size(), "\"grad_off\"");
  EXPECT_THAT(
      Program::FromJson(json).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown op origin 'grad_off'")));
}

TEST(Backward, NoParameterIsAnError) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
  Var y = b.Scale(x, 2.0);
  EXPECT_THAT(AppendBackward(&b, y),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("no trainable parameter")));
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
                  {"name": "x", "dtype": "float8", "shape": [1]}], "ops": []})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("vars[0]"), HasSubstr("float8"))));
  // The 16-bit floating types are program dtypes like any other.
  ASSERT_OK_AND_ASSIGN(Program p, Program::FromJson(R"({"format": "tandem.program",
      "version": 1, "vars": [{"name": "x", "dtype": "bfloat16", "shape": [1]},
      {"name": "h", "dtype": "float16", "shape": [2]}], "ops": []})"));
  EXPECT_EQ(p.block().FindVar("x")->dtype, DataType::kBFloat16);
  EXPECT_EQ(p.block().FindVar("h")->dtype, DataType::kFloat16);
  EXPECT_THAT(Program::FromJson("{"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 1")));
}

TEST(ProgramJson, AVariableDeclaredTwiceDifferentlyIsRefused) {
  const std::string json = R"({"format": "tandem.program", "version": 1, "vars": [
      {"name": "w", "dtype": "float32", "shape": [2, 3], "persistable": true},
      {"name": "x", "dtype": "float32", "shape": [3]},
      {"name": "w", "dtype": "int64", "shape": [3, 2], "persistable": true}], "ops": []})";
  EXPECT_THAT(Program::FromJson(json),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "program json: vars[2]: variable 'w' is declared twice, as float32[2, 3] "
                       "persistable and as int64[3, 2] persistable"));
  // Only the flags differ: still two declarations.
  EXPECT_THAT(Program::FromJson(R"({"format": "tandem.program", "version": 1, "vars": [
                  {"name": "x", "dtype": "float32", "shape": [3]},
                  {"name": "x", "dtype": "float32", "shape": [3], "persistable": true}],
                  "ops": []})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("variable 'x' is declared twice, as float32[3] and as float32[3] "
                                 "persistable")));
  // The same declaration twice is one variable.
  ASSERT_OK_AND_ASSIGN(Program p, Program::FromJson(R"({"format": "tandem.program",
      "version": 1, "vars": [{"name": "x", "dtype": "float32", "shape": [3]},
                             {"name": "x", "dtype": "float32", "shape": [3]}], "ops": []})"));
  EXPECT_EQ(p.block().vars().size(), 1u);
}

}  // namespace
}  // namespace tandem
