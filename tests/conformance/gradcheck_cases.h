// Gradient-check cases: an op with float64 inputs whose gradient ops
// gradcheck_test.cc compares with central differences. The base cases live
// in gradcheck_test.cc; op families add theirs from their own files
// (declared below, called from gradcheck_test.cc's case list).
//
//   cases->push_back({"relu", GradOp("relu", {{"X", {"x"}}}),
//                     {{"x", RandomTensor(DataType::kFloat64, {2, 3}, 1)}}});
//
// Test-only; stateless and thread-safe.
#ifndef TANDEM_TESTS_CONFORMANCE_GRADCHECK_CASES_H_
#define TANDEM_TESTS_CONFORMANCE_GRADCHECK_CASES_H_

#include <map>
#include <string>
#include <vector>

#include "framework/op/op_desc.h"
#include "framework/tensor/tensor.h"

namespace tandem {

struct GradCase {
  std::string label;
  OpDesc op;                           // inputs and every output named
  std::map<std::string, Tensor> vars;  // forward inputs by variable name
  // The output argument differentiated: L = sum(output * R).
  std::string output = "Out";
};

// Op `type` reading `inputs` (argument -> variable names) and writing
// `outputs` (argument -> variable name; default: Out as "out").
OpDesc GradOp(const std::string& type, std::map<std::string, std::vector<std::string>> inputs,
              AttrMap attrs = {},
              const std::map<std::string, std::string>& outputs = {{"Out", "out"}});

// Cases of reshape, transpose, concat, split, dropout, conv2d, pool2d,
// layer_norm and self_attention (gradcheck_cases_layers.cc).
void AddLayerGradCases(std::vector<GradCase>* cases);

// Cases of elementwise_sub/mul/div, relu/sigmoid/tanh, reduce_sum/mean and
// mul (gradcheck_cases_math.cc).
void AddMathGradCases(std::vector<GradCase>* cases);

// Cases of softmax, softmax_with_cross_entropy and fc
// (gradcheck_cases_classifier.cc).
void AddClassifierGradCases(std::vector<GradCase>* cases);

}  // namespace tandem

#endif  // TANDEM_TESTS_CONFORMANCE_GRADCHECK_CASES_H_
