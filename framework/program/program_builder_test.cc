// ProgramBuilder's own machinery on test ops registered here (the per-op
// methods need ops/ and are tested with it in tests/runtime/program_test.cc):
// output naming and shape inference, device_guard and transfer-policy
// scopes, sticky errors, parameters and their startup initialisers, seeds.
#include "framework/program/program_builder.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;

// Out = X with its last dim multiplied by `repeat`, as int64 when `as_int`.
REGISTER_OP("pb_widen")
    .Input("X")
    .Output("Out")
    .Attr<int64_t>("repeat", 2)
    .Attr<bool>("as_int", false)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
      ASSIGN_OR_RETURN(int64_t repeat, ctx->Attr<int64_t>("repeat"));
      ASSIGN_OR_RETURN(bool as_int, ctx->Attr<bool>("as_int"));
      if (repeat < 1) return ctx->Error(absl::StrCat("repeat must be >= 1, got ", repeat));
      std::vector<int64_t> dims = x.shape.ToVector();
      dims.back() *= repeat;
      ctx->SetOutput("Out", {as_int ? DataType::kInt64 : x.dtype, Shape(dims)});
      return absl::OkStatus();
    });

// X cut into as many [n, 1] pieces as Out has variables, plus their Count.
REGISTER_OP("pb_columns")
    .Input("X")
    .DuplicableOutput("Out")
    .Output("Count")
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
      const int n = static_cast<int>(ctx->op().outputs.at("Out").size());
      for (int i = 0; i < n; ++i) ctx->SetOutput("Out", {x.dtype, Shape({x.shape.dim(0), 1})}, i);
      ctx->SetOutput("Count", {DataType::kInt64, Shape({1})});
      return absl::OkStatus();
    });

const OpDesc& LastOp(ProgramBuilder& b) { return b.main_program().block().ops().back(); }

template <typename T>
T AttrOf(const OpDesc& op, const std::string& name) {
  return std::get<T>(op.attrs.at(name));
}

TEST(ProgramBuilder, AppendOpNamesOutputsAndDeclaresTheirInferredShapes) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({-1, 3}));
  auto first = b.AppendOp("pb_widen", {{"X", {x}}}, {}, {"Out"});
  auto second = b.AppendOp("pb_widen", {{"X", {x}}}, {{"repeat", int64_t{4}}, {"as_int", true}},
                           {"Out"}, {{"Out", "wide"}});
  ASSERT_OK(b.status());
  EXPECT_EQ(first["Out"][0].name, "pb_widen_0.tmp_0");
  EXPECT_EQ(second["Out"][0].name, "wide");
  const Block& block = b.main_program().block();
  const VarDesc* out = block.FindVar("pb_widen_0.tmp_0");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->shape, Shape({-1, 6}));  // the schema's default repeat, 2
  EXPECT_EQ(out->dtype, DataType::kFloat32);
  EXPECT_FALSE(out->persistable);
  EXPECT_EQ(block.FindVar("wide")->shape, Shape({-1, 12}));
  EXPECT_EQ(block.FindVar("wide")->dtype, DataType::kInt64);
  ASSERT_EQ(block.ops().size(), 2u);
  // Defaults are filled into the op by the schema.
  EXPECT_EQ(AttrOf<int64_t>(block.ops()[0], "repeat"), 2);
  EXPECT_EQ(block.ops()[0].role, OpRole::kForward);
  EXPECT_EQ(block.ops()[0].origin.kind, OpOrigin::Kind::kUser);
}

TEST(ProgramBuilder, DuplicableOutputGetsOneVariablePerCount) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({5, 3}));
  auto out = b.AppendOp("pb_columns", {{"X", {x}}}, {}, {"Out", "Count"}, {}, {{"Out", 3}});
  ASSERT_OK(b.status());
  ASSERT_EQ(out["Out"].size(), 3u);
  EXPECT_EQ(out["Out"][2].name, "pb_columns_0.tmp_2");
  EXPECT_EQ(out["Count"][0].name, "pb_columns_0.tmp_3");  // numbered after Out's
  EXPECT_EQ(b.main_program().block().FindVar("pb_columns_0.tmp_1")->shape, Shape({5, 1}));
  EXPECT_EQ(b.main_program().block().FindVar("pb_columns_0.tmp_3")->dtype, DataType::kInt64);
}

TEST(ProgramBuilder, DeviceGuardsNestAndRestore) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
  std::vector<std::string> devices;
  auto widen = [&] {
    b.AppendOp("pb_widen", {{"X", {x}}}, {}, {"Out"});
    devices.push_back(LastOp(b).op_device);
  };
  widen();
  {
    auto outer = b.device_guard("cpu");
    widen();
    {
      auto inner = b.device_guard("gpu:1");
      widen();
      EXPECT_EQ(b.current_device(), "gpu:1");
    }
    widen();
  }
  widen();
  EXPECT_OK(b.status());
  EXPECT_THAT(devices, ElementsAre("", "cpu", "gpu:1", "cpu", ""));
}

TEST(ProgramBuilder, TransferPolicyScopeAppliesToOpsBuiltInside) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
  {
    auto policy = b.transfer_policy(TransferPolicy::kDisallow);
    b.AppendOp("pb_widen", {{"X", {x}}}, {}, {"Out"});
    EXPECT_EQ(LastOp(b).transfer_policy, TransferPolicy::kDisallow);
  }
  b.AppendOp("pb_widen", {{"X", {x}}}, {}, {"Out"});
  EXPECT_EQ(LastOp(b).transfer_policy, TransferPolicy::kInherit);
}

TEST(ProgramBuilder, FirstErrorSticksAndLaterCallsDoNothing) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
  auto bad = b.AppendOp("pb_widen", {{"X", {Var{"ghost"}}}}, {}, {"Out"});
  EXPECT_TRUE(bad.empty());
  EXPECT_THAT(b.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("op 'pb_widen': input 'X' names unknown variable "
                                             "'ghost'")));
  // A valid call after the error appends nothing and keeps the first error.
  EXPECT_TRUE(b.AppendOp("pb_widen", {{"X", {x}}}, {}, {"Out"}).empty());
  EXPECT_FALSE(b.CreateParameter("w", DataType::kFloat32, Shape({2})).valid());
  EXPECT_TRUE(b.main_program().block().ops().empty());
  EXPECT_TRUE(b.startup_program().block().ops().empty());
  EXPECT_THAT(b.status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'ghost'")));
}

TEST(ProgramBuilder, SchemaAndShapeErrorsAreRecorded) {
  {
    ProgramBuilder b;
    b.AppendOp("pb_no_such_op", {}, {}, {"Out"});
    EXPECT_THAT(b.status(), StatusIs(absl::StatusCode::kNotFound, HasSubstr("pb_no_such_op")));
  }
  {
    ProgramBuilder b;
    Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
    b.AppendOp("pb_widen", {{"X", {x}}}, {{"repeat", int64_t{0}}}, {"Out"});
    EXPECT_THAT(b.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("op 'pb_widen': repeat must be >= 1, got 0")));
    EXPECT_FALSE(b.main_program().block().HasVar("pb_widen_0.tmp_0"));
  }
  {
    ProgramBuilder b;
    auto guard = b.device_guard("gpu:x");
    EXPECT_THAT(b.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("device_guard: place \"gpu:x\" is not valid: bad "
                                               "device index 'x'")));
    EXPECT_EQ(b.current_device(), "");  // unchanged
  }
}

TEST(ProgramBuilder, DeviceGuardTakesOnlyExactPlaceStrings) {
  for (const char* bad : {"GPU", "Gpu:0", "CPU", " cpu", "cpu ", "gpu:01", " "}) {
    ProgramBuilder b;
    auto guard = b.device_guard(bad);
    EXPECT_THAT(
        b.status(),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 AllOf(HasSubstr(absl::StrCat("device_guard: place \"", bad, "\" is not valid: ")),
                       HasSubstr("expected \"cpu\", \"<type>\" or \"<type>:<index>\""))))
        << "'" << bad << "'";
    EXPECT_EQ(b.current_device(), "");
  }
  for (const char* good : {"cpu", "cpu:0", "gpu", "gpu:1", ""}) {
    ProgramBuilder b;
    auto guard = b.device_guard(good);
    EXPECT_OK(b.status()) << good;
    EXPECT_EQ(b.current_device(), good);
  }
}

TEST(Block, AVariableIsDeclaredOnceOrAgainIdentically) {
  Block block;
  VarDesc w{"w", DataType::kFloat32, Shape({2, 3})};
  w.persistable = true;
  w.is_parameter = true;
  ASSERT_OK(block.AddVar(w));
  EXPECT_OK(block.AddVar(w));  // the same declaration: nothing changes
  VarDesc other = w;
  other.shape = Shape({3, 2});
  EXPECT_THAT(block.AddVar(other),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "variable 'w' is declared twice, as float32[2, 3] persistable parameter "
                       "and as float32[3, 2] persistable parameter"));
  other = w;
  other.dtype = DataType::kInt64;
  other.kind = VarKind::kSelectedRows;
  other.is_parameter = false;
  other.stop_gradient = true;
  EXPECT_THAT(block.AddVar(other),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("as float32[2, 3] persistable parameter and as int64[2, 3] "
                                 "selected_rows persistable stop_gradient")));
  ASSERT_EQ(block.vars().size(), 1u);
  EXPECT_EQ(block.vars()[0], w);  // the first declaration stands
  // SetVar, for passes that rewrite a program, replaces it.
  block.SetVar(other);
  EXPECT_EQ(*block.FindVar("w"), other);
  EXPECT_EQ(block.vars().size(), 1u);
}

TEST(ProgramBuilder, ConflictingDeclarationsAreRefused) {
  {
    // Two main programs sharing one startup program (Python's program_guard):
    // the same parameter in both is fine, a different one is not.
    ProgramBuilder first;
    first.CreateParameter("w", DataType::kFloat32, Shape({2, 3}), Initializer::Constant(1));
    ProgramBuilder second;
    second.startup_program() = first.startup_program();
    second.CreateParameter("w", DataType::kFloat32, Shape({2, 3}), Initializer::Constant(1));
    EXPECT_OK(second.status());
    ProgramBuilder third;
    third.startup_program() = first.startup_program();
    EXPECT_FALSE(third.CreateParameter("w", DataType::kFloat32, Shape({3, 3})).valid());
    EXPECT_THAT(third.status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "parameter 'w' in the startup program: variable 'w' is declared twice, "
                         "as float32[2, 3] persistable parameter and as float32[3, 3] "
                         "persistable parameter"));
    EXPECT_FALSE(third.main_program().block().HasVar("w"));  // neither program changed
    EXPECT_EQ(third.startup_program().block().FindVar("w")->shape, Shape({2, 3}));
  }
  {
    ProgramBuilder b;
    b.CreatePersistableConstant("lr", DataType::kFloat32, Shape({1}), 0.5);
    EXPECT_FALSE(b.CreatePersistableConstant("lr", DataType::kFloat32, Shape({1}), 0.25).valid());
    EXPECT_THAT(b.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     "persistable constant 'lr' already exists"));
    EXPECT_EQ(b.startup_program().block().ops().size(), 1u);  // one initialiser
  }
  {
    // An output naming an existing variable writes it in place: it keeps its
    // declaration, and must keep its dtype and shape.
    ProgramBuilder b;
    Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
    Var w = b.CreateParameter("w", DataType::kFloat32, Shape({2, 4}));
    b.AppendOp("pb_widen", {{"X", {x}}}, {}, {"Out"}, {{"Out", "w"}});
    ASSERT_OK(b.status());
    EXPECT_TRUE(b.main_program().block().FindVar("w")->is_parameter);
    EXPECT_TRUE(
        b.AppendOp("pb_widen", {{"X", {x}}}, {{"repeat", int64_t{3}}}, {"Out"}, {{"Out", w.name}})
            .empty());
    EXPECT_THAT(b.status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "op 'pb_widen': output 'Out': variable 'w' is declared twice, as "
                         "float32[2, 4] persistable parameter and as float32[2, 6] persistable "
                         "parameter (what the op gives)"));
    EXPECT_EQ(b.main_program().block().ops().size(), 1u);
  }
}

TEST(ProgramBuilder, DataIsFedAndNeverTrained) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kInt64, Shape({-1, 1}));
  const VarDesc* d = b.main_program().block().FindVar(x.name);
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(d->stop_gradient);
  EXPECT_FALSE(d->persistable);
  EXPECT_FALSE(b.startup_program().block().HasVar("x"));
  b.Data("x", DataType::kInt64, Shape({1}));
  EXPECT_THAT(b.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("Data: variable 'x' already exists")));
}

TEST(ProgramBuilder, ParameterLivesInBothProgramsAndIsInitialisedOnItsDevice) {
  ProgramBuilder b;
  {
    auto guard = b.device_guard("cpu");
    b.CreateParameter("table", DataType::kFloat32, Shape({10, 4}),
                      Initializer::Uniform(-0.5, 0.25, /*seed=*/7));
  }
  b.CreatePersistableConstant("lr", DataType::kFloat32, Shape({1}), 0.125);
  ASSERT_OK(b.status());
  for (Program* p : {&b.main_program(), &b.startup_program()}) {
    const VarDesc* t = p->block().FindVar("table");
    ASSERT_NE(t, nullptr);
    EXPECT_TRUE(t->persistable);
    EXPECT_TRUE(t->is_parameter);
    EXPECT_EQ(t->shape, Shape({10, 4}));
    const VarDesc* lr = p->block().FindVar("lr");
    ASSERT_NE(lr, nullptr);
    EXPECT_TRUE(lr->persistable);
    EXPECT_FALSE(lr->is_parameter);
    EXPECT_TRUE(lr->stop_gradient);
  }
  const std::vector<OpDesc>& init = b.startup_program().block().ops();
  ASSERT_EQ(init.size(), 2u);
  EXPECT_EQ(init[0].type, "uniform_random");
  EXPECT_EQ(init[0].Output("Out"), "table");
  EXPECT_EQ(init[0].op_device, "cpu");
  EXPECT_EQ(AttrOf<double>(init[0], "min"), -0.5);
  EXPECT_EQ(AttrOf<double>(init[0], "max"), 0.25);
  EXPECT_EQ(AttrOf<int64_t>(init[0], "seed"), 7);
  EXPECT_EQ(AttrOf<std::vector<int64_t>>(init[0], "shape"), (std::vector<int64_t>{10, 4}));
  EXPECT_EQ(init[1].type, "fill_constant");
  EXPECT_EQ(init[1].op_device, "");
  EXPECT_EQ(AttrOf<double>(init[1], "value"), 0.125);
  EXPECT_EQ(init[1].attrs.count("seed"), 0u);  // constants draw nothing
  EXPECT_TRUE(b.main_program().block().ops().empty());
}

TEST(ProgramBuilder, BadOrDuplicateParametersAreRefused) {
  {
    ProgramBuilder b;
    b.CreateParameter("w", DataType::kFloat32, Shape({3, -2}));
    EXPECT_THAT(b.status(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("parameter 'w'")));
  }
  {
    ProgramBuilder b;
    b.CreateParameter("w", DataType::kFloat32, Shape({3}));
    b.CreateParameter("w", DataType::kFloat32, Shape({3}));
    EXPECT_THAT(b.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("parameter 'w' already exists")));
    EXPECT_EQ(b.startup_program().block().ops().size(), 1u);
  }
}

TEST(ProgramBuilder, XavierInitialisersTakeTheirScaleFromTheFans) {
  ProgramBuilder b;
  b.CreateParameter("fc", DataType::kFloat32, Shape({20, 10}), Initializer::XavierUniform());
  // A filter [out_c = 8, in_c = 3, 5, 5]: fan_in 3 * 25, fan_out 8 * 25.
  b.CreateParameter("conv", DataType::kFloat32, Shape({8, 3, 5, 5}), Initializer::XavierNormal());
  b.CreateParameter("bias", DataType::kFloat32, Shape({6}), Initializer::XavierUniform(11));
  ASSERT_OK(b.status());
  const std::vector<OpDesc>& init = b.startup_program().block().ops();
  ASSERT_EQ(init.size(), 3u);
  EXPECT_EQ(init[0].type, "uniform_random");
  EXPECT_DOUBLE_EQ(AttrOf<double>(init[0], "max"), std::sqrt(6.0 / 30));
  EXPECT_DOUBLE_EQ(AttrOf<double>(init[0], "min"), -std::sqrt(6.0 / 30));
  EXPECT_EQ(init[1].type, "gaussian_random");
  EXPECT_DOUBLE_EQ(AttrOf<double>(init[1], "std"), std::sqrt(2.0 / (75 + 200)));
  EXPECT_EQ(AttrOf<double>(init[1], "mean"), 0.0);
  EXPECT_DOUBLE_EQ(AttrOf<double>(init[2], "max"), std::sqrt(6.0 / 12));  // rank 1: 6 and 6
  EXPECT_EQ(AttrOf<int64_t>(init[2], "seed"), 11);
  // Seed 0 takes the parameter name's DefaultSeed: different per parameter.
  EXPECT_EQ(AttrOf<int64_t>(init[0], "seed"), DefaultSeed("fc"));
  EXPECT_EQ(AttrOf<int64_t>(init[1], "seed"), DefaultSeed("conv"));
}

TEST(DefaultSeed, IsFnv1aOfTheNameShiftedRight) {
  EXPECT_EQ(DefaultSeed(""), static_cast<int64_t>(0xcbf29ce484222325u >> 1));
  EXPECT_EQ(DefaultSeed("a"), static_cast<int64_t>(0xaf63dc4c8601ec8cu >> 1));
  EXPECT_NE(DefaultSeed("fc_0.w_0"), DefaultSeed("fc_1.w_0"));
  EXPECT_GE(DefaultSeed("any name at all"), 0);
}

TEST(ProgramBuilder, UniqueNameSkipsNamesAlreadyTaken) {
  ProgramBuilder b;
  b.Data("lr_0.tmp_0", DataType::kFloat32, Shape({1}));
  b.CreatePersistableConstant("lr_1.tmp_0", DataType::kFloat32, Shape({1}), 1);
  EXPECT_EQ(b.UniqueName("lr"), "lr_2.tmp_0");
  EXPECT_EQ(b.UniqueName("lr"), "lr_3.tmp_0");
  EXPECT_EQ(b.UniqueName("other"), "other_0.tmp_0");
}

}  // namespace
}  // namespace tandem
