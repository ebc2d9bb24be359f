// Cases of softmax, softmax_with_cross_entropy, accuracy and fc, and of
// their gradient ops.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/testing/tensor_testutil.h"
#include "tests/conformance/case_util.h"
#include "tests/conformance/cases.h"
#include "tests/conformance/reference_classifier.h"

namespace tandem {
namespace {

using case_util::Input;
using case_util::kFloats;
using case_util::kFloatsWith16Bit;
using case_util::Label;
using case_util::SetTolerance;
using reference::Array;

// Values far apart (up to +-1000): exp(x) alone would overflow.
std::pair<Tensor, Array> LargeLogits(DataType t, const Shape& s, uint64_t seed) {
  std::vector<double> v = RandomValues(t, s.num_elements(), seed);
  for (double& e : v) e *= 500;
  const Tensor tensor = MakeTensor(t, s, v);
  return {tensor, Array{s, ToDoubles(tensor)}};
}

void AddSoftmax(std::vector<ConformanceCase>* cases) {
  struct Config {
    Shape x;
    int64_t axis;
    bool large;
  };
  const std::vector<Config> configs = {
      {Shape({1023}), -1, false},   {Shape({4, 5}), -1, false},    {Shape({4, 5}), 0, false},
      {Shape({2, 3, 4}), 1, false}, {Shape({0, 3}), -1, false},    {Shape({3, 0}), -1, false},
      {Shape({2, 1}), -1, false},   {Shape({33, 150}), -1, false}, {Shape({3, 7}), -1, true},
  };
  uint64_t seed = 24000;
  for (DataType t : kFloats) {
    for (const Config& cfg : configs) {
      auto [x, xa] = cfg.large ? LargeLogits(t, cfg.x, ++seed) : Input(t, cfg.x, ++seed);
      const int axis = static_cast<int>(cfg.axis < 0 ? cfg.axis + cfg.x.rank() : cfg.axis);
      const std::string what =
          absl::StrCat(cfg.x.ToString(), " axis ", cfg.axis, cfg.large ? " large" : "");
      const int64_t n = cfg.x.dim(axis);
      const Array out = reference::Softmax(xa, axis);
      ConformanceCase c;
      c.op = "softmax";
      c.label = Label(c.op, t, what);
      c.inputs = {{"X", x}};
      c.attrs["axis"] = cfg.axis;
      c.expected["Out"] = {t, out};
      SetTolerance(&c, t, 4);
      cases->push_back(c);

      auto [dout, douta] = Input(t, cfg.x, ++seed);
      ConformanceCase g;
      g.op = "softmax_grad";
      g.label = Label(g.op, t, what);
      g.inputs = {{"Out", MakeTensor(t, cfg.x, out.values)}, {"Out@GRAD", dout}};
      g.attrs["axis"] = cfg.axis;
      g.expected["X@GRAD"] = {t, reference::SoftmaxGrad(xa, douta, axis)};
      SetTolerance(&g, t, 4 * std::max<int64_t>(n, 1));
      cases->push_back(g);
    }
  }
}

struct CrossEntropyConfig {
  Shape logits;
  bool flat_label;  // Label [...] rather than [..., 1]
  int64_t ignore_index;
  bool large;
};

void AddSoftmaxWithCrossEntropy(std::vector<ConformanceCase>* cases) {
  const std::vector<CrossEntropyConfig> configs = {
      {Shape({4, 5}), false, -100, false},     // [N, C] with [N, 1]
      {Shape({4, 5}), true, -100, false},      // [N] labels
      {Shape({2, 3, 5}), false, -100, false},  // [..., C]
      {Shape({6, 3}), false, 1, false},        // rows labelled 1 ignored
      {Shape({5, 4}), false, -1, false},       // label -1 ignored
      {Shape({0, 3}), false, -100, false},     // no rows
      {Shape({3, 1001}), false, -100, false},  // many classes
      {Shape({4, 6}), false, -100, true},      // logits up to +-1000
      {Shape({7}), false, -100, false},        // one row [C]
  };
  uint64_t seed = 25000;
  for (DataType t : kFloats) {
    for (const CrossEntropyConfig& cfg : configs) {
      auto [logits, la] =
          cfg.large ? LargeLogits(t, cfg.logits, ++seed) : Input(t, cfg.logits, ++seed);
      const int64_t classes = cfg.logits.dim(cfg.logits.rank() - 1);
      std::vector<int64_t> label_dims(cfg.logits.dims().begin(), cfg.logits.dims().end() - 1);
      if (!cfg.flat_label) label_dims.push_back(1);
      const Shape label_shape(label_dims);
      std::vector<double> labels(label_shape.num_elements());
      for (size_t i = 0; i < labels.size(); ++i) {
        labels[i] = static_cast<double>((i * 7 + seed) % classes);
      }
      if (cfg.ignore_index < 0 && labels.size() > 1) labels[1] = cfg.ignore_index;
      const Tensor label = MakeTensor(DataType::kInt64, label_shape, labels);
      const std::string what =
          absl::StrCat(cfg.logits.ToString(), " Label", label_shape.ToString(), " ignore_index ",
                       cfg.ignore_index, cfg.large ? " large" : "");
      const AttrMap attrs = {{"ignore_index", cfg.ignore_index}, {"soft_label", false}};
      const auto [softmax, loss] = reference::SoftmaxCrossEntropy(la, labels, cfg.ignore_index);
      ConformanceCase c;
      c.op = "softmax_with_cross_entropy";
      c.label = Label(c.op, t, what);
      c.inputs = {{"Logits", logits}, {"Label", label}};
      c.attrs = attrs;
      c.expected["Softmax"] = {t, softmax};
      c.expected["Loss"] = {t, loss};
      SetTolerance(&c, t, 4);
      cases->push_back(c);

      auto [dloss, dla] = Input(t, loss.shape, ++seed);
      ConformanceCase g;
      g.op = "softmax_with_cross_entropy_grad";
      g.label = Label(g.op, t, what);
      g.inputs = {{"Softmax", MakeTensor(t, cfg.logits, softmax.values)},
                  {"Label", label},
                  {"Loss@GRAD", dloss}};
      g.attrs = attrs;
      g.expected["Logits@GRAD"] = {
          t, reference::SoftmaxCrossEntropyGrad(la, labels, dla, cfg.ignore_index)};
      SetTolerance(&g, t, 4);
      cases->push_back(g);
    }
  }
}

void AddAccuracy(std::vector<ConformanceCase>* cases) {
  struct Config {
    Shape scores;
    bool flat_label;
    int64_t k;
    bool ties;  // scores rounded to few values, so that ties are common
  };
  const std::vector<Config> configs = {
      {Shape({8, 4}), false, 1, false},    {Shape({8, 4}), true, 2, false},
      {Shape({16, 5}), false, 1, true},    {Shape({16, 5}), false, 3, true},
      {Shape({5, 3}), false, 10, false},  // k > C: every row is correct
      {Shape({0, 3}), false, 1, false},   // no rows: accuracy 0
      {Shape({2, 3, 6}), false, 2, false},
  };
  uint64_t seed = 26000;
  for (DataType t : kFloats) {
    for (const Config& cfg : configs) {
      std::vector<double> v = RandomValues(t, cfg.scores.num_elements(), ++seed);
      if (cfg.ties) {
        for (double& e : v) e = e > 0 ? 1 : 0;
      }
      const Tensor scores = MakeTensor(t, cfg.scores, v);
      const Array sa{cfg.scores, ToDoubles(scores)};
      const int64_t classes = cfg.scores.dim(cfg.scores.rank() - 1);
      std::vector<int64_t> label_dims(cfg.scores.dims().begin(), cfg.scores.dims().end() - 1);
      if (!cfg.flat_label) label_dims.push_back(1);
      const Shape label_shape(label_dims);
      std::vector<double> labels(label_shape.num_elements());
      for (size_t i = 0; i < labels.size(); ++i) {
        labels[i] = static_cast<double>((i * 3 + seed) % classes);
      }
      const int64_t correct = reference::TopKCorrect(sa, labels, cfg.k);
      const int64_t total = static_cast<int64_t>(labels.size());
      ConformanceCase c;
      c.op = "accuracy";
      c.label = Label(c.op, t,
                      absl::StrCat(cfg.scores.ToString(), " Label", label_shape.ToString(), " k ",
                                   cfg.k, cfg.ties ? " ties" : ""));
      c.inputs = {{"Out", scores}, {"Label", MakeTensor(DataType::kInt64, label_shape, labels)}};
      c.attrs["k"] = cfg.k;
      c.expected["Accuracy"] = {
          DataType::kFloat32, Array{Shape({1}),
                                    {reference::Convert(total == 0 ? 0.0 : double(correct) / total,
                                                        DataType::kFloat32)}}};
      c.expected["Correct"] = {DataType::kInt64, Array{Shape({1}), {double(correct)}}};
      c.expected["Total"] = {DataType::kInt64, Array{Shape({1}), {double(total)}}};
      cases->push_back(std::move(c));
    }
  }
}

struct FcConfig {
  Shape input, w;
  bool bias;
  int64_t in_num_col_dims;
};

void AddFc(std::vector<ConformanceCase>* cases) {
  const std::vector<FcConfig> configs = {
      {Shape({2, 3}), Shape({3, 4}), true, 1},
      {Shape({2, 3}), Shape({3, 4}), false, 1},
      {Shape({2, 3, 4}), Shape({12, 5}), true, 1},  // flattened to [2, 12]
      {Shape({2, 3, 4}), Shape({4, 5}), true, 2},   // Out [2, 3, 5]
      {Shape({17, 33}), Shape({33, 9}), true, 1},   // odd sizes
      {Shape({64, 784}), Shape({784, 10}), true, 1},
      {Shape({256, 192}), Shape({192, 320}), true, 1},  // tiles of a tensor-core product
      {Shape({2, 0}), Shape({0, 3}), true, 1},  // K = 0: Out = Bias
      {Shape({0, 4}), Shape({4, 3}), true, 1},  // no rows
  };
  uint64_t seed = 27000;
  for (DataType t : kFloatsWith16Bit) {
    for (const FcConfig& cfg : configs) {
      auto [input, ia] = Input(t, cfg.input, ++seed);
      auto [w, wa] = Input(t, cfg.w, ++seed);
      auto [bias, ba] = Input(t, Shape({cfg.w.dim(1)}), ++seed);
      const std::string what = absl::StrCat(cfg.input.ToString(), " (", cfg.in_num_col_dims, ") x ",
                                            cfg.w.ToString(), cfg.bias ? " + bias" : "");
      const int in = static_cast<int>(cfg.in_num_col_dims);
      const Array out = reference::Fc(ia, wa, cfg.bias ? &ba : nullptr, in);
      const int64_t k = cfg.w.dim(0);
      ConformanceCase c;
      c.op = "fc";
      c.label = Label(c.op, t, what);
      c.inputs = {{"Input", input}, {"W", w}};
      if (cfg.bias) c.inputs.push_back({"Bias", bias});
      c.attrs["in_num_col_dims"] = cfg.in_num_col_dims;
      c.expected["Out"] = {t, out};
      SetTolerance(&c, t, k + 1);
      cases->push_back(c);

      auto [dout, douta] = Input(t, out.shape, ++seed);
      const std::vector<Array> grads = reference::FcGrad(ia, wa, douta, in);
      ConformanceCase g;
      g.op = "fc_grad";
      g.label = Label(g.op, t, what);
      g.inputs = {{"Input", input}, {"W", w}, {"Out@GRAD", dout}};
      g.attrs["in_num_col_dims"] = cfg.in_num_col_dims;
      g.expected["Input@GRAD"] = {t, grads[0]};
      g.expected["W@GRAD"] = {t, grads[1]};
      g.expected["Bias@GRAD"] = {t, grads[2]};
      SetTolerance(&g, t, std::max<int64_t>(1, out.shape.num_elements()));
      cases->push_back(g);

      ConformanceCase only_bias = g;
      only_bias.label += " (Bias@GRAD only)";
      only_bias.expected.erase("Input@GRAD");
      only_bias.expected.erase("W@GRAD");
      cases->push_back(only_bias);
    }
  }
}

}  // namespace

void AddClassifierCases(std::vector<ConformanceCase>* cases) {
  AddSoftmax(cases);
  AddSoftmaxWithCrossEntropy(cases);
  AddAccuracy(cases);
  AddFc(cases);
}

}  // namespace tandem
