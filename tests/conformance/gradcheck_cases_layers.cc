// Gradient-check cases of the layout ops (reshape, transpose, concat, split)
// and the layer ops (dropout, conv2d, pool2d, layer_norm, self_attention).
#include "absl/strings/str_cat.h"
#include "framework/testing/tensor_testutil.h"
#include "tests/conformance/gradcheck_cases.h"

namespace tandem {
namespace {

Tensor Rnd(const Shape& s, uint64_t seed) { return RandomTensor(DataType::kFloat64, s, seed); }

using Ints = std::vector<int64_t>;

void AddLayoutCases(std::vector<GradCase>* cases) {
  cases->push_back({"reshape",
                    GradOp("reshape", {{"X", {"x"}}}, {{"shape", Ints{0, -1}}}),
                    {{"x", Rnd({2, 3, 4}, 200)}}});
  cases->push_back({"transpose",
                    GradOp("transpose", {{"X", {"x"}}}, {{"axis", Ints{2, 0, 1}}}),
                    {{"x", Rnd({2, 3, 4}, 201)}}});
  cases->push_back(
      {"concat axis 1",
       GradOp("concat", {{"X", {"a", "b", "c"}}}, {{"axis", int64_t{1}}}),
       {{"a", Rnd({2, 1, 3}, 202)}, {"b", Rnd({2, 2, 3}, 203)}, {"c", Rnd({2, 3, 3}, 204)}}});
  GradCase split{
      "split sections, every piece differentiated",
      GradOp("split", {{"X", {"x"}}}, {{"axis", int64_t{1}}, {"sections", Ints{1, -1, 2}}}),
      {{"x", Rnd({2, 5}, 205)}}};
  split.op.outputs["Out"] = {"p0", "p1", "p2"};
  cases->push_back(split);
  GradCase halves{"split num 2 along axis 0",
                  GradOp("split", {{"X", {"x"}}}, {{"num", int64_t{2}}}),
                  {{"x", Rnd({4, 3}, 206)}}};
  halves.op.outputs["Out"] = {"top", "bottom"};
  cases->push_back(halves);
}

void AddDropoutCases(std::vector<GradCase>* cases) {
  for (bool is_test : {false, true}) {
    cases->push_back({absl::StrCat("dropout", is_test ? " is_test" : " training"),
                      GradOp("dropout", {{"X", {"x"}}},
                             {{"dropout_prob", 0.3}, {"is_test", is_test}, {"seed", int64_t{5}}},
                             {{"Out", "out"}, {"Mask", "mask"}}),
                      {{"x", Rnd({3, 4}, 210)}}});
  }
}

struct ConvCase {
  std::string label;
  Shape input, filter;
  Ints strides, paddings, dilations;
  int64_t groups;
};

void AddConvCases(std::vector<GradCase>* cases) {
  const std::vector<ConvCase> configs = {
      {"3x3 stride 1 padding 1",
       Shape({2, 3, 5, 5}),
       Shape({4, 3, 3, 3}),
       {1, 1},
       {1, 1},
       {1, 1},
       1},
      {"3x3 stride 2 padding 1",
       Shape({2, 3, 5, 5}),
       Shape({4, 3, 3, 3}),
       {2, 2},
       {1, 1},
       {1, 1},
       1},
      {"groups 2, dilation 2", Shape({1, 4, 6, 6}), Shape({4, 2, 3, 3}), {1, 1}, {1, 1}, {2, 2}, 2},
      {"1x1 (no im2col)", Shape({2, 3, 4, 4}), Shape({2, 3, 1, 1}), {1, 1}, {0, 0}, {1, 1}, 1},
  };
  uint64_t seed = 220;
  for (const ConvCase& c : configs) {
    cases->push_back({absl::StrCat("conv2d ", c.label),
                      GradOp("conv2d", {{"Input", {"x"}}, {"Filter", {"w"}}},
                             {{"strides", c.strides},
                              {"paddings", c.paddings},
                              {"dilations", c.dilations},
                              {"groups", c.groups}},
                             {{"Output", "y"}}),
                      {{"x", Rnd(c.input, ++seed)}, {"w", Rnd(c.filter, ++seed)}},
                      "Output"});
  }
}

void AddPoolCases(std::vector<GradCase>* cases) {
  struct Config {
    std::string type;
    Ints ksize, strides, paddings;
    bool exclusive, global;
  };
  // Random inputs keep every max window free of ties (and of values within
  // the difference step of each other).
  const std::vector<Config> configs = {
      {"max", {3, 3}, {1, 1}, {1, 1}, true, false}, {"max", {3, 3}, {2, 2}, {1, 1}, true, false},
      {"avg", {3, 3}, {2, 2}, {1, 1}, true, false}, {"avg", {3, 3}, {1, 1}, {1, 1}, false, false},
      {"avg", {}, {1, 1}, {0, 0}, true, true},      {"max", {2, 3}, {2, 1}, {0, 1}, true, false},
  };
  uint64_t seed = 240;
  for (const Config& c : configs) {
    cases->push_back(
        {absl::StrCat("pool2d ", c.type, c.global ? " global" : "", " ksize ", c.ksize.size(),
                      c.ksize.empty() ? "" : absl::StrCat(" ", c.ksize[0], "x", c.ksize[1]),
                      " stride ", c.strides[0], c.exclusive ? "" : " inclusive"),
         GradOp("pool2d", {{"X", {"x"}}},
                {{"pooling_type", c.type},
                 {"ksize", c.ksize},
                 {"strides", c.strides},
                 {"paddings", c.paddings},
                 {"exclusive", c.exclusive},
                 {"global_pooling", c.global}}),
         {{"x", Rnd({2, 3, 5, 5}, ++seed)}}});
  }
}

void AddLayerNormCases(std::vector<GradCase>* cases) {
  const std::map<std::string, std::string> outputs = {
      {"Y", "y"}, {"Mean", "mean"}, {"Variance", "var"}};
  cases->push_back({"layer_norm with Scale and Bias",
                    GradOp("layer_norm", {{"X", {"x"}}, {"Scale", {"s"}}, {"Bias", {"b"}}},
                           {{"begin_norm_axis", int64_t{1}}}, outputs),
                    {{"x", Rnd({2, 3, 4}, 260)}, {"s", Rnd({12}, 261)}, {"b", Rnd({12}, 262)}},
                    "Y"});
  cases->push_back({"layer_norm last axis, no Scale or Bias, epsilon 0.1",
                    GradOp("layer_norm", {{"X", {"x"}}},
                           {{"begin_norm_axis", int64_t{-1}}, {"epsilon", 0.1}}, outputs),
                    {{"x", Rnd({3, 5}, 263)}},
                    "Y"});
}

void AddSelfAttentionCases(std::vector<GradCase>* cases) {
  const std::map<std::string, std::string> outputs = {{"Out", "out"}, {"Lse", "lse"}};
  cases->push_back(
      {"self_attention causal, 2 heads",
       GradOp("self_attention", {{"QKV", {"qkv"}}}, {{"num_heads", int64_t{2}}}, outputs),
       {{"qkv", Rnd({2, 4, 12}, 270)}}});
  cases->push_back({"self_attention not causal, scale 0.7",
                    GradOp("self_attention", {{"QKV", {"qkv"}}},
                           {{"num_heads", int64_t{1}}, {"causal", false}, {"scale", 0.7}}, outputs),
                    {{"qkv", Rnd({1, 5, 9}, 271)}}});
}

}  // namespace

void AddLayerGradCases(std::vector<GradCase>* cases) {
  AddLayoutCases(cases);
  AddDropoutCases(cases);
  AddConvCases(cases);
  AddPoolCases(cases);
  AddLayerNormCases(cases);
  AddSelfAttentionCases(cases);
}

}  // namespace tandem
