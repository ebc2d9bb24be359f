// Gradient-check cases of elementwise_sub/mul/div, relu/sigmoid/tanh/gelu,
// reduce_sum/mean and mul.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/testing/tensor_testutil.h"
#include "tests/conformance/gradcheck_cases.h"

namespace tandem {
namespace {

Tensor Rnd(const Shape& s, uint64_t seed) { return RandomTensor(DataType::kFloat64, s, seed); }

// Random values moved `margin` away from 0 (kinks, divisors).
Tensor AwayFromZero(const Shape& s, uint64_t seed, double margin) {
  std::vector<double> v = RandomValues(DataType::kFloat64, s.num_elements(), seed);
  for (double& e : v) e += e < 0 ? -margin : margin;
  return MakeTensor(DataType::kFloat64, s, v);
}

}  // namespace

void AddMathGradCases(std::vector<GradCase>* cases) {
  for (const std::string op : {"elementwise_sub", "elementwise_mul", "elementwise_div"}) {
    const bool div = op == "elementwise_div";
    auto y = [&](const Shape& s, uint64_t seed) {
      return div ? AwayFromZero(s, seed, 0.5) : Rnd(s, seed);
    };
    cases->push_back({op + " same shape",
                      GradOp(op, {{"X", {"x"}}, {"Y", {"y"}}}),
                      {{"x", Rnd({2, 3}, 200)}, {"y", y({2, 3}, 201)}}});
    cases->push_back({op + " broadcast both",
                      GradOp(op, {{"X", {"x"}}, {"Y", {"y"}}}),
                      {{"x", Rnd({3, 1, 2}, 202)}, {"y", y({4, 1}, 203)}}});
    cases->push_back({op + " axis 1",
                      GradOp(op, {{"X", {"x"}}, {"Y", {"y"}}}, {{"axis", int64_t{1}}}),
                      {{"x", Rnd({2, 3, 2}, 204)}, {"y", y({3}, 205)}}});
    cases->push_back({op + " scalar Y",
                      GradOp(op, {{"X", {"x"}}, {"Y", {"y"}}}),
                      {{"x", Rnd({3}, 206)}, {"y", y({}, 207)}}});
  }
  cases->push_back(
      {"relu", GradOp("relu", {{"X", {"x"}}}), {{"x", AwayFromZero({3, 4}, 210, 0.1)}}});
  cases->push_back({"sigmoid", GradOp("sigmoid", {{"X", {"x"}}}), {{"x", Rnd({3, 4}, 211)}}});
  cases->push_back({"tanh", GradOp("tanh", {{"X", {"x"}}}), {{"x", Rnd({3, 4}, 212)}}});
  cases->push_back({"gelu", GradOp("gelu", {{"X", {"x"}}}), {{"x", Rnd({3, 4}, 213)}}});
  cases->push_back({"gelu approximate",
                    GradOp("gelu", {{"X", {"x"}}}, {{"approximate", true}}),
                    {{"x", Rnd({3, 4}, 214)}}});
  for (const std::string op : {"reduce_sum", "reduce_mean"}) {
    cases->push_back({op + " all", GradOp(op, {{"X", {"x"}}}), {{"x", Rnd({2, 3}, 220)}}});
    cases->push_back({op + " dim 1",
                      GradOp(op, {{"X", {"x"}}}, {{"dim", std::vector<int64_t>{1}}}),
                      {{"x", Rnd({2, 3, 2}, 221)}}});
    cases->push_back(
        {op + " dims -1, 0 keep_dim",
         GradOp(op, {{"X", {"x"}}}, {{"dim", std::vector<int64_t>{-1, 0}}, {"keep_dim", true}}),
         {{"x", Rnd({2, 3, 2}, 222)}}});
  }
  cases->push_back({"mul",
                    GradOp("mul", {{"X", {"x"}}, {"Y", {"y"}}}),
                    {{"x", Rnd({2, 3}, 230)}, {"y", Rnd({3, 2}, 231)}}});
  cases->push_back({"mul flattened",
                    GradOp("mul", {{"X", {"x"}}, {"Y", {"y"}}},
                           {{"x_num_col_dims", int64_t{2}}, {"y_num_col_dims", int64_t{1}}}),
                    {{"x", Rnd({2, 2, 3}, 232)}, {"y", Rnd({3, 2, 2}, 233)}}});
}

}  // namespace tandem
