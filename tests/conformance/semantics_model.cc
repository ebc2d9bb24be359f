#include <cmath>
#include <cstdint>
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

using semantics::Named;
using semantics::Op;
using semantics::Var;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::Pointwise;

using semantics::RunValues;

// ------------------------------------------------------------- elementwise

TEST_P(KernelSemantics, SubMulDivBroadcastARow) {
  const EagerInputs in = {{"X", {Var<float>({2, 2}, {1, 2, 3, 4})}},
                          {"Y", {Var<float>({2}, {4, -2})}}};
  EXPECT_THAT(RunValues<float>(GetParam(), Op("elementwise_sub"), in),
              IsOkAndHolds(ElementsAre(-3, 4, -1, 6)));
  EXPECT_THAT(RunValues<float>(GetParam(), Op("elementwise_mul"), in),
              IsOkAndHolds(ElementsAre(4, -4, 12, -8)));
  EXPECT_THAT(RunValues<float>(GetParam(), Op("elementwise_div"), in),
              IsOkAndHolds(ElementsAre(0.25, -1, 0.75, -2)));
}

TEST_P(KernelSemantics, IntegerDivisionByZeroNamesOpVariableAndPosition) {
  const OpDesc div = Named("elementwise_div", {{"X", {"x"}}, {"Y", {"y"}}});
  for (const Variable& y : {Var<int32_t>({3}, {2, 0, 0}), Var<int32_t>({1, 3}, {2, 0, 0})}) {
    EXPECT_THAT(RunValues<int32_t>(GetParam(), div,
                                   {{"X", {Var<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6})}}, {"Y", {y}}}),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "op 'elementwise_div': integer division by zero: Y 'y' " +
                             y.tensor().shape().ToString() + " is 0 at position 1"));
  }
  // Floats follow IEEE (inf); an empty output divides nothing; the place
  // stays usable.
  EXPECT_THAT(
      RunValues<double>(GetParam(), div,
                        {{"X", {Var<double>({2}, {1, -1})}}, {"Y", {Var<double>({}, {0})}}}),
      IsOkAndHolds(ElementsAre(INFINITY, -INFINITY)));
  EXPECT_OK(
      RunValues<int64_t>(GetParam(), div,
                         {{"X", {Var<int64_t>({0, 2}, {})}}, {"Y", {Var<int64_t>({2}, {0, 0})}}})
          .status());
  EXPECT_THAT(
      RunValues<int64_t>(GetParam(), div,
                         {{"X", {Var<int64_t>({2}, {-7, 7})}}, {"Y", {Var<int64_t>({}, {2})}}}),
      IsOkAndHolds(ElementsAre(-3, 3)));
}

TEST_P(KernelSemantics, ElementwiseShapeAndDtypeErrors) {
  EXPECT_THAT(RunValues<float>(GetParam(), Op("elementwise_mul"),
                               {{"X", {Var<float>({2, 3}, std::vector<float>(6, 1))}},
                                {"Y", {Var<float>({4}, std::vector<float>(4, 1))}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'elementwise_mul': X [2, 3] and Y [4] cannot be broadcast "
                       "(dim -1: 3 vs 4)"));
  EXPECT_THAT(
      RunValues<float>(GetParam(), Op("elementwise_sub"),
                       {{"X", {Var<float>({2}, {1, 2})}}, {"Y", {Var<double>({2}, {1, 2})}}}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cast one of them")));
}

TEST_P(KernelSemantics, DivGradReadsOutAndWritesOnlyBoundOutputs) {
  // Out = X / Y with X [2], Y [] : dX = G / Y, dY = -sum(G * Out) / Y.
  OpDesc grad = Op("elementwise_div_grad");
  grad.outputs["X@GRAD"] = {};
  grad.outputs["Y@GRAD"] = {"y@GRAD"};
  ASSERT_OK_AND_ASSIGN(auto out, semantics::RunFirst(GetParam(), grad,
                                                     {{"X", {Var<double>({2}, {3, -1})}},
                                                      {"Y", {Var<double>({}, {2})}},
                                                      {"Out", {Var<double>({2}, {1.5, -0.5})}},
                                                      {"Out@GRAD", {Var<double>({2}, {1, 4})}}}));
  EXPECT_EQ(out.count("X@GRAD"), 0u);
  EXPECT_EQ(out.at("Y@GRAD").shape(), Shape());
  EXPECT_THAT(out.at("Y@GRAD").ToVector<double>(), ElementsAre(0.25));  // -(1.5 - 2) / 2
  EXPECT_THAT(semantics::RunFirst(GetParam(), Op("elementwise_div_grad"),
                                  {{"X", {Var<double>({2}, {3, -1})}},
                                   {"Y", {Var<double>({}, {2})}},
                                   {"Out", {Var<double>({3}, {1, 2, 3})}},
                                   {"Out@GRAD", {Var<double>({2}, {1, 4})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'elementwise_div_grad': Out is float64[3], expected float64[2]"));
}

// -------------------------------------------------------------- activations

TEST_P(KernelSemantics, ActivationsHandComputedAndSaturating) {
  const EagerInputs in = {{"X", {Var<float>({5}, {-1000, -1, 0, 2, 1000})}}};
  EXPECT_THAT(RunValues<float>(GetParam(), Op("relu"), in),
              IsOkAndHolds(ElementsAre(0, 0, 0, 2, 1000)));
  ASSERT_OK_AND_ASSIGN(std::vector<float> s, RunValues<float>(GetParam(), Op("sigmoid"), in));
  // Within 3 float32 ulps of the true values (CUDA's expf is within 2).
  EXPECT_THAT(s,
              Pointwise(FloatNear(2e-7), std::vector<float>{0, 0.26894142f, 0.5f, 0.88079708f, 1}));
  ASSERT_OK_AND_ASSIGN(std::vector<float> t, RunValues<float>(GetParam(), Op("tanh"), in));
  EXPECT_THAT(t, Pointwise(FloatNear(1e-6), std::vector<float>{-1, -0.7615942f, 0, 0.9640276f, 1}));
  // relu_grad passes Out@GRAD where Out > 0 only.
  EXPECT_THAT(RunValues<float>(GetParam(), Op("relu_grad"),
                               {{"Out", {Var<float>({3}, {0, 2, 0})}},
                                {"Out@GRAD", {Var<float>({3}, {5, 6, 7})}}},
                               "X@GRAD"),
              IsOkAndHolds(ElementsAre(0, 6, 0)));
  EXPECT_THAT(RunValues<int32_t>(GetParam(), Op("relu"), {{"X", {Var<int32_t>({1}, {1})}}}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("relu")));
}

// ------------------------------------------------------------- reductions

TEST_P(KernelSemantics, ReduceDimsKeepDimAndAll) {
  const Variable x = Var<double>({2, 3}, {1, 2, 3, 4, 5, 6});
  ASSERT_OK_AND_ASSIGN(
      auto rows,
      semantics::RunFirst(GetParam(), Op("reduce_sum", {{"dim", std::vector<int64_t>{-1}}}),
                          {{"X", {x}}}));
  EXPECT_EQ(rows.at("Out").shape(), Shape({2}));
  EXPECT_THAT(rows.at("Out").ToVector<double>(), ElementsAre(6, 15));
  ASSERT_OK_AND_ASSIGN(
      auto cols,
      semantics::RunFirst(GetParam(),
                          Op("reduce_mean", {{"dim", std::vector<int64_t>{0}}, {"keep_dim", true}}),
                          {{"X", {x}}}));
  EXPECT_EQ(cols.at("Out").shape(), Shape({1, 3}));
  EXPECT_THAT(cols.at("Out").ToVector<double>(), ElementsAre(2.5, 3.5, 4.5));
  ASSERT_OK_AND_ASSIGN(auto all, semantics::RunFirst(GetParam(), Op("reduce_mean"), {{"X", {x}}}));
  EXPECT_EQ(all.at("Out").shape(), Shape({1}));
  EXPECT_THAT(all.at("Out").ToVector<double>(), ElementsAre(3.5));
  // The gradient spreads Out@GRAD back, divided by the count for a mean.
  EXPECT_THAT(
      RunValues<double>(GetParam(), Op("reduce_mean_grad", {{"dim", std::vector<int64_t>{0}}}),
                        {{"X", {x}}, {"Out@GRAD", {Var<double>({3}, {2, 4, 6})}}}, "X@GRAD"),
      IsOkAndHolds(ElementsAre(1, 2, 3, 1, 2, 3)));
}

TEST_P(KernelSemantics, ReduceBadDimsAndEmptyMean) {
  const Variable x = Var<float>({2, 3}, std::vector<float>(6, 1));
  EXPECT_THAT(semantics::RunFirst(GetParam(), Op("reduce_sum", {{"dim", std::vector<int64_t>{2}}}),
                                  {{"X", {x}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'reduce_sum': dim 2 is out of range for X [2, 3] (need -2 <= dim < 2)"));
  EXPECT_THAT(
      semantics::RunFirst(GetParam(), Op("reduce_sum", {{"dim", std::vector<int64_t>{1, -1}}}),
                          {{"X", {x}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "op 'reduce_sum': dim -1 of X [2, 3] is listed twice in dim"));
  EXPECT_THAT(semantics::RunFirst(GetParam(), Op("reduce_mean", {{"dim", std::vector<int64_t>{1}}}),
                                  {{"X", {Var<float>({2, 0}, {})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'reduce_mean': X [2, 0] has no elements to average over dim"));
  // A sum of nothing is 0.
  EXPECT_THAT(RunValues<float>(GetParam(), Op("reduce_sum", {{"dim", std::vector<int64_t>{1}}}),
                               {{"X", {Var<float>({2, 0}, {})}}}),
              IsOkAndHolds(ElementsAre(0, 0)));
}

// ------------------------------------------------------------------ mul, fc

TEST_P(KernelSemantics, FcAddsBiasToEveryRowAndFlattensInput) {
  // Input [2, 1, 2] flattened to [2, 2]; W [2, 3]; Bias [3].
  ASSERT_OK_AND_ASSIGN(auto out,
                       semantics::RunFirst(GetParam(), Op("fc"),
                                           {{"Input", {Var<float>({2, 1, 2}, {1, 2, 3, 4})}},
                                            {"W", {Var<float>({2, 3}, {1, 0, 1, 0, 1, 1})}},
                                            {"Bias", {Var<float>({3}, {10, 20, 30})}}}));
  EXPECT_EQ(out.at("Out").shape(), Shape({2, 3}));
  EXPECT_THAT(out.at("Out").ToVector<float>(), ElementsAre(11, 22, 33, 13, 24, 37));
  // Bias@GRAD alone: the column sums of Out@GRAD.
  OpDesc grad = Op("fc_grad");
  grad.outputs["Bias@GRAD"] = {"b@GRAD"};
  ASSERT_OK_AND_ASSIGN(
      auto g, semantics::RunFirst(GetParam(), grad,
                                  {{"Input", {Var<float>({2, 2}, {1, 2, 3, 4})}},
                                   {"W", {Var<float>({2, 3}, {1, 0, 1, 0, 1, 1})}},
                                   {"Out@GRAD", {Var<float>({2, 3}, {1, 2, 3, 4, 5, 6})}}}));
  EXPECT_EQ(g.size(), 1u);
  EXPECT_THAT(g.at("Bias@GRAD").ToVector<float>(), ElementsAre(5, 7, 9));
}

TEST_P(KernelSemantics, MulAndFcShapeErrors) {
  EXPECT_THAT(semantics::RunFirst(GetParam(), Op("mul", {{"x_num_col_dims", int64_t{2}}}),
                                  {{"X", {Var<float>({2, 3}, std::vector<float>(6, 1))}},
                                   {"Y", {Var<float>({3, 1}, {1, 1, 1})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'mul': x_num_col_dims 2 is out of range for X [2, 3] "
                       "(need 1 <= x_num_col_dims < 2)"));
  EXPECT_THAT(semantics::RunFirst(GetParam(), Op("fc"),
                                  {{"Input", {Var<float>({2, 3, 2}, std::vector<float>(12, 1))}},
                                   {"W", {Var<float>({3, 4}, std::vector<float>(12, 1))}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'fc': inner dims differ: Input [2, 3, 2] is a [2, 6] matrix "
                       "(in_num_col_dims 1) but W [3, 4] is a [3, 4] matrix"));
  EXPECT_THAT(semantics::RunFirst(GetParam(), Op("fc"),
                                  {{"Input", {Var<float>({2, 3}, std::vector<float>(6, 1))}},
                                   {"W", {Var<float>({3, 4}, std::vector<float>(12, 1))}},
                                   {"Bias", {Var<float>({3}, {1, 1, 1})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'fc': Bias must be float32[4] to match W [3, 4], got float32[3]"));
  EXPECT_THAT(semantics::RunFirst(GetParam(), Op("fc"),
                                  {{"Input", {Var<float>({2, 3}, std::vector<float>(6, 1))}},
                                   {"W", {Var<float>({12}, std::vector<float>(12, 1))}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'fc': W must be a float32 [K, M] matrix, got float32[12]"));
}

// ------------------------------------------------------------------ softmax

TEST_P(KernelSemantics, SoftmaxIsStableForLargeLogitsAndChecksAxis) {
  EXPECT_THAT(RunValues<float>(GetParam(), Op("softmax"),
                               {{"X", {Var<float>({2, 2}, {1000, 1000, -1000, 0})}}}),
              IsOkAndHolds(ElementsAre(0.5, 0.5, 0, 1)));
  EXPECT_THAT(semantics::RunFirst(GetParam(), Op("softmax", {{"axis", int64_t{2}}}),
                                  {{"X", {Var<float>({2, 2}, {1, 2, 3, 4})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'softmax': axis 2 is out of range for X [2, 2] (need -2 <= axis < 2)"));
}

// ------------------------------------------------------- cross entropy

const OpDesc kCrossEntropy =
    Named("softmax_with_cross_entropy", {{"Logits", {"logits"}}, {"Label", {"label"}}});

TEST_P(KernelSemantics, CrossEntropyIsStableAndIgnoresRows) {
  // Row 0: logits far apart, loss 2000 (not inf); row 1 ignored.
  ASSERT_OK_AND_ASSIGN(auto out,
                       semantics::RunFirst(GetParam(), kCrossEntropy,
                                           {{"Logits", {Var<double>({2, 2}, {1000, -1000, 3, 4})}},
                                            {"Label", {Var<int64_t>({2, 1}, {1, -100})}}}));
  EXPECT_EQ(out.at("Loss").shape(), Shape({2, 1}));
  EXPECT_THAT(out.at("Loss").ToVector<double>(), ElementsAre(2000, 0));
  EXPECT_THAT(out.at("Softmax").ToVector<double>(),
              Pointwise(DoubleNear(1e-15), {1.0, 0.0, 0.2689414213699951, 0.7310585786300049}));
  // The ignored row's gradient is zero; the other is (softmax - onehot) * dloss.
  OpDesc grad = Named("softmax_with_cross_entropy_grad",
                      {{"Softmax", {"softmax"}}, {"Label", {"label"}}, {"Loss@GRAD", {"dloss"}}});
  EXPECT_THAT(RunValues<double>(GetParam(), grad,
                                {{"Softmax", {Var<double>({2, 2}, {0.25, 0.75, 0.5, 0.5})}},
                                 {"Label", {Var<int64_t>({2}, {1, -100})}},
                                 {"Loss@GRAD", {Var<double>({2, 1}, {2, 3})}}},
                                "Logits@GRAD"),
              IsOkAndHolds(ElementsAre(0.5, -0.5, 0, 0)));
}

TEST_P(KernelSemantics, CrossEntropyBadLabelsAndSoftLabels) {
  const Variable logits = Var<float>({3, 5}, std::vector<float>(15, 1));
  for (int64_t bad : {5, -1}) {
    EXPECT_THAT(
        semantics::RunFirst(GetParam(), kCrossEntropy,
                            {{"Logits", {logits}}, {"Label", {Var<int64_t>({3, 1}, {0, 4, bad})}}}),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 absl::StrCat("op 'softmax_with_cross_entropy': label ", bad,
                              " at position 2 is out of range [0, 5) (ignore_index -100)")));
  }
  EXPECT_THAT(
      semantics::RunFirst(GetParam(), kCrossEntropy,
                          {{"Logits", {logits}}, {"Label", {Var<int32_t>({3, 1}, {0, 1, 2})}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "op 'softmax_with_cross_entropy': Label must be int64[3, 1] or int64[3] "
               "for Logits [3, 5], got int32[3, 1]"));
  OpDesc soft = kCrossEntropy;
  soft.attrs["soft_label"] = true;
  EXPECT_THAT(
      semantics::RunFirst(GetParam(), soft,
                          {{"Logits", {logits}}, {"Label", {Var<int64_t>({3, 1}, {0, 1, 2})}}}),
      StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("soft_label=true")));
  // The place stays usable.
  EXPECT_OK(semantics::RunFirst(GetParam(), kCrossEntropy,
                                {{"Logits", {logits}}, {"Label", {Var<int64_t>({3}, {0, 1, 2})}}})
                .status());
}

// ----------------------------------------------------------------- accuracy

TEST_P(KernelSemantics, AccuracyTopKWithTiesAndNoRows) {
  // Row 0: label 2 ties with class 0 (lower index ranks first): rank 1.
  // Row 1: label 1 is the best: rank 0. Row 2: label 0 is the worst: rank 2.
  const EagerInputs in = {
      {"Out", {Var<float>({3, 3}, {0.5, 0.1, 0.5, 0.2, 0.7, 0.1, 0.1, 0.3, 0.6})}},
      {"Label", {Var<int64_t>({3, 1}, {2, 1, 0})}}};
  ASSERT_OK_AND_ASSIGN(auto top1, semantics::RunFirst(GetParam(), Op("accuracy"), in));
  EXPECT_THAT(top1.at("Correct").ToVector<int64_t>(), ElementsAre(1));
  EXPECT_THAT(top1.at("Total").ToVector<int64_t>(), ElementsAre(3));
  EXPECT_THAT(top1.at("Accuracy").ToVector<float>(), ElementsAre(1.0f / 3));
  ASSERT_OK_AND_ASSIGN(auto top2,
                       semantics::RunFirst(GetParam(), Op("accuracy", {{"k", int64_t{2}}}), in));
  EXPECT_THAT(top2.at("Correct").ToVector<int64_t>(), ElementsAre(2));
  ASSERT_OK_AND_ASSIGN(auto none, semantics::RunFirst(GetParam(), Op("accuracy"),
                                                      {{"Out", {Var<double>({0, 3}, {})}},
                                                       {"Label", {Var<int64_t>({0}, {})}}}));
  EXPECT_THAT(none.at("Accuracy").ToVector<float>(), ElementsAre(0));
  EXPECT_THAT(none.at("Total").ToVector<int64_t>(), ElementsAre(0));
}

TEST_P(KernelSemantics, AccuracyBadLabelAndK) {
  const Variable scores = Var<float>({2, 3}, std::vector<float>(6, 1));
  EXPECT_THAT(semantics::RunFirst(GetParam(), Op("accuracy"),
                                  {{"Out", {scores}}, {"Label", {Var<int64_t>({2, 1}, {0, 3})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'accuracy': label 3 at position 1 is out of range [0, 3)"));
  EXPECT_THAT(semantics::RunFirst(GetParam(), Op("accuracy", {{"k", int64_t{0}}}),
                                  {{"Out", {scores}}, {"Label", {Var<int64_t>({2, 1}, {0, 1})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("k must be >= 1, got 0")));
}

}  // namespace
}  // namespace tandem
