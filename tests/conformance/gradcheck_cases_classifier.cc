// Gradient-check cases of softmax, softmax_with_cross_entropy and fc.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/testing/tensor_testutil.h"
#include "tests/conformance/gradcheck_cases.h"

namespace tandem {
namespace {

Tensor Rnd(const Shape& s, uint64_t seed) { return RandomTensor(DataType::kFloat64, s, seed); }

}  // namespace

void AddClassifierGradCases(std::vector<GradCase>* cases) {
  for (int64_t axis : {-1, 0, 1}) {
    cases->push_back({absl::StrCat("softmax axis ", axis),
                      GradOp("softmax", {{"X", {"x"}}}, {{"axis", axis}}),
                      {{"x", Rnd({2, 3, 4}, 300 + axis)}}});
  }
  // Row 2 is ignored; Label [N, 1], then [N] with [..., C] logits.
  GradCase ce{"softmax_with_cross_entropy",
              GradOp("softmax_with_cross_entropy", {{"Logits", {"logits"}}, {"Label", {"label"}}},
                     {}, {{"Softmax", "softmax"}, {"Loss", "loss"}}),
              {{"logits", Rnd({4, 5}, 310)},
               {"label", MakeTensor(DataType::kInt64, {4, 1}, {3, 0, -100, 4})}},
              "Loss"};
  cases->push_back(ce);
  ce.label = "softmax_with_cross_entropy [2, 2, 3], Label [2, 2], ignore_index 1";
  ce.op.attrs["ignore_index"] = int64_t{1};
  ce.vars = {{"logits", Rnd({2, 2, 3}, 311)},
             {"label", MakeTensor(DataType::kInt64, {2, 2}, {2, 1, 0, 2})}};
  cases->push_back(ce);
  cases->push_back({"fc with bias",
                    GradOp("fc", {{"Input", {"x"}}, {"W", {"w"}}, {"Bias", {"b"}}}),
                    {{"x", Rnd({3, 4}, 320)}, {"w", Rnd({4, 2}, 321)}, {"b", Rnd({2}, 322)}}});
  cases->push_back(
      {"fc without bias, in_num_col_dims 2",
       GradOp("fc", {{"Input", {"x"}}, {"W", {"w"}}}, {{"in_num_col_dims", int64_t{2}}}),
       {{"x", Rnd({2, 2, 3}, 323)}, {"w", Rnd({3, 2}, 324)}}});
}

}  // namespace tandem
