#include "framework/placement/program_validation.h"

#include "absl/strings/str_cat.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/program/program_builder.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;

// x (fed) -> scale -> y -> scale -> z, plus a persistable w read by an add.
struct Fixture {
  ProgramBuilder b;
  Var x, y, z, w, sum;
  Fixture() {
    x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
    y = b.Scale(x, 2.0);
    z = b.Scale(y, 3.0);
    w = b.CreatePersistableConstant("w", DataType::kFloat32, Shape({2, 2}), 1.0);
    sum = b.ElementwiseAdd(z, w);
  }
  Program& program() { return b.main_program(); }
  OpDesc& op(int i) { return b.main_program().block().mutable_ops()[i]; }
};

Scope ScopeWithW() {
  Scope scope;
  scope.Var("w")->set(*Tensor::Allocate(CpuAllocator::Default(), DataType::kFloat32, {2, 2}));
  return scope;
}

TEST(ProgramValidation, AWellFormedProgramPasses) {
  Fixture f;
  ASSERT_OK(f.b.status());
  EXPECT_OK(ValidateProgramForRun(f.program(), ScopeWithW(), {"x"}));
}

TEST(ProgramValidation, TwoVariablesInASingleValuedArgument) {
  Fixture f;
  f.op(0).inputs["X"] = {"x", "x"};
  EXPECT_THAT(ValidateProgramForRun(f.program(), ScopeWithW(), {"x"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("#0")));
}

TEST(ProgramValidation, TwoOutputsForASingleOutput) {
  Fixture f;
  f.op(1).outputs["Out"] = {f.z.name, f.y.name};
  EXPECT_THAT(ValidateProgramForRun(f.program(), ScopeWithW(), {"x"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("#1")));
}

TEST(ProgramValidation, UnknownArgumentAndAttributeAreNamed) {
  Fixture f;
  f.op(0).inputs["Bias"] = {"x"};
  absl::Status s = ValidateProgramForRun(f.program(), ScopeWithW(), {"x"});
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Bias")));
  Fixture g;
  g.op(1).attrs["scael"] = 2.0;
  EXPECT_THAT(ValidateProgramForRun(g.program(), ScopeWithW(), {"x"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown attribute 'scael'")));
}

TEST(ProgramValidation, UnknownOpTypeIsNotFoundWithItsPosition) {
  Fixture f;
  f.op(1).type = "scael";
  EXPECT_THAT(ValidateProgramForRun(f.program(), ScopeWithW(), {"x"}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("op 'scael' (#1)")));
}

TEST(ProgramValidation, AMisspelledVariableIsNamed) {
  Fixture f;
  f.op(1).inputs["X"] = {"y_typo"};
  EXPECT_THAT(ValidateProgramForRun(f.program(), ScopeWithW(), {"x"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("op 'scale' (#1) argument X names variable 'y_typo', which "
                                 "the program does not declare")));
}

TEST(ProgramValidation, ReadBeforeAnyValueNamesTheCause) {
  Fixture f;
  // Not fed: x has no value.
  EXPECT_THAT(ValidateProgramForRun(f.program(), ScopeWithW(), {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("op 'scale' (#0) reads 'x' (argument X) before it has a value: "
                                 "no earlier op writes it and it is not fed")));
  // w persistable but the scope is empty (startup program not run).
  EXPECT_THAT(ValidateProgramForRun(f.program(), Scope(), {"x"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("reads 'w' (argument Y) before it has a value: it is "
                                 "persistable but not initialised in the scope")));
}

TEST(ProgramValidation, AnAbsurdDeclaredSizeIsRefusedBeforeAllocating) {
  ProgramBuilder b;
  const int64_t rows = int64_t{1} << 40, cols = int64_t{1} << 20;  // 2^60 floats: 2^62 bytes
  Var huge = b.FillConstant({rows, cols}, DataType::kFloat32, 1.0);
  Executor exe(CPUPlace());
  Scope scope;
  absl::Status s = exe.Prepare(b.main_program(), scope, {}, {huge.name}).status();
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument,
                          HasSubstr("op 'fill_constant' (#0) output Out")));
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument,
                          HasSubstr("1152921504606846976 elements of 4 bytes, more than this "
                                    "host's")));
  // The same op with a size the host holds prepares.
  ProgramBuilder small;
  Var fine = small.FillConstant({1024, 1024}, DataType::kFloat32, 1.0);
  EXPECT_OK(exe.Prepare(small.main_program(), scope, {}, {fine.name}).status());
}

VarDesc& Declared(ProgramBuilder& b, const Var& v) {
  return *b.main_program().block().FindVar(v.name);
}

TEST(ProgramValidation, AnOutputFilledWithOtherDimsThanDeclaredIsNamedWithBothShapes) {
  ProgramBuilder b;
  Var filled = b.FillConstant({3, 3}, DataType::kFloat32, 1.0);
  Declared(b, filled).shape = Shape({2, 2});
  Executor exe(CPUPlace());
  Scope scope;
  // Before the check this prepared and ran, making a [3, 3] tensor.
  EXPECT_THAT(exe.Prepare(b.main_program(), scope, {}, {filled.name}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(absl::StrCat("op 'fill_constant' (#0) output Out '", filled.name,
                                              "' is declared float32[2, 2] but the op makes it "
                                              "float32[3, 3]"))));
  Declared(b, filled).shape = Shape({3});  // another rank
  EXPECT_THAT(ValidateProgramForRun(b.main_program(), scope, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is declared float32[3] but the op makes it float32[3, 3]")));
}

TEST(ProgramValidation, AnOutputOfAnotherDtypeThanDeclaredIsNamed) {
  Fixture f;
  Declared(f.b, f.y).dtype = DataType::kInt64;
  EXPECT_THAT(ValidateProgramForRun(f.program(), ScopeWithW(), {"x"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(absl::StrCat("op 'scale' (#0) output Out '", f.y.name,
                                              "' is declared int64[2, 2] but the op makes it "
                                              "float32[2, 2]"))));
}

TEST(ProgramValidation, UnknownDeclaredDimsAreRefinedForLaterOps) {
  ProgramBuilder b;
  Var filled = b.FillConstant({3, 2}, DataType::kFloat32, 1.0);
  Var scaled = b.Scale(filled, 2.0);
  ASSERT_OK(b.status());
  Declared(b, filled).shape = Shape({-1, 2});
  Declared(b, scaled).shape = Shape({-1, 2});
  Scope scope;
  EXPECT_OK(ValidateProgramForRun(b.main_program(), scope, {}));  // -1 takes 3
  // scale reads the refined [3, 2], not the declared [-1, 2], so a [4, 2]
  // declaration of its output disagrees.
  Declared(b, scaled).shape = Shape({4, 2});
  EXPECT_THAT(ValidateProgramForRun(b.main_program(), scope, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(absl::StrCat("op 'scale' (#1) output Out '", scaled.name,
                                              "' is declared float32[4, 2] but the op makes it "
                                              "float32[3, 2]"))));
}

TEST(ProgramValidation, AFedBatchDimStaysOpen) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({-1, 4}));
  Var y = b.Scale(x, 2.0);
  ASSERT_OK(b.status());
  Declared(b, y).shape = Shape({8, 4});  // a fed batch of 8 would make this
  EXPECT_OK(ValidateProgramForRun(b.main_program(), Scope(), {"x"}));
  Declared(b, y).shape = Shape({8, 5});
  EXPECT_THAT(ValidateProgramForRun(b.main_program(), Scope(), {"x"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is declared float32[8, 5] but the op makes it float32[-1, 4]")));
}

TEST(ProgramValidation, InputsTheOpCannotTakeAreRefusedAtPrepare) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 3}));
  Var w = b.Data("w", DataType::kFloat32, Shape({3, 5}));
  b.Matmul(x, w);
  ASSERT_OK(b.status());
  Declared(b, w).shape = Shape({4, 5});
  EXPECT_THAT(ValidateProgramForRun(b.main_program(), Scope(), {"x", "w"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("op 'matmul' (#0): shape inference on the declared shapes")));
}

TEST(ProgramValidation, AnAbsurdInferredSizeIsRefusedBeforeAllocating) {
  ProgramBuilder b;
  const int64_t rows = int64_t{1} << 40, cols = int64_t{1} << 20;
  Var huge = b.FillConstant({rows, cols}, DataType::kFloat32, 1.0);
  ASSERT_OK(b.status());
  Declared(b, huge).shape = Shape({-1, cols});  // only inference knows the rows
  EXPECT_THAT(ValidateProgramForRun(b.main_program(), Scope(), {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(absl::StrCat("output Out '", huge.name,
                                              "' is inferred as float32[1099511627776, 1048576]: "
                                              "1152921504606846976 elements of 4 bytes"))));
}

TEST(ProgramValidation, ADeclaredShapeThatOverflowsIsNamedBeforeInference) {
  Fixture f;
  const int64_t big = int64_t{1} << 40;
  Declared(f.b, f.z).shape = Shape({big, -1, big});
  EXPECT_THAT(ValidateProgramForRun(f.program(), ScopeWithW(), {"x"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(absl::StrCat("variable '", f.z.name,
                                              "' is declared float32[1099511627776, -1, "
                                              "1099511627776]: shape [1099511627776, -1, "
                                              "1099511627776]: element count overflows int64"))));
}

TEST(ProgramValidation, AFeedLargerThanTheHostIsRefusedAtPrepare) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({int64_t{1} << 40, 4}));  // 2^42 floats: 16 TiB
  Var y = b.Scale(x, 2.0);
  ASSERT_OK(b.status());
  // Before, only the feed-shape check at Run caught it.
  EXPECT_THAT(ValidateProgramForRun(b.main_program(), Scope(), {"x"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("variable 'x' (no op writes it: a feed) is declared "
                                 "float32[1099511627776, 4]: 4398046511104 elements of 4 bytes, "
                                 "more than this host's")));
  Declared(b, x).shape = Shape({-1, 4});  // a batch of any size
  Declared(b, y).shape = Shape({-1, 4});
  EXPECT_OK(ValidateProgramForRun(b.main_program(), Scope(), {"x"}));
}

TEST(ProgramValidation, PrepareRefusesBeforePlacing) {
  Fixture f;
  f.op(1).inputs["X"] = {"y_typo"};
  Executor exe(CPUPlace());
  Scope scope = ScopeWithW();
  // Without validation this was NotFound "no kernel for op 'scale' on cpu with X=?".
  EXPECT_THAT(exe.Prepare(f.program(), scope, {"x"}, {}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'y_typo'")));
}

// check_numerics (not validation, but the same "refuse bad work early"
// family): the first op whose output is not finite is named, on every place.
TEST(CheckNumerics, NamesTheFirstOpWithANonFiniteOutputOnEveryPlace) {
  for (const char* place : {"cpu", "sim:0"}) {
    SCOPED_TRACE(place);
    ProgramBuilder b;
    Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
    Var zero = b.FillConstant({2, 2}, DataType::kFloat32, 0.0);
    Var q = b.ElementwiseDiv(x, zero);  // x / 0: inf where x != 0, nan where x == 0
    Var r = b.Scale(q, 2.0);
    ASSERT_OK(b.status());
    ExecutorOptions options;
    options.check_numerics = true;
    Executor exe(*ParsePlace(place), options);
    Scope scope;
    Tensor xv = *Tensor::Allocate(CpuAllocator::Default(), DataType::kFloat32, {2, 2});
    for (int i = 0; i < 4; ++i) xv.data<float>()[i] = i < 2 ? 0.0f : 1.0f;  // nan at 0
    absl::Status s = exe.Run(b.main_program(), &scope, {{"x", xv}}, {r.name}).status();
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("op 'elementwise_div'")));
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument,
                            HasSubstr(absl::StrCat("output Out '", q.name,
                                                   "' [2, 2] holds nan at flat index 0"))));
    // Finite outputs pass and keep their values.
    ProgramBuilder fine;
    Var y = fine.Data("x", DataType::kFloat32, Shape({2, 2}));
    Var z = fine.Scale(y, 3.0);
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                         exe.Run(fine.main_program(), &scope, {{"x", xv}}, {z.name}));
    EXPECT_FLOAT_EQ(out[0].data<float>()[3], 3.0f);
    // 16-bit outputs are checked too: 70000 overflows float16 to inf.
    ProgramBuilder half;
    Var h = half.Cast(half.Data("x", DataType::kFloat32, Shape({2, 2})), DataType::kFloat16);
    ASSERT_OK(half.status());
    xv.data<float>()[1] = 70000.0f;
    EXPECT_THAT(exe.Run(half.main_program(), &scope, {{"x", xv}}, {h.name}).status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("op 'cast'"),
                               HasSubstr(absl::StrCat("output Out '", h.name,
                                                      "' [2, 2] holds inf at flat index 1")))));
  }
}

}  // namespace
}  // namespace tandem
