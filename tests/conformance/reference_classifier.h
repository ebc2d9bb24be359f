// Float64 references of softmax, softmax_with_cross_entropy, accuracy and
// fc (see reference.h for the conventions): plain loops over indices, no
// code shared with the kernels.
#ifndef TANDEM_TESTS_CONFORMANCE_REFERENCE_CLASSIFIER_H_
#define TANDEM_TESTS_CONFORMANCE_REFERENCE_CLASSIFIER_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "tests/conformance/reference.h"

namespace tandem::reference {

// softmax along dim `axis` (>= 0).
Array Softmax(const Array& x, int axis);
// dX of softmax at X from dOut.
Array SoftmaxGrad(const Array& x, const Array& dout, int axis);

// {Softmax, Loss} of rows of the last dim of `logits` with one label per
// row (integral values); Loss is [..., 1] and 0 where the label is
// `ignore_index`.
std::pair<Array, Array> SoftmaxCrossEntropy(const Array& logits, const std::vector<double>& labels,
                                            int64_t ignore_index);
// dLogits from dLoss (one value per row).
Array SoftmaxCrossEntropyGrad(const Array& logits, const std::vector<double>& labels,
                              const Array& dloss, int64_t ignore_index);

// The rows of `scores` (last dim: classes) whose label is among the k best
// classes (sorted by score, descending, then by class index).
int64_t TopKCorrect(const Array& scores, const std::vector<double>& labels, int64_t k);

// fc: Input flattened at in_num_col_dims times W [K, M], plus bias [M]
// unless `bias` is null.
Array Fc(const Array& input, const Array& w, const Array* bias, int in_num_col_dims);
// {dInput, dW, dBias}.
std::vector<Array> FcGrad(const Array& input, const Array& w, const Array& dout,
                          int in_num_col_dims);

}  // namespace tandem::reference

#endif  // TANDEM_TESTS_CONFORMANCE_REFERENCE_CLASSIFIER_H_
