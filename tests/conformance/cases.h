// The conformance cases: every op x dtype x edge-case shape, each with its
// float64 reference result. Used by conformance_test.cc.
#ifndef TANDEM_TESTS_CONFORMANCE_CASES_H_
#define TANDEM_TESTS_CONFORMANCE_CASES_H_

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "framework/op/attr.h"
#include "framework/tensor/selected_rows.h"
#include "framework/tensor/tensor.h"
#include "tests/conformance/reference.h"

namespace tandem {

struct ConformanceCase {
  std::string op;
  std::string label;  // for failure messages
  // Host tensors by argument; an argument listed several times binds a list
  // (e.g. concat's X), in order.
  std::vector<std::pair<std::string, Tensor>> inputs;
  // Inputs that hold SelectedRows (host values), e.g. a sparse gradient.
  std::vector<std::pair<std::string, SelectedRows>> selected_rows_inputs;
  AttrMap attrs;
  // Output argument -> expected dtype and float64 values.
  std::map<std::string, std::pair<DataType, reference::Array>> expected;
  // Outputs bound to several variables (e.g. split's Out): argument ->
  // expected dtype and values of each variable, in order.
  std::map<std::string, std::vector<std::pair<DataType, reference::Array>>> expected_lists;
  // Outputs expected to hold SelectedRows; compared densified (rows summed
  // into a zero tensor of the dense shape).
  std::set<std::string> selected_rows_outputs;
  double rtol = 0;
  double atol = 0;

  // The dtype bound to each input argument and dtype attribute: what kernel
  // TypeConstraints are matched against.
  std::map<std::string, DataType> Bindings() const;
};

std::vector<ConformanceCase> AllConformanceCases();

// Cases of c_allreduce_sum, c_broadcast and c_allgather on one rank
// (cases_collective.cc).
void AddCollectiveCases(std::vector<ConformanceCase>* cases);

// Cases of the momentum, adam and gaussian_random kernels (cases_training.cc).
void AddTrainingCases(std::vector<ConformanceCase>* cases);

// Cases of the reshape, transpose, concat, split, dropout, conv2d, pool2d,
// layer_norm and self_attention kernels (cases_layers.cc).
void AddLayerCases(std::vector<ConformanceCase>* cases);

// Cases of elementwise_sub/mul/div, relu/sigmoid/tanh, reduce_sum/mean and
// mul (cases_math.cc).
void AddMathCases(std::vector<ConformanceCase>* cases);

// Cases of softmax, softmax_with_cross_entropy, accuracy and fc
// (cases_classifier.cc).
void AddClassifierCases(std::vector<ConformanceCase>* cases);

}  // namespace tandem

#endif  // TANDEM_TESTS_CONFORMANCE_CASES_H_
