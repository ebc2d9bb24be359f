#include <map>
#include <utility>

#include "absl/status/statusor.h"
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
using semantics::Var;
using ::testing::ElementsAre;
using Ints = std::vector<int64_t>;

using semantics::RunAll;
using semantics::RunValues;

// An op with the given outputs (argument -> variable names).
OpDesc WithOutputs(OpDesc op, std::map<std::string, std::vector<std::string>> outputs) {
  op.outputs = std::move(outputs);
  return op;
}

// ------------------------------------------------------------------ layout

TEST_P(KernelSemantics, SplitAndConcatHandComputed) {
  const OpDesc split =
      WithOutputs(Op("split", {{"axis", int64_t{1}}, {"sections", Ints{1, -1, 2}}}),
                  {{"Out", {"a", "b", "c"}}});
  ASSERT_OK_AND_ASSIGN(
      auto out, RunAll(GetParam(), split,
                       {{"X", {Var<int64_t>({2, 5}, {0, 1, 2, 3, 4, 10, 11, 12, 13, 14})}}}));
  ASSERT_EQ(out.at("Out").size(), 3u);
  EXPECT_THAT(out.at("Out")[0].ToVector<int64_t>(), ElementsAre(0, 10));
  EXPECT_THAT(out.at("Out")[1].ToVector<int64_t>(), ElementsAre(1, 2, 11, 12));
  EXPECT_EQ(out.at("Out")[2].shape(), Shape({2, 2}));
  EXPECT_THAT(RunValues<int32_t>(
                  GetParam(), Op("concat", {{"axis", int64_t{-1}}}),
                  {{"X", {Var<int32_t>({2, 1}, {7, 8}), Var<int32_t>({2, 2}, {1, 2, 3, 4})}}}),
              IsOkAndHolds(ElementsAre(7, 1, 2, 8, 3, 4)));
  EXPECT_THAT(RunValues<float>(GetParam(), Op("transpose", {{"axis", Ints{1, 0}}}),
                               {{"X", {Var<float>({2, 3}, {1, 2, 3, 4, 5, 6})}}}),
              IsOkAndHolds(ElementsAre(1, 4, 2, 5, 3, 6)));
}

TEST_P(KernelSemantics, LayoutErrorsNameShapesAndCounts) {
  const Variable x = Var<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_THAT(RunAll(GetParam(), Op("reshape", {{"shape", Ints{4, -1}}}), {{"X", {x}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'reshape': cannot reshape X [2, 3] (6 elements) to [4, -1]: 6 "
                       "elements are not a multiple of the other dims' product 4"));
  EXPECT_THAT(RunAll(GetParam(), Op("reshape_grad"),
                     {{"X", {x}}, {"Out@GRAD", {Var<float>({5}, {1, 2, 3, 4, 5})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'reshape_grad': Out@GRAD float32[5] does not match X float32[2, 3] "
                       "(same dtype and element count needed)"));
  EXPECT_THAT(RunAll(GetParam(), Op("transpose", {{"axis", Ints{0, 0}}}), {{"X", {x}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'transpose': axis [0, 0] is not a permutation of the 2 dims of X "
                       "[2, 3] (need each of 0..1 once)"));
  EXPECT_THAT(
      RunAll(GetParam(), Op("concat"), {{"X", {x, Var<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6})}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "op 'concat': X[1] is int32 but X[0] is float32"));
  EXPECT_THAT(RunAll(GetParam(),
                     WithOutputs(Op("split", {{"num", int64_t{3}}, {"axis", int64_t{1}}}),
                                 {{"Out", {"a", "b"}}}),
                     {{"X", {x}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'split': output Out has 2 variables, expected 3"));
  EXPECT_THAT(
      RunAll(GetParam(),
             Op("split_grad",
                {{"num", int64_t{3}}, {"axis", int64_t{1}}, {"grad_positions", Ints{1}}}),
             {{"X", {x}}, {"Out@GRAD", {Var<float>({2, 1}, {1, 2}), Var<float>({2, 1}, {1, 2})}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "op 'split_grad': input Out@GRAD has 2 variables, expected 1"));
  EXPECT_THAT(RunAll(GetParam(), Op("concat_grad", {{"axis", int64_t{1}}}),
                     {{"X", {x, x}}, {"Out@GRAD", {x}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'concat_grad': Out@GRAD is float32[2, 3], expected float32[2, 6]"));
}

// ------------------------------------------------------------------ layers

TEST_P(KernelSemantics, ConvHandComputedAndEmptyBatch) {
  // A 3x3 plane 1..9, a 2x2 filter of ones, padding 1, stride 2.
  const AttrMap attrs = {{"strides", Ints{2, 2}}, {"paddings", Ints{1, 1}}};
  const Variable x = Var<float>({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Variable w = Var<float>({1, 1, 2, 2}, {1, 1, 1, 1});
  EXPECT_THAT(RunValues<float>(GetParam(), Op("conv2d", attrs), {{"Input", {x}}, {"Filter", {w}}},
                               "Output"),
              IsOkAndHolds(ElementsAre(1, 5, 11, 28)));
  // Only the filter gradient is bound.
  const OpDesc filter_only = WithOutputs(Op("conv2d_grad", attrs), {{"Filter@GRAD", {"dw"}}});
  ASSERT_OK_AND_ASSIGN(auto grads,
                       RunAll(GetParam(), filter_only,
                              {{"Input", {x}},
                               {"Filter", {w}},
                               {"Output@GRAD", {Var<float>({1, 1, 2, 2}, {1, 10, 100, 1000})}}}));
  EXPECT_EQ(grads.count("Input@GRAD"), 0u);
  EXPECT_THAT(grads.at("Filter@GRAD")[0].ToVector<float>(), ElementsAre(5000, 6400, 8020, 9731));
  // No samples: an empty Output and a zero filter gradient.
  const Variable empty = Var<float>({0, 1, 3, 3}, {});
  ASSERT_OK_AND_ASSIGN(
      auto out, RunAll(GetParam(), Op("conv2d", attrs), {{"Input", {empty}}, {"Filter", {w}}}));
  EXPECT_EQ(out.at("Output")[0].shape(), Shape({0, 1, 2, 2}));
  ASSERT_OK_AND_ASSIGN(grads, RunAll(GetParam(), Op("conv2d_grad", attrs),
                                     {{"Input", {empty}},
                                      {"Filter", {w}},
                                      {"Output@GRAD", {Var<float>({0, 1, 2, 2}, {})}}}));
  EXPECT_THAT(grads.at("Filter@GRAD")[0].ToVector<float>(), ElementsAre(0, 0, 0, 0));
  EXPECT_EQ(grads.at("Input@GRAD")[0].shape(), Shape({0, 1, 3, 3}));
}

TEST_P(KernelSemantics, PoolHandComputed) {
  // 2x2 windows, stride 2, padding 1 over 1..9: {1}, {2, 3}, {4, 7}, {5, 6, 8, 9}.
  const AttrMap window = {{"ksize", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"paddings", Ints{1, 1}}};
  const Variable x = Var<float>({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_THAT(RunValues<float>(GetParam(), Op("pool2d", window), {{"X", {x}}}),
              IsOkAndHolds(ElementsAre(1, 3, 7, 9)));
  AttrMap avg = window;
  avg["pooling_type"] = std::string("avg");
  EXPECT_THAT(RunValues<float>(GetParam(), Op("pool2d", avg), {{"X", {x}}}),
              IsOkAndHolds(ElementsAre(1, 2.5, 5.5, 7)));
  avg["exclusive"] = false;
  EXPECT_THAT(RunValues<float>(GetParam(), Op("pool2d", avg), {{"X", {x}}}),
              IsOkAndHolds(ElementsAre(0.25, 1.25, 2.75, 7)));
  EXPECT_THAT(RunValues<double>(
                  GetParam(),
                  Op("pool2d", {{"pooling_type", std::string("avg")}, {"global_pooling", true}}),
                  {{"X", {Var<double>({1, 2, 1, 2}, {1, 2, 3, 5})}}}),
              IsOkAndHolds(ElementsAre(1.5, 4)));
  // Max ties: the first maximum of the window gets the gradient.
  EXPECT_THAT(RunValues<float>(GetParam(), Op("pool2d_grad", {{"ksize", Ints{2, 2}}}),
                               {{"X", {Var<float>({1, 1, 2, 2}, {3, 3, 3, 3})}},
                                {"Out", {Var<float>({1, 1, 1, 1}, {3})}},
                                {"Out@GRAD", {Var<float>({1, 1, 1, 1}, {5})}}},
                               "X@GRAD"),
              IsOkAndHolds(ElementsAre(5, 0, 0, 0)));
}

TEST_P(KernelSemantics, DropoutKeepsEverythingAtZeroAndInInference) {
  const Variable x = Var<float>({4}, {1, -2, 3, -4});
  for (const AttrMap& attrs :
       {AttrMap{{"dropout_prob", 0.0}}, AttrMap{{"dropout_prob", 0.9}, {"is_test", true}}}) {
    ASSERT_OK_AND_ASSIGN(auto out, RunAll(GetParam(), Op("dropout", attrs), {{"X", {x}}}));
    EXPECT_THAT(out.at("Out")[0].ToVector<float>(), ElementsAre(1, -2, 3, -4));
    EXPECT_THAT(out.at("Mask")[0].ToVector<bool>(), ElementsAre(true, true, true, true));
  }
  // Everything dropped: zeros, and a zero gradient.
  EXPECT_THAT(RunValues<float>(GetParam(), Op("dropout", {{"dropout_prob", 1.0}}), {{"X", {x}}}),
              IsOkAndHolds(ElementsAre(0, 0, 0, 0)));
  EXPECT_THAT(
      RunValues<float>(GetParam(), Op("dropout_grad", {{"dropout_prob", 0.5}}),
                       {{"Mask", {Var<bool>({4}, {true, false, true, false})}}, {"Out@GRAD", {x}}},
                       "X@GRAD"),
      IsOkAndHolds(ElementsAre(2, 0, 6, 0)));
}

TEST_P(KernelSemantics, LayerErrorsNameOpArgumentAndShapes) {
  const Variable x = Var<float>({1, 2, 3, 3}, std::vector<float>(18, 1));
  EXPECT_THAT(RunAll(GetParam(), Op("conv2d"),
                     {{"Input", {x}}, {"Filter", {Var<double>({1, 2, 1, 1}, {1, 1})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'conv2d': Filter is float64 but Input is float32"));
  EXPECT_THAT(RunAll(GetParam(), Op("conv2d"),
                     {{"Input", {x}}, {"Filter", {Var<float>({1, 3, 1, 1}, {1, 1, 1})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'conv2d': Input [1, 2, 3, 3] and Filter [1, 3, 1, 1] with groups 1: "
                       "Input's channels must equal Filter.dim(1) * groups"));
  EXPECT_THAT(RunAll(GetParam(), Op("conv2d_grad"),
                     {{"Input", {x}},
                      {"Filter", {Var<float>({1, 2, 1, 1}, {1, 1})}},
                      {"Output@GRAD", {Var<float>({1, 1, 3, 2}, std::vector<float>(6, 1))}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'conv2d_grad': Output@GRAD is float32[1, 1, 3, 2], expected "
                       "float32[1, 1, 3, 3]"));
  EXPECT_THAT(
      RunAll(GetParam(), Op("pool2d", {{"pooling_type", std::string("min")}}), {{"X", {x}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "op 'pool2d': attribute pooling_type \"min\" must be \"max\" or \"avg\""));
  EXPECT_THAT(RunAll(GetParam(), Op("pool2d", {{"ksize", Ints{4, 4}}}), {{"X", {x}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'pool2d': ksize [4, 4] with paddings [0, 0] does not fit X "
                       "[1, 2, 3, 3]"));
  EXPECT_THAT(
      RunAll(GetParam(), Op("layer_norm"), {{"X", {x}}, {"Scale", {Var<float>({3}, {1, 1, 1})}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "op 'layer_norm': Scale is float32[3], expected float32[18]"));
  EXPECT_THAT(RunAll(GetParam(), Op("dropout", {{"dropout_prob", 1.5}}), {{"X", {x}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'dropout': attribute dropout_prob is 1.5, need 0 <= dropout_prob <= 1"));
  EXPECT_THAT(
      RunAll(GetParam(), Op("dropout_grad"),
             {{"Mask", {Var<float>({2}, {1, 0})}}, {"Out@GRAD", {Var<float>({2}, {1, 2})}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "op 'dropout_grad': Mask is float32[2], expected bool[2]"));
  const Variable qkv = Var<float>({1, 2, 6}, std::vector<float>(12, 0.5f));
  EXPECT_THAT(
      RunAll(GetParam(), Op("self_attention", {{"num_heads", int64_t{4}}}), {{"QKV", {qkv}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "op 'self_attention': QKV [1, 2, 6]: the last dim must be 3 * width with "
               "width a positive multiple of num_heads 4, got 6"));
  EXPECT_THAT(RunAll(GetParam(), Op("self_attention", {{"scale", -1.0}}), {{"QKV", {qkv}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'self_attention': scale must be finite and >= 0 (0: 1 / sqrt(head "
                       "dim)), got -1"));
  EXPECT_THAT(
      RunAll(GetParam(), Op("self_attention"), {{"QKV", {Var<float>({6}, {1, 2, 3, 4, 5, 6})}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "op 'self_attention': QKV must be [batch, seq, 3 * width], got [6]"));
  EXPECT_THAT(RunAll(GetParam(), Op("self_attention_grad"),
                     {{"QKV", {qkv}},
                      {"Out", {Var<float>({1, 2, 2}, {1, 1, 1, 1})}},
                      {"Lse", {Var<float>({1, 1, 2}, {0, 0})}},
                      {"Out@GRAD", {Var<float>({1, 2, 3}, {1, 1, 1, 1, 1, 1})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'self_attention_grad': Out@GRAD is float32[1, 2, 3], expected "
                       "float32[1, 2, 2]"));
}

}  // namespace
}  // namespace tandem
