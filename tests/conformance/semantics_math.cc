#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/device/device.h"
#include "framework/kernel/eager.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/tensor/tensor.h"
#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "tests/conformance/semantics.h"

namespace tandem {

namespace {

using semantics::Op;
using semantics::Values;
using semantics::Var;
using ::testing::AllOf;

// Runs `op` on `place`; every bound output, copied to the host.
absl::StatusOr<std::map<std::string, Tensor>> RunOp(const Place& place, OpDesc op,
                                                    const EagerInputs& inputs) {
  ASSIGN_OR_RETURN(EagerOutputs outputs, RunOpEager(std::move(op), place, inputs));
  std::map<std::string, Tensor> host;
  for (const auto& [arg, vars] : outputs) {
    if (vars.empty()) continue;  // deliberately unbound
    const Tensor& t = vars[0].tensor();
    if (t.place() != place) {
      return absl::InternalError(absl::StrCat(arg, " is on ", t.place().ToString()));
    }
    ASSIGN_OR_RETURN(Tensor on_host, CopyTensorTo(t, CPUPlace()));
    host.emplace(arg, std::move(on_host));
  }
  return host;
}

// Runs `op` and returns its "Out".
absl::StatusOr<Tensor> RunOut(const Place& place, OpDesc op, const EagerInputs& inputs) {
  ASSIGN_OR_RETURN(auto outputs, RunOp(place, std::move(op), inputs));
  return outputs.at("Out");
}

// ---------------------------------------------------------------- fill_constant

TEST_P(KernelSemantics, FillConstantConvertsValueToEveryDtype) {
  auto fill = [&](DataType dtype, double value, std::vector<int64_t> shape) {
    return RunOut(GetParam(),
                  Op("fill_constant", {{"shape", shape}, {"value", value}, {"dtype", dtype}}), {});
  };
  ASSERT_OK_AND_ASSIGN(Tensor f32, fill(DataType::kFloat32, 2.5, {2, 3}));
  EXPECT_EQ(f32.shape(), Shape({2, 3}));
  EXPECT_EQ(f32.ToVector<float>(), std::vector<float>(6, 2.5f));
  ASSERT_OK_AND_ASSIGN(Tensor f64, fill(DataType::kFloat64, 0.1, {3}));
  EXPECT_EQ(f64.ToVector<double>(), std::vector<double>(3, 0.1));
  ASSERT_OK_AND_ASSIGN(Tensor i32, fill(DataType::kInt32, 2.7, {2}));
  EXPECT_EQ(i32.ToVector<int32_t>(), std::vector<int32_t>({2, 2}));
  ASSERT_OK_AND_ASSIGN(Tensor i64, fill(DataType::kInt64, -3.7, {1}));
  EXPECT_EQ(i64.ToVector<int64_t>(), std::vector<int64_t>({-3}));
  ASSERT_OK_AND_ASSIGN(Tensor yes, fill(DataType::kBool, 0.5, {2}));
  EXPECT_EQ(yes.ToVector<bool>(), std::vector<bool>({true, true}));
  ASSERT_OK_AND_ASSIGN(Tensor no, fill(DataType::kBool, 0.0, {1}));
  EXPECT_EQ(no.ToVector<bool>(), std::vector<bool>({false}));
}

TEST_P(KernelSemantics, FillConstantScalarAndEmpty) {
  ASSERT_OK_AND_ASSIGN(
      Tensor scalar,
      RunOut(GetParam(),
             Op("fill_constant",
                {{"shape", std::vector<int64_t>{}}, {"value", 7.0}, {"dtype", DataType::kInt64}}),
             {}));
  EXPECT_EQ(scalar.shape(), Shape());
  EXPECT_EQ(scalar.ToVector<int64_t>(), std::vector<int64_t>({7}));
  ASSERT_OK_AND_ASSIGN(
      Tensor empty,
      RunOut(GetParam(), Op("fill_constant", {{"shape", std::vector<int64_t>{0, 3}}}), {}));
  EXPECT_EQ(empty.shape(), Shape({0, 3}));
  EXPECT_EQ(empty.NumElements(), 0);
}

TEST_P(KernelSemantics, FillConstantNegativeDimIsInvalidArgument) {
  EXPECT_THAT(RunOut(GetParam(), Op("fill_constant", {{"shape", std::vector<int64_t>{2, -1}}}), {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("op 'fill_constant': attribute 'shape'"), HasSubstr("-1"))));
}

// -------------------------------------------------------------- elementwise_add

TEST_P(KernelSemantics, AddSameShapeRowAndScalar) {
  const Variable x = Var<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  ASSERT_OK_AND_ASSIGN(Tensor same,
                       RunOut(GetParam(), Op("elementwise_add"), {{"X", {x}}, {"Y", {x}}}));
  EXPECT_EQ(same.ToVector<float>(), std::vector<float>({2, 4, 6, 8, 10, 12}));
  ASSERT_OK_AND_ASSIGN(Tensor row, RunOut(GetParam(), Op("elementwise_add"),
                                          {{"X", {x}}, {"Y", {Var<float>({3}, {10, 20, 30})}}}));
  EXPECT_EQ(row.shape(), Shape({2, 3}));
  EXPECT_EQ(row.ToVector<float>(), std::vector<float>({11, 22, 33, 14, 25, 36}));
  ASSERT_OK_AND_ASSIGN(Tensor scalar, RunOut(GetParam(), Op("elementwise_add"),
                                             {{"X", {x}}, {"Y", {Var<float>({}, {0.5f})}}}));
  EXPECT_EQ(scalar.shape(), Shape({2, 3}));
  EXPECT_EQ(scalar.ToVector<float>(), std::vector<float>({1.5, 2.5, 3.5, 4.5, 5.5, 6.5}));
}

TEST_P(KernelSemantics, AddAxisAlignsYInsideX) {
  // X [2, 3, 2] + Y [3] at axis 1: Y[j] is added to X[i, j, k].
  std::vector<int64_t> xv(12);
  for (int i = 0; i < 12; ++i) xv[i] = i;
  ASSERT_OK_AND_ASSIGN(Tensor out, RunOut(GetParam(), Op("elementwise_add", {{"axis", int64_t{1}}}),
                                          {{"X", {Var<int64_t>({2, 3, 2}, xv)}},
                                           {"Y", {Var<int64_t>({3}, {100, 200, 300})}}}));
  EXPECT_EQ(out.shape(), Shape({2, 3, 2}));
  EXPECT_EQ(out.ToVector<int64_t>(), std::vector<int64_t>({100, 101, 202, 203, 304, 305,  //
                                                           106, 107, 208, 209, 310, 311}));
}

TEST_P(KernelSemantics, AddBroadcastsBothSidesAndHigherRankY) {
  ASSERT_OK_AND_ASSIGN(Tensor outer, RunOut(GetParam(), Op("elementwise_add"),
                                            {{"X", {Var<int32_t>({3, 1}, {1, 2, 3})}},
                                             {"Y", {Var<int32_t>({1, 4}, {10, 20, 30, 40})}}}));
  EXPECT_EQ(outer.shape(), Shape({3, 4}));
  EXPECT_EQ(outer.ToVector<int32_t>(),
            std::vector<int32_t>({11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43}));
  ASSERT_OK_AND_ASSIGN(Tensor wider,
                       RunOut(GetParam(), Op("elementwise_add"),
                              {{"X", {Var<double>({3}, {1, 2, 3})}},
                               {"Y", {Var<double>({2, 3}, {10, 20, 30, 40, 50, 60})}}}));
  EXPECT_EQ(wider.shape(), Shape({2, 3}));
  EXPECT_EQ(wider.ToVector<double>(), std::vector<double>({11, 22, 33, 41, 52, 63}));
}

TEST_P(KernelSemantics, AddZeroDAndEmpty) {
  ASSERT_OK_AND_ASSIGN(Tensor scalar,
                       RunOut(GetParam(), Op("elementwise_add"),
                              {{"X", {Var<double>({}, {1.25})}}, {"Y", {Var<double>({}, {2})}}}));
  EXPECT_EQ(scalar.shape(), Shape());
  EXPECT_EQ(scalar.ToVector<double>(), std::vector<double>({3.25}));
  ASSERT_OK_AND_ASSIGN(
      Tensor empty, RunOut(GetParam(), Op("elementwise_add"),
                           {{"X", {Var<float>({0, 3}, {})}}, {"Y", {Var<float>({3}, {1, 2, 3})}}}));
  EXPECT_EQ(empty.shape(), Shape({0, 3}));
}

template <typename T>
void CheckAddOddAndLarge(const Place& place) {
  SCOPED_TRACE(DataTypeName(DataTypeOf<T>()));
  // 1023 elements plus a scalar; [300, 257] plus a row, big enough to be
  // split into parallel tasks on threaded backends.
  for (const auto& [xs, ys] : {std::pair<Shape, Shape>{Shape({1023}), Shape({1})},
                               std::pair<Shape, Shape>{Shape({300, 257}), Shape({257})}}) {
    const std::vector<T> x = Values<T>(xs.num_elements(), 1);
    const std::vector<T> y = Values<T>(ys.num_elements(), 2);
    ASSERT_OK_AND_ASSIGN(Tensor out, RunOut(place, Op("elementwise_add"),
                                            {{"X", {Var<T>(xs, x)}}, {"Y", {Var<T>(ys, y)}}}));
    const std::vector<T> got = out.ToVector<T>();
    ASSERT_EQ(got.size(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(got[i], static_cast<T>(x[i] + y[i % y.size()])) << xs << " at " << i;
    }
  }
}

TEST_P(KernelSemantics, AddOddAndLargeSizesEveryDtype) {
  CheckAddOddAndLarge<float>(GetParam());
  CheckAddOddAndLarge<double>(GetParam());
  CheckAddOddAndLarge<int32_t>(GetParam());
  CheckAddOddAndLarge<int64_t>(GetParam());
}

TEST_P(KernelSemantics, AddBadInputIsInvalidArgumentNamingOpAndShapes) {
  EXPECT_THAT(RunOut(GetParam(), Op("elementwise_add"),
                     {{"X", {Var<float>({2, 3}, Values<float>(6, 0))}},
                      {"Y", {Var<double>({3}, {1, 2, 3})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'elementwise_add': X is float32[2, 3] but Y is "
                       "float64[3]; cast one of them"));
  EXPECT_THAT(RunOut(GetParam(), Op("elementwise_add"),
                     {{"X", {Var<float>({2, 3}, Values<float>(6, 0))}},
                      {"Y", {Var<float>({4}, {1, 2, 3, 4})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'elementwise_add': X [2, 3] and Y [4] cannot be "
                       "broadcast (dim -1: 3 vs 4)"));
  EXPECT_THAT(RunOut(GetParam(), Op("elementwise_add", {{"axis", int64_t{2}}}),
                     {{"X", {Var<float>({2, 3}, Values<float>(6, 0))}},
                      {"Y", {Var<float>({3}, {1, 2, 3})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("op 'elementwise_add': axis 2 is out of range for X [2, 3]")));
}

// --------------------------------------------------------- elementwise_add_grad

TEST_P(KernelSemantics, AddGradSumsOverBroadcastDims) {
  const std::vector<float> g = {1, 2, 3, 4, 5, 6};
  ASSERT_OK_AND_ASSIGN(auto out, RunOp(GetParam(), Op("elementwise_add_grad"),
                                       {{"X", {Var<float>({2, 3}, Values<float>(6, 0))}},
                                        {"Y", {Var<float>({3}, {0, 0, 0})}},
                                        {"Out@GRAD", {Var<float>({2, 3}, g)}}}));
  EXPECT_EQ(out.at("X@GRAD").shape(), Shape({2, 3}));
  EXPECT_EQ(out.at("X@GRAD").ToVector<float>(), g);
  EXPECT_EQ(out.at("Y@GRAD").shape(), Shape({3}));
  EXPECT_EQ(out.at("Y@GRAD").ToVector<float>(), std::vector<float>({5, 7, 9}));
}

TEST_P(KernelSemantics, AddGradWithAxisAndBroadcastX) {
  // X [2, 3, 2], Y [3] at axis 1: dY[j] = sum over i, k of G[i, j, k].
  std::vector<int32_t> g(12);
  for (int i = 0; i < 12; ++i) g[i] = i;
  ASSERT_OK_AND_ASSIGN(auto out,
                       RunOp(GetParam(), Op("elementwise_add_grad", {{"axis", int64_t{1}}}),
                             {{"X", {Var<int32_t>({2, 3, 2}, std::vector<int32_t>(12))}},
                              {"Y", {Var<int32_t>({3}, {0, 0, 0})}},
                              {"Out@GRAD", {Var<int32_t>({2, 3, 2}, g)}}}));
  EXPECT_EQ(out.at("Y@GRAD").ToVector<int32_t>(),
            std::vector<int32_t>({0 + 1 + 6 + 7, 2 + 3 + 8 + 9, 4 + 5 + 10 + 11}));
  // X [3, 1] and Y [1, 2] both broadcast to [3, 2].
  ASSERT_OK_AND_ASSIGN(auto both, RunOp(GetParam(), Op("elementwise_add_grad"),
                                        {{"X", {Var<double>({3, 1}, {0, 0, 0})}},
                                         {"Y", {Var<double>({1, 2}, {0, 0})}},
                                         {"Out@GRAD", {Var<double>({3, 2}, {1, 2, 3, 4, 5, 6})}}}));
  EXPECT_EQ(both.at("X@GRAD").shape(), Shape({3, 1}));
  EXPECT_EQ(both.at("X@GRAD").ToVector<double>(), std::vector<double>({3, 7, 11}));
  EXPECT_EQ(both.at("Y@GRAD").shape(), Shape({1, 2}));
  EXPECT_EQ(both.at("Y@GRAD").ToVector<double>(), std::vector<double>({9, 12}));
}

// A 16-bit add's gradients are Out@GRAD's bits, a sub's Y@GRAD those of
// 0 - Out@GRAD in float rounded back (exact: -0 becomes +0), whichever
// path a backend takes (its widened float32 path or a 16-bit copy); only
// bound outputs are written, and a broadcast Y still gets the sum.
template <typename T>
void ExpectAddSubGradBits(const Place& place) {
  SCOPED_TRACE(DataTypeName(DataTypeOf<T>()));
  const std::vector<float> values = {1.5f,   -0.0f, 0.0f,      3.0e-6f, -65504.0f,
                                     1e30f,  -2.5f, 0.333333f, 7.0f,    -1e-3f,
                                     100.0f, 0.5f,  -7.75f,    2.0f,    -1.0f};
  std::vector<T> g;
  for (float v : values) g.push_back(T(v));
  auto bits = [](const std::vector<T>& v) {
    std::vector<uint16_t> b;
    for (const T& e : v) b.push_back(e.bits);
    return b;
  };
  std::vector<T> flipped;
  for (const T& e : g) flipped.push_back(T(0.0f - static_cast<float>(e)));
  const std::vector<T> zeros(15, T(0.0f));
  for (const char* type : {"elementwise_add_grad", "elementwise_sub_grad"}) {
    SCOPED_TRACE(type);
    ASSERT_OK_AND_ASSIGN(auto both, RunOp(place, Op(type),
                                          {{"X", {Var<T>({3, 5}, zeros)}},
                                           {"Y", {Var<T>({3, 5}, zeros)}},
                                           {"Out@GRAD", {Var<T>({3, 5}, g)}}}));
    EXPECT_EQ(bits(both.at("X@GRAD").template ToVector<T>()), bits(g));
    const bool sub = std::string(type) == "elementwise_sub_grad";
    EXPECT_EQ(bits(both.at("Y@GRAD").template ToVector<T>()), bits(sub ? flipped : g));
    OpDesc only_y = Op(type);
    only_y.outputs["X@GRAD"] = {};
    only_y.outputs["Y@GRAD"] = {"y@GRAD"};
    ASSERT_OK_AND_ASSIGN(auto y_only, RunOp(place, only_y,
                                            {{"X", {Var<T>({3, 5}, zeros)}},
                                             {"Y", {Var<T>({3, 5}, zeros)}},
                                             {"Out@GRAD", {Var<T>({3, 5}, g)}}}));
    EXPECT_EQ(y_only.count("X@GRAD"), 0u);
    EXPECT_EQ(bits(y_only.at("Y@GRAD").template ToVector<T>()), bits(sub ? flipped : g));
  }
  // Y [5] broadcast over 3 rows: its gradient is a sum, X's still a copy.
  const std::vector<T> small = {T(1.0f), T(2.0f), T(-3.0f), T(0.5f), T(4.0f)};
  std::vector<T> tiled;
  for (int r = 0; r < 3; ++r) tiled.insert(tiled.end(), small.begin(), small.end());
  ASSERT_OK_AND_ASSIGN(auto broadcast, RunOp(place, Op("elementwise_add_grad"),
                                             {{"X", {Var<T>({3, 5}, zeros)}},
                                              {"Y", {Var<T>({5}, std::vector<T>(5, T(0.0f)))}},
                                              {"Out@GRAD", {Var<T>({3, 5}, tiled)}}}));
  EXPECT_EQ(bits(broadcast.at("X@GRAD").template ToVector<T>()), bits(tiled));
  std::vector<float> y_sum;
  for (const T& e : broadcast.at("Y@GRAD").template ToVector<T>()) {
    y_sum.push_back(static_cast<float>(e));
  }
  EXPECT_EQ(y_sum, std::vector<float>({3.0f, 6.0f, -9.0f, 1.5f, 12.0f}));
}

TEST_P(KernelSemantics, SixteenBitAddAndSubGradsAreOutGradsBits) {
  ExpectAddSubGradBits<bfloat16>(GetParam());
  ExpectAddSubGradBits<float16>(GetParam());
}

TEST_P(KernelSemantics, AddGradComputesOnlyBoundOutputs) {
  OpDesc op = Op("elementwise_add_grad");
  op.outputs["X@GRAD"] = {"x@GRAD"};
  op.outputs["Y@GRAD"] = {};  // not wanted
  ASSERT_OK_AND_ASSIGN(auto out, RunOp(GetParam(), op,
                                       {{"X", {Var<float>({2}, {0, 0})}},
                                        {"Y", {Var<float>({}, {0})}},
                                        {"Out@GRAD", {Var<float>({2}, {1, 2})}}}));
  EXPECT_EQ(out.count("Y@GRAD"), 0u);
  EXPECT_EQ(out.at("X@GRAD").ToVector<float>(), std::vector<float>({1, 2}));
}

TEST_P(KernelSemantics, AddGradLargeScalarAndEmpty) {
  // Y is a scalar: its gradient is the sum of all of G.
  const std::vector<double> g = Values<double>(300 * 257, 3);
  double total = 0;
  for (double v : g) total += v;
  ASSERT_OK_AND_ASSIGN(auto out, RunOp(GetParam(), Op("elementwise_add_grad"),
                                       {{"X", {Var<double>({300, 257}, g)}},
                                        {"Y", {Var<double>({}, {0})}},
                                        {"Out@GRAD", {Var<double>({300, 257}, g)}}}));
  EXPECT_EQ(out.at("Y@GRAD").shape(), Shape());
  EXPECT_NEAR(out.at("Y@GRAD").ToVector<double>()[0], total, 1e-9);
  EXPECT_EQ(out.at("X@GRAD").ToVector<double>(), g);
  // Empty G: the broadcast operand's gradient is zeros.
  ASSERT_OK_AND_ASSIGN(auto empty, RunOp(GetParam(), Op("elementwise_add_grad"),
                                         {{"X", {Var<float>({0, 3}, {})}},
                                          {"Y", {Var<float>({3}, {1, 1, 1})}},
                                          {"Out@GRAD", {Var<float>({0, 3}, {})}}}));
  EXPECT_EQ(empty.at("Y@GRAD").ToVector<float>(), std::vector<float>({0, 0, 0}));
  EXPECT_EQ(empty.at("X@GRAD").shape(), Shape({0, 3}));
}

TEST_P(KernelSemantics, AddGradWrongOutGradIsInvalidArgument) {
  EXPECT_THAT(RunOp(GetParam(), Op("elementwise_add_grad"),
                    {{"X", {Var<float>({2, 3}, Values<float>(6, 0))}},
                     {"Y", {Var<float>({3}, {0, 0, 0})}},
                     {"Out@GRAD", {Var<float>({3}, {1, 2, 3})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'elementwise_add_grad': Out@GRAD is float32[3], "
                       "expected float32[2, 3]"));
}

// ----------------------------------------------------------------------- matmul

TEST_P(KernelSemantics, MatmulHandComputed) {
  const Variable x = Var<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const Variable y = Var<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  ASSERT_OK_AND_ASSIGN(Tensor out, RunOut(GetParam(), Op("matmul"), {{"X", {x}}, {"Y", {y}}}));
  EXPECT_EQ(out.shape(), Shape({2, 2}));
  EXPECT_EQ(out.ToVector<float>(), std::vector<float>({58, 64, 139, 154}));
  // X^T with X [3, 2] = [[1, 4], [2, 5], [3, 6]], alpha 0.5.
  ASSERT_OK_AND_ASSIGN(Tensor t,
                       RunOut(GetParam(), Op("matmul", {{"transpose_X", true}, {"alpha", 0.5}}),
                              {{"X", {Var<double>({3, 2}, {1, 4, 2, 5, 3, 6})}},
                               {"Y", {Var<double>({3, 2}, {7, 8, 9, 10, 11, 12})}}}));
  EXPECT_EQ(t.ToVector<double>(), std::vector<double>({29, 32, 69.5, 77}));
}

TEST_P(KernelSemantics, MatmulGradHandComputed) {
  // Out = X * Y with X [1, 2], Y [2, 2]; G = [1, 1]:
  // X@GRAD = G * Y^T = [3, 7], Y@GRAD = X^T * G = [[5, 5], [6, 6]].
  ASSERT_OK_AND_ASSIGN(auto out, RunOp(GetParam(), Op("matmul_grad"),
                                       {{"X", {Var<float>({1, 2}, {5, 6})}},
                                        {"Y", {Var<float>({2, 2}, {1, 2, 3, 4})}},
                                        {"Out@GRAD", {Var<float>({1, 2}, {1, 1})}}}));
  EXPECT_EQ(out.at("X@GRAD").ToVector<float>(), std::vector<float>({3, 7}));
  EXPECT_EQ(out.at("Y@GRAD").ToVector<float>(), std::vector<float>({5, 5, 6, 6}));
}

TEST_P(KernelSemantics, MatmulEmptyInnerDimGivesZeros) {
  ASSERT_OK_AND_ASSIGN(Tensor out,
                       RunOut(GetParam(), Op("matmul"),
                              {{"X", {Var<float>({2, 0}, {})}}, {"Y", {Var<float>({0, 3}, {})}}}));
  EXPECT_EQ(out.shape(), Shape({2, 3}));
  EXPECT_EQ(out.ToVector<float>(), std::vector<float>(6, 0));
  ASSERT_OK_AND_ASSIGN(auto grads, RunOp(GetParam(), Op("matmul_grad"),
                                         {{"X", {Var<double>({2, 0, 2}, {})}},
                                          {"Y", {Var<double>({2, 3}, Values<double>(6, 0))}},
                                          {"Out@GRAD", {Var<double>({2, 0, 3}, {})}}}));
  // Y is shared by an empty batch: its gradient is zeros.
  EXPECT_EQ(grads.at("Y@GRAD").ToVector<double>(), std::vector<double>(6, 0));
  EXPECT_EQ(grads.at("X@GRAD").shape(), Shape({2, 0, 2}));
}

TEST_P(KernelSemantics, MatmulGradComputesOnlyBoundOutputs) {
  OpDesc op = Op("matmul_grad");
  op.outputs["X@GRAD"] = {};
  op.outputs["Y@GRAD"] = {"w@GRAD"};
  ASSERT_OK_AND_ASSIGN(auto out, RunOp(GetParam(), op,
                                       {{"X", {Var<float>({1, 2}, {5, 6})}},
                                        {"Y", {Var<float>({2, 2}, {1, 2, 3, 4})}},
                                        {"Out@GRAD", {Var<float>({1, 2}, {1, 1})}}}));
  EXPECT_EQ(out.count("X@GRAD"), 0u);
  EXPECT_EQ(out.at("Y@GRAD").ToVector<float>(), std::vector<float>({5, 5, 6, 6}));
}

TEST_P(KernelSemantics, MatmulBadInputIsInvalidArgumentNamingOpAndShapes) {
  EXPECT_THAT(RunOut(GetParam(), Op("matmul"),
                     {{"X", {Var<float>({2, 3}, Values<float>(6, 0))}},
                      {"Y", {Var<float>({4, 5}, Values<float>(20, 0))}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'matmul': inner dims differ: X [2, 3] has K=3, Y [4, 5] has K=4"));
  EXPECT_THAT(RunOut(GetParam(), Op("matmul"),
                     {{"X", {Var<float>({2, 3}, Values<float>(6, 0))}},
                      {"Y", {Var<double>({3, 2}, Values<double>(6, 0))}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'matmul': X is float32[2, 3] but Y is float64[3, 2]; cast one of them"));
  EXPECT_THAT(RunOut(GetParam(), Op("matmul"),
                     {{"X", {Var<float>({2, 2, 3}, Values<float>(12, 0))}},
                      {"Y", {Var<float>({3, 3, 2}, Values<float>(18, 0))}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("batch dims of X [2, 2, 3] and Y [3, 3, 2] differ")));
  EXPECT_THAT(RunOp(GetParam(), Op("matmul_grad"),
                    {{"X", {Var<float>({2, 3}, Values<float>(6, 0))}},
                     {"Y", {Var<float>({3, 2}, Values<float>(6, 0))}},
                     {"Out@GRAD", {Var<float>({2, 3}, Values<float>(6, 0))}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'matmul_grad': Out@GRAD is float32[2, 3], expected float32[2, 2]"));
}

// ------------------------------------------------------------------------ scale

TEST_P(KernelSemantics, ScaleFloatAndIntegerRules) {
  const AttrMap after = {{"scale", 2.0}, {"bias", 1.0}};
  const AttrMap before = {{"scale", 2.0}, {"bias", 1.0}, {"bias_after_scale", false}};
  ASSERT_OK_AND_ASSIGN(
      Tensor f, RunOut(GetParam(), Op("scale", after), {{"X", {Var<float>({3}, {1.5, -2, 0})}}}));
  EXPECT_EQ(f.ToVector<float>(), std::vector<float>({4, -3, 1}));
  ASSERT_OK_AND_ASSIGN(
      Tensor d, RunOut(GetParam(), Op("scale", before), {{"X", {Var<double>({2, 1}, {1.5, -2})}}}));
  EXPECT_EQ(d.shape(), Shape({2, 1}));
  EXPECT_EQ(d.ToVector<double>(), std::vector<double>({5, -2}));
  // Integers: computed in double, then truncated toward zero.
  ASSERT_OK_AND_ASSIGN(Tensor i, RunOut(GetParam(), Op("scale", {{"scale", 0.5}}),
                                        {{"X", {Var<int32_t>({3}, {3, -3, 7})}}}));
  EXPECT_EQ(i.ToVector<int32_t>(), std::vector<int32_t>({1, -1, 3}));
  ASSERT_OK_AND_ASSIGN(
      Tensor l,
      RunOut(GetParam(), Op("scale", {{"scale", 0.5}, {"bias", 0.6}, {"bias_after_scale", false}}),
             {{"X", {Var<int64_t>({}, {4})}}}));
  EXPECT_EQ(l.ToVector<int64_t>(), std::vector<int64_t>({2}));  // 0.5 * 4.6
  ASSERT_OK_AND_ASSIGN(Tensor empty,
                       RunOut(GetParam(), Op("scale", after), {{"X", {Var<float>({0}, {})}}}));
  EXPECT_EQ(empty.shape(), Shape({0}));
}

TEST_P(KernelSemantics, ScaleLargeMatchesReference) {
  const std::vector<float> x = Values<float>(300 * 257, 4);
  ASSERT_OK_AND_ASSIGN(Tensor out, RunOut(GetParam(), Op("scale", {{"scale", 3.0}, {"bias", -1.0}}),
                                          {{"X", {Var<float>({300, 257}, x)}}}));
  const std::vector<float> got = out.ToVector<float>();
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(got[i], 3.0f * x[i] + -1.0f) << i;
  }
}

// ------------------------------------------------------------------------- cast

TEST_P(KernelSemantics, CastZeroDAndEmpty) {
  ASSERT_OK_AND_ASSIGN(Tensor s, RunOut(GetParam(), Op("cast", {{"out_dtype", DataType::kInt64}}),
                                        {{"X", {Var<double>({}, {-9.99})}}}));
  EXPECT_EQ(s.shape(), Shape());
  EXPECT_EQ(s.ToVector<int64_t>(), std::vector<int64_t>({-9}));
  ASSERT_OK_AND_ASSIGN(Tensor e, RunOut(GetParam(), Op("cast", {{"out_dtype", DataType::kBool}}),
                                        {{"X", {Var<float>({2, 0}, {})}}}));
  EXPECT_EQ(e.shape(), Shape({2, 0}));
  EXPECT_EQ(e.dtype(), DataType::kBool);
}

// Casts to the 16-bit floating types follow IEEE 754 on every place: NaN
// stays NaN with its sign, +-inf stays, values beyond the largest finite
// one become +-inf, below the smallest subnormal +-0, others round once to
// nearest even (from float64 as well: no double rounding through float32).
TEST_P(KernelSemantics, CastTo16BitFloatsFollowsIeee) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {nan,
                                -nan,
                                inf,
                                -inf,
                                70000.0f,
                                65519.0f,
                                -1e30f,
                                3.14159f,
                                1e-8f,
                                -3.1e-8f,
                                std::numeric_limits<float>::max(),
                                0.0f,
                                1.00390625f,
                                1.001953125f,
                                -0.0f};
  ASSERT_OK_AND_ASSIGN(Tensor h, RunOut(GetParam(), Op("cast", {{"out_dtype", DataType::kFloat16}}),
                                        {{"X", {Var<float>({15}, x)}}}));
  ASSERT_OK_AND_ASSIGN(Tensor b,
                       RunOut(GetParam(), Op("cast", {{"out_dtype", DataType::kBFloat16}}),
                              {{"X", {Var<float>({15}, x)}}}));
  ASSERT_EQ(h.dtype(), DataType::kFloat16);
  ASSERT_EQ(b.dtype(), DataType::kBFloat16);
  const std::vector<float16> hv = h.ToVector<float16>();
  const std::vector<bfloat16> bv = b.ToVector<bfloat16>();
  auto f = [](auto v) { return static_cast<float>(v); };
  EXPECT_TRUE(std::isnan(f(hv[0])) && !std::signbit(f(hv[0])));
  EXPECT_TRUE(std::isnan(f(hv[1])) && std::signbit(f(hv[1])));
  EXPECT_TRUE(std::isnan(f(bv[0])) && std::isnan(f(bv[1])) && std::signbit(f(bv[1])));
  EXPECT_EQ(f(hv[2]), inf);
  EXPECT_EQ(f(hv[3]), -inf);
  EXPECT_EQ(f(hv[4]), inf);       // beyond 65504 + half an ulp
  EXPECT_EQ(f(hv[5]), 65504.0f);  // below 65520: the largest finite value
  EXPECT_EQ(f(hv[6]), -inf);
  EXPECT_EQ(f(hv[7]), 3.140625f);
  EXPECT_EQ(f(hv[8]), 0.0f);            // 1e-8 < 2^-25: zero
  EXPECT_EQ(f(hv[9]), -5.9604645e-8f);  // -3.1e-8, beyond -2^-25: -2^-24
  EXPECT_EQ(f(hv[10]), inf);
  EXPECT_EQ(f(hv[12]), 1.00390625f);  // exact in float16 (10 bits)
  EXPECT_EQ(f(hv[13]), 1.001953125f);
  EXPECT_TRUE(std::signbit(f(hv[14])) && f(hv[14]) == 0.0f);
  EXPECT_EQ(f(bv[2]), inf);
  EXPECT_EQ(f(bv[4]), 70144.0f);                 // bfloat16 keeps float32's range
  EXPECT_EQ(f(bv[6]), -1.0002555517425873e30f);  // the nearer of two: 8 bits
  EXPECT_EQ(f(bv[7]), 3.140625f);
  EXPECT_EQ(f(bv[10]), inf);
  EXPECT_EQ(f(bv[12]), 1.0f);  // 1 + 2^-8: a tie, to even
  EXPECT_EQ(f(bv[13]), 1.0f);  // 1 + 2^-9: below the midpoint
  // From float64, one rounding: 1 + 2^-8 + 2^-30 is above the midpoint.
  ASSERT_OK_AND_ASSIGN(
      Tensor d,
      RunOut(
          GetParam(), Op("cast", {{"out_dtype", DataType::kBFloat16}}),
          {{"X", {Var<double>({2}, {1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30), -1e300})}}}));
  EXPECT_EQ(static_cast<float>(d.ToVector<bfloat16>()[0]), 1.0078125f);
  EXPECT_EQ(static_cast<float>(d.ToVector<bfloat16>()[1]), -inf);
  // And back: every 16-bit value is exact in float32, NaN stays NaN.
  ASSERT_OK_AND_ASSIGN(
      Tensor back,
      RunOut(GetParam(), Op("cast", {{"out_dtype", DataType::kFloat32}}), {{"X", {Variable(h)}}}));
  const std::vector<float> bf = back.ToVector<float>();
  EXPECT_TRUE(std::isnan(bf[0]));
  EXPECT_EQ(bf[5], 65504.0f);
  EXPECT_EQ(bf[9], -5.9604645e-8f);
}

}  // namespace
}  // namespace tandem
