#include "tests/conformance/reference_classifier.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tests/conformance/reference_math.h"

namespace tandem::reference {
namespace {

// Offsets of the elements of line (o, in) along `axis`: calls fn(k, at).
struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
  Lines(const Shape& s, int axis) {
    for (int d = 0; d < s.rank(); ++d) (d < axis ? outer : d == axis ? n : inner) *= s.dim(d);
  }
  template <typename Fn>
  void ForEach(Fn fn) const {
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t in = 0; in < inner; ++in) {
        std::vector<int64_t> at(n);
        for (int64_t k = 0; k < n; ++k) at[k] = (o * n + k) * inner + in;
        fn(at);
      }
    }
  }
};

// The softmax of the values at `at`, stable: max subtracted first.
std::vector<double> SoftmaxOf(const std::vector<double>& v, const std::vector<int64_t>& at) {
  double max = -INFINITY;
  for (int64_t i : at) max = std::max(max, v[i]);
  std::vector<double> e;
  double sum = 0;
  for (int64_t i : at) {
    e.push_back(std::exp(v[i] - max));
    sum += e.back();
  }
  for (double& x : e) x /= sum;
  return e;
}

}  // namespace

Array Softmax(const Array& x, int axis) {
  Array out{x.shape, std::vector<double>(x.values.size())};
  Lines(x.shape, axis).ForEach([&](const std::vector<int64_t>& at) {
    const std::vector<double> s = SoftmaxOf(x.values, at);
    for (size_t k = 0; k < at.size(); ++k) out.values[at[k]] = s[k];
  });
  return out;
}

Array SoftmaxGrad(const Array& x, const Array& dout, int axis) {
  // d s_k / d x_j = s_k (delta_kj - s_j).
  Array dx{x.shape, std::vector<double>(x.values.size())};
  Lines(x.shape, axis).ForEach([&](const std::vector<int64_t>& at) {
    const std::vector<double> s = SoftmaxOf(x.values, at);
    for (size_t j = 0; j < at.size(); ++j) {
      double g = 0;
      for (size_t k = 0; k < at.size(); ++k) {
        g += dout.values[at[k]] * s[k] * ((k == j ? 1.0 : 0.0) - s[j]);
      }
      dx.values[at[j]] = g;
    }
  });
  return dx;
}

std::pair<Array, Array> SoftmaxCrossEntropy(const Array& logits, const std::vector<double>& labels,
                                            int64_t ignore_index) {
  const int last = logits.shape.rank() - 1;
  std::vector<int64_t> loss_dims = logits.shape.ToVector();
  loss_dims[last] = 1;
  Array softmax = Softmax(logits, last);
  Array loss{Shape(loss_dims), {}};
  const int64_t classes = logits.shape.dim(last);
  for (size_t r = 0; r < labels.size(); ++r) {
    const int64_t label = static_cast<int64_t>(labels[r]);
    if (label == ignore_index) {
      loss.values.push_back(0);
      continue;
    }
    // -log(softmax[label]) = log(sum exp(x - max)) - (x[label] - max)
    const double* row = logits.values.data() + r * classes;
    const double max = *std::max_element(row, row + classes);
    double sum = 0;
    for (int64_t k = 0; k < classes; ++k) sum += std::exp(row[k] - max);
    loss.values.push_back(std::log(sum) - (row[label] - max));
  }
  return {softmax, loss};
}

Array SoftmaxCrossEntropyGrad(const Array& logits, const std::vector<double>& labels,
                              const Array& dloss, int64_t ignore_index) {
  const int last = logits.shape.rank() - 1;
  const int64_t classes = logits.shape.dim(last);
  Array d = Softmax(logits, last);
  for (size_t r = 0; r < labels.size(); ++r) {
    const int64_t label = static_cast<int64_t>(labels[r]);
    for (int64_t k = 0; k < classes; ++k) {
      double& g = d.values[r * classes + k];
      g = label == ignore_index ? 0.0 : (g - (k == label ? 1.0 : 0.0)) * dloss.values[r];
    }
  }
  return d;
}

int64_t TopKCorrect(const Array& scores, const std::vector<double>& labels, int64_t k) {
  const int64_t classes = scores.shape.dim(scores.shape.rank() - 1);
  int64_t correct = 0;
  for (size_t r = 0; r < labels.size(); ++r) {
    const double* row = scores.values.data() + r * classes;
    std::vector<int64_t> order(classes);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return row[a] > row[b]; });
    const auto pos = std::find(order.begin(), order.end(), static_cast<int64_t>(labels[r]));
    correct += pos - order.begin() < k;
  }
  return correct;
}

Array Fc(const Array& input, const Array& w, const Array* bias, int in_num_col_dims) {
  Array out = Matmul(AsMatrix(input, in_num_col_dims), w, false, false, 1.0);
  const int64_t m = w.shape.dim(1);
  if (bias != nullptr) {
    for (size_t i = 0; i < out.values.size(); ++i) out.values[i] += bias->values[i % m];
  }
  std::vector<int64_t> dims(input.shape.dims().begin(),
                            input.shape.dims().begin() + in_num_col_dims);
  dims.push_back(m);
  out.shape = Shape(dims);
  return out;
}

std::vector<Array> FcGrad(const Array& input, const Array& w, const Array& dout,
                          int in_num_col_dims) {
  const Array x = AsMatrix(input, in_num_col_dims);
  const int64_t m = w.shape.dim(1);
  auto [dx, dw] =
      MatmulGrad(x, w, Array{Shape({x.shape.dim(0), m}), dout.values}, false, false, 1.0);
  dx.shape = input.shape;
  Array dbias{Shape({m}), std::vector<double>(m, 0.0)};
  for (size_t i = 0; i < dout.values.size(); ++i) dbias.values[i % m] += dout.values[i];
  return {dx, dw, dbias};
}

}  // namespace tandem::reference
