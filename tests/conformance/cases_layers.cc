// Conformance cases of the layout ops (reshape, transpose, concat, split)
// and the layer ops (dropout, conv2d, pool2d, layer_norm, self_attention)
// and their gradients.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/testing/tensor_testutil.h"
#include "tests/conformance/case_util.h"
#include "tests/conformance/cases.h"
#include "tests/conformance/reference_layers.h"

namespace tandem {
namespace {

using case_util::Input;
using case_util::kFloats;
using case_util::kFloatsWith16Bit;
using case_util::kNumeric;
using case_util::kNumericWith16Bit;
using case_util::Label;
using case_util::SetTolerance;
using reference::Array;
using Ints = std::vector<int64_t>;

std::string Join(const Ints& v) { return absl::StrCat("[", absl::StrJoin(v, ", "), "]"); }

void AddReshape(std::vector<ConformanceCase>* cases) {
  struct Config {
    Shape x;
    Ints shape;
    Shape out;
  };
  const std::vector<Config> configs = {
      {Shape({2, 3, 4}), {0, -1}, Shape({2, 12})},
      {Shape({6}), {2, 3}, Shape({2, 3})},
      {Shape(), {1, 1}, Shape({1, 1})},
      {Shape({0, 4}), {-1, 2}, Shape({0, 2})},
      {Shape({37, 29}), {29, -1, 1}, Shape({29, 37, 1})},
  };
  uint64_t seed = 20000;
  for (DataType t : kNumeric) {
    for (const Config& cfg : configs) {
      auto [x, xa] = Input(t, cfg.x, ++seed);
      const std::string what = absl::StrCat(cfg.x.ToString(), " to ", Join(cfg.shape));
      ConformanceCase c;
      c.op = "reshape";
      c.label = Label(c.op, t, what);
      c.inputs = {{"X", x}};
      c.attrs["shape"] = cfg.shape;
      c.expected["Out"] = {t, Array{cfg.out, xa.values}};
      cases->push_back(c);

      auto [dout, douta] = Input(t, cfg.out, ++seed);
      ConformanceCase g;
      g.op = "reshape_grad";
      g.label = Label(g.op, t, what);
      g.inputs = {{"X", x}, {"Out@GRAD", dout}};
      g.expected["X@GRAD"] = {t, Array{cfg.x, douta.values}};
      cases->push_back(g);
    }
  }
}

void AddTranspose(std::vector<ConformanceCase>* cases) {
  const std::vector<std::pair<Shape, Ints>> configs = {
      {Shape({2, 3, 4}), {2, 0, 1}},
      {Shape({37, 29}), {1, 0}},
      {Shape(), {}},
      {Shape({0, 3}), {1, 0}},
      {Shape({2, 1, 3, 1}), {3, 1, 0, 2}},  // size-1 dims
      {Shape({2, 3, 4, 5}), {0, 2, 3, 1}},  // dims 2 and 3 stay adjacent
      {Shape({3, 4}), {0, 1}},              // identity
  };
  uint64_t seed = 21000;
  for (DataType t : kNumeric) {
    for (const auto& [shape, axis] : configs) {
      auto [x, xa] = Input(t, shape, ++seed);
      const std::string what = absl::StrCat(shape.ToString(), " axis ", Join(axis));
      ConformanceCase c;
      c.op = "transpose";
      c.label = Label(c.op, t, what);
      c.inputs = {{"X", x}};
      c.attrs["axis"] = axis;
      const Array out = reference::Transpose(xa, axis);
      c.expected["Out"] = {t, out};
      cases->push_back(c);

      auto [dout, douta] = Input(t, out.shape, ++seed);
      std::vector<int64_t> inverse(axis.size());
      for (size_t k = 0; k < axis.size(); ++k) inverse[axis[k]] = static_cast<int64_t>(k);
      ConformanceCase g;
      g.op = "transpose_grad";
      g.label = Label(g.op, t, what);
      g.inputs = {{"Out@GRAD", dout}};
      g.attrs["axis"] = axis;
      g.expected["X@GRAD"] = {t, reference::Transpose(douta, inverse)};
      cases->push_back(g);
    }
  }
}

void AddConcat(std::vector<ConformanceCase>* cases) {
  struct Config {
    std::vector<Shape> xs;
    int64_t axis;
  };
  const std::vector<Config> configs = {
      {{Shape({2, 1, 3}), Shape({2, 2, 3}), Shape({2, 3, 3})}, 1},
      {{Shape({3}), Shape({0}), Shape({4})}, 0},  // an empty piece
      {{Shape({2, 3}), Shape({2, 5})}, -1},
      {{Shape({4, 2})}, 0},                 // one input
      {{Shape({0, 2}), Shape({0, 3})}, 1},  // empty result
      {{Shape({37, 29}), Shape({41, 29})}, 0},
  };
  uint64_t seed = 22000;
  for (DataType t : kNumericWith16Bit) {
    for (const Config& cfg : configs) {
      ConformanceCase c;
      c.op = "concat";
      std::vector<Array> xa;
      std::string what;
      for (const Shape& s : cfg.xs) {
        auto [x, a] = Input(t, s, ++seed);
        c.inputs.push_back({"X", x});
        xa.push_back(a);
        absl::StrAppend(&what, s.ToString(), " ");
      }
      absl::StrAppend(&what, "axis ", cfg.axis);
      const int axis = static_cast<int>(cfg.axis < 0 ? cfg.axis + cfg.xs[0].rank() : cfg.axis);
      c.label = Label(c.op, t, what);
      c.attrs["axis"] = cfg.axis;
      const Array out = reference::Concat(xa, axis);
      c.expected["Out"] = {t, out};
      cases->push_back(c);

      auto [dout, douta] = Input(t, out.shape, ++seed);
      std::vector<int64_t> sizes;
      for (const Shape& s : cfg.xs) sizes.push_back(s.dim(axis));
      const std::vector<Array> pieces = reference::Split(douta, axis, sizes);
      ConformanceCase g;
      g.op = "concat_grad";
      g.label = Label(g.op, t, what);
      g.inputs = c.inputs;
      g.inputs.push_back({"Out@GRAD", dout});
      g.attrs["axis"] = cfg.axis;
      for (const Array& p : pieces) g.expected_lists["X@GRAD"].push_back({t, p});
      cases->push_back(g);

      if (pieces.size() >= 3) {  // only the first and last gradients wanted
        ConformanceCase partial = g;
        partial.label += " (grad_positions [0, 2])";
        partial.attrs["grad_positions"] = Ints{0, 2};
        partial.expected_lists["X@GRAD"] = {{t, pieces[0]}, {t, pieces[2]}};
        cases->push_back(partial);
      }
    }
  }
}

void AddSplit(std::vector<ConformanceCase>* cases) {
  struct Config {
    Shape x;
    int64_t axis, num;
    Ints sections, sizes;  // sizes: the pieces the attrs give
  };
  const std::vector<Config> configs = {
      {Shape({2, 5}), 1, 0, {1, -1, 2}, {1, 2, 2}},
      {Shape({6, 2}), 0, 3, {}, {2, 2, 2}},
      {Shape({4}), 0, 0, {4, 0}, {4, 0}},  // an empty piece
      {Shape({2, 3, 4}), -1, 2, {}, {2, 2}},
      {Shape({37, 29}), 1, 0, {10, -1}, {10, 19}},
      {Shape({0, 4}), 1, 2, {}, {2, 2}},  // empty input
  };
  uint64_t seed = 23000;
  for (DataType t : kNumeric) {
    for (const Config& cfg : configs) {
      auto [x, xa] = Input(t, cfg.x, ++seed);
      const std::string what = absl::StrCat(cfg.x.ToString(), " axis ", cfg.axis, " num ", cfg.num,
                                            " sections ", Join(cfg.sections));
      const int axis = static_cast<int>(cfg.axis < 0 ? cfg.axis + cfg.x.rank() : cfg.axis);
      const AttrMap attrs = {{"axis", cfg.axis}, {"num", cfg.num}, {"sections", cfg.sections}};
      ConformanceCase c;
      c.op = "split";
      c.label = Label(c.op, t, what);
      c.inputs = {{"X", x}};
      c.attrs = attrs;
      const std::vector<Array> pieces = reference::Split(xa, axis, cfg.sizes);
      for (const Array& p : pieces) c.expected_lists["Out"].push_back({t, p});
      cases->push_back(c);

      ConformanceCase g;
      g.op = "split_grad";
      g.label = Label(g.op, t, what);
      g.inputs = {{"X", x}};
      g.attrs = attrs;
      std::vector<Array> grads;
      for (const Array& p : pieces) {
        auto [d, da] = Input(t, p.shape, ++seed);
        g.inputs.push_back({"Out@GRAD", d});
        grads.push_back(da);
      }
      g.expected["X@GRAD"] = {t, reference::Concat(grads, axis)};
      cases->push_back(g);

      // Only the last piece's gradient given: the others are zeros.
      ConformanceCase partial = g;
      partial.label += " (last piece only)";
      partial.attrs["grad_positions"] = Ints{static_cast<int64_t>(pieces.size()) - 1};
      partial.inputs = {{"X", x}, g.inputs.back()};
      for (size_t i = 0; i + 1 < grads.size(); ++i) {
        std::fill(grads[i].values.begin(), grads[i].values.end(), 0.0);
      }
      partial.expected["X@GRAD"] = {t, reference::Concat(grads, axis)};
      cases->push_back(partial);
    }
  }
}

void AddDropout(std::vector<ConformanceCase>* cases) {
  const std::vector<Shape> shapes = {Shape({1023}), Shape({3, 7}), Shape({0}), Shape()};
  uint64_t seed = 24000;
  for (DataType t : kFloatsWith16Bit) {
    // The 16-bit types multiply in float32, then round once more.
    const DataType compute = IsLowPrecisionFloat(t) ? DataType::kFloat32 : t;
    for (const Shape& s : shapes) {
      for (double p : {0.5, 0.0, 1.0, 0.1}) {
        auto [x, xa] = Input(t, s, ++seed);
        const int64_t dropout_seed = static_cast<int64_t>(seed) * 7 - 100000;
        const std::string what = absl::StrCat(s.ToString(), " p ", p, " seed ", dropout_seed);
        const AttrMap attrs = {{"dropout_prob", p}, {"seed", dropout_seed}};
        // Bit-identical on every backend: no tolerance.
        const auto [out, mask] = reference::DropoutTrain(xa, t, p, dropout_seed, 0);
        ConformanceCase c;
        c.op = "dropout";
        c.label = Label(c.op, t, what);
        c.inputs = {{"X", x}};
        c.attrs = attrs;
        c.expected["Out"] = {t, out};
        c.expected["Mask"] = {DataType::kBool, mask};
        cases->push_back(c);

        ConformanceCase test = c;
        test.label = Label(c.op, t, what + " is_test");
        test.attrs["is_test"] = true;
        test.expected["Out"] = {t, xa};
        test.expected["Mask"] = {DataType::kBool,
                                 Array{s, std::vector<double>(xa.values.size(), 1.0)}};
        cases->push_back(test);

        auto [dout, douta] = Input(t, s, ++seed);
        const double scale = reference::Convert(p >= 1 ? 0.0 : 1.0 / (1.0 - p), compute);
        for (bool is_test : {false, true}) {
          Array dx{s, {}};
          for (size_t i = 0; i < douta.values.size(); ++i) {
            dx.values.push_back(
                mask.values[i] == 0 ? 0.0
                : is_test
                    ? douta.values[i]
                    : reference::Convert(reference::Convert(douta.values[i] * scale, compute), t));
          }
          ConformanceCase g;
          g.op = "dropout_grad";
          g.label = Label(g.op, t, what + (is_test ? " is_test" : ""));
          g.inputs = {{"Mask", MakeTensor(DataType::kBool, s, mask.values)}, {"Out@GRAD", dout}};
          g.attrs = {{"dropout_prob", p}, {"is_test", is_test}};
          g.expected["X@GRAD"] = {t, dx};
          cases->push_back(g);
        }
      }
    }
  }
}

struct ConvConfig {
  Shape x, w;
  reference::ConvAttrs a;
};

void AddConv2D(std::vector<ConformanceCase>* cases) {
  const std::vector<ConvConfig> configs = {
      {Shape({2, 3, 5, 5}), Shape({4, 3, 3, 3}), {{1, 1}, {1, 1}, {1, 1}, 1}},
      {Shape({2, 3, 5, 5}), Shape({4, 3, 3, 3}), {{2, 2}, {1, 1}, {1, 1}, 1}},
      {Shape({1, 4, 7, 8}), Shape({6, 2, 3, 3}), {{2, 1}, {1, 0}, {1, 2}, 2}},  // groups 2
      {Shape({2, 3, 4, 4}), Shape({2, 3, 1, 1}), {{1, 1}, {0, 0}, {1, 1}, 1}},  // 1x1
      {Shape({0, 3, 5, 5}), Shape({4, 3, 3, 3}), {{1, 1}, {1, 1}, {1, 1}, 1}},  // empty batch
      {Shape({1, 1, 1, 1}), Shape({1, 1, 1, 1}), {{1, 1}, {0, 0}, {1, 1}, 1}},
      {Shape({2, 3, 6, 5}), Shape({5, 3, 2, 4}), {{1, 2}, {1, 1}, {1, 1}, 1}},
      {Shape({3, 8, 9, 9}), Shape({16, 8, 3, 3}), {{1, 1}, {1, 1}, {1, 1}, 1}},
      {Shape({2, 6, 6, 6}), Shape({6, 1, 3, 3}), {{1, 1}, {1, 1}, {1, 1}, 6}},  // depthwise
  };
  uint64_t seed = 25000;
  for (DataType t : kFloatsWith16Bit) {
    for (const ConvConfig& cfg : configs) {
      auto [x, xa] = Input(t, cfg.x, ++seed);
      auto [w, wa] = Input(t, cfg.w, ++seed);
      const reference::ConvAttrs& a = cfg.a;
      const std::string what =
          absl::StrCat(cfg.x.ToString(), " * ", cfg.w.ToString(), " strides ", a.strides[0], ",",
                       a.strides[1], " paddings ", a.paddings[0], ",", a.paddings[1], " dilations ",
                       a.dilations[0], ",", a.dilations[1], " groups ", a.groups);
      const AttrMap attrs = {{"strides", Ints{a.strides[0], a.strides[1]}},
                             {"paddings", Ints{a.paddings[0], a.paddings[1]}},
                             {"dilations", Ints{a.dilations[0], a.dilations[1]}},
                             {"groups", a.groups}};
      const int64_t terms = cfg.w.dim(1) * cfg.w.dim(2) * cfg.w.dim(3);
      ConformanceCase c;
      c.op = "conv2d";
      c.label = Label(c.op, t, what);
      c.inputs = {{"Input", x}, {"Filter", w}};
      c.attrs = attrs;
      const Array out = reference::Conv2D(xa, wa, a);
      c.expected["Output"] = {t, out};
      SetTolerance(&c, t, terms);
      cases->push_back(c);

      auto [dout, douta] = Input(t, out.shape, ++seed);
      const auto [dx, dw] = reference::Conv2DGrad(xa, wa, douta, a);
      ConformanceCase g;
      g.op = "conv2d_grad";
      g.label = Label(g.op, t, what);
      g.inputs = {{"Input", x}, {"Filter", w}, {"Output@GRAD", dout}};
      g.attrs = attrs;
      g.expected["Input@GRAD"] = {t, dx};
      g.expected["Filter@GRAD"] = {t, dw};
      // A filter gradient sums over the batch and the output positions.
      SetTolerance(&g, t, std::max<int64_t>(terms, out.shape.num_elements() / cfg.w.dim(0)));
      cases->push_back(g);
      for (const char* only : {"Input@GRAD", "Filter@GRAD"}) {
        ConformanceCase one = g;
        one.label += absl::StrCat(" (", only, " only)");
        one.expected.erase(std::string(only) == "Input@GRAD" ? "Filter@GRAD" : "Input@GRAD");
        cases->push_back(one);
      }
    }
  }
}

void AddPool2D(std::vector<ConformanceCase>* cases) {
  struct Config {
    Shape x;
    reference::PoolAttrs a;
  };
  const std::vector<Config> configs = {
      {Shape({2, 3, 5, 5}), {true, {3, 3}, {1, 1}, {1, 1}, false, true}},
      {Shape({2, 3, 6, 6}), {true, {2, 2}, {2, 2}, {0, 0}, false, true}},
      {Shape({2, 3, 5, 5}), {false, {3, 3}, {2, 2}, {1, 1}, false, true}},
      {Shape({2, 3, 5, 5}), {false, {3, 3}, {2, 2}, {1, 1}, false, false}},  // inclusive
      {Shape({1, 2, 7, 6}), {false, {1, 1}, {1, 1}, {0, 0}, true, true}},    // global avg
      {Shape({1, 2, 7, 6}), {true, {1, 1}, {1, 1}, {0, 0}, true, true}},     // global max
      {Shape({0, 3, 4, 4}), {true, {2, 2}, {2, 2}, {0, 0}, false, true}},    // empty batch
      {Shape({3, 16, 12, 12}), {true, {2, 2}, {2, 2}, {0, 0}, false, true}},
      {Shape({2, 2, 7, 5}), {false, {2, 3}, {2, 1}, {1, 2}, false, true}},
  };
  uint64_t seed = 26000;
  for (DataType t : kFloats) {
    for (const Config& cfg : configs) {
      const reference::PoolAttrs& a = cfg.a;
      auto [x, xa] = Input(t, cfg.x, ++seed);
      const std::string what = absl::StrCat(
          cfg.x.ToString(), a.max ? " max" : " avg", a.global ? " global" : "", " ksize ",
          a.ksize[0], ",", a.ksize[1], " strides ", a.strides[0], ",", a.strides[1], " paddings ",
          a.paddings[0], ",", a.paddings[1], a.exclusive ? "" : " inclusive");
      AttrMap attrs = {{"pooling_type", std::string(a.max ? "max" : "avg")},
                       {"strides", Ints{a.strides[0], a.strides[1]}},
                       {"paddings", Ints{a.paddings[0], a.paddings[1]}},
                       {"global_pooling", a.global},
                       {"exclusive", a.exclusive}};
      if (!a.global) attrs["ksize"] = Ints{a.ksize[0], a.ksize[1]};
      const int64_t window = a.global ? cfg.x.dim(2) * cfg.x.dim(3) : a.ksize[0] * a.ksize[1];
      ConformanceCase c;
      c.op = "pool2d";
      c.label = Label(c.op, t, what);
      c.inputs = {{"X", x}};
      c.attrs = attrs;
      const Array out = reference::Pool2D(xa, a);
      c.expected["Out"] = {t, out};
      SetTolerance(&c, t, window);
      cases->push_back(c);

      auto [dout, douta] = Input(t, out.shape, ++seed);
      ConformanceCase g;
      g.op = "pool2d_grad";
      g.label = Label(g.op, t, what);
      // Out as the kernel would see it: the forward result in T.
      g.inputs = {{"X", x}, {"Out", MakeTensor(t, out.shape, out.values)}, {"Out@GRAD", dout}};
      g.attrs = attrs;
      g.expected["X@GRAD"] = {t, reference::Pool2DGrad(xa, douta, a)};
      SetTolerance(&g, t, window);
      cases->push_back(g);

      if (a.max) {  // X of 0s and 1s: most windows tie, the first maximum wins
        Array ties{cfg.x, {}};
        for (int64_t i = 0; i < cfg.x.num_elements(); ++i) ties.values.push_back(i % 7 < 2);
        const Array tie_out = reference::Pool2D(ties, a);
        ConformanceCase tie = g;
        tie.label += " (ties)";
        tie.inputs = {{"X", MakeTensor(t, cfg.x, ties.values)},
                      {"Out", MakeTensor(t, tie_out.shape, tie_out.values)},
                      {"Out@GRAD", dout}};
        tie.expected["X@GRAD"] = {t, reference::Pool2DGrad(ties, douta, a)};
        cases->push_back(tie);
      }
    }
  }
}

void AddLayerNorm(std::vector<ConformanceCase>* cases) {
  struct Config {
    Shape x;
    int64_t axis;
    bool scale, bias;
    double epsilon;
  };
  const std::vector<Config> configs = {
      {Shape({2, 3, 4}), 1, true, true, 1e-5},
      {Shape({5, 7}), -1, false, false, 1e-5},
      {Shape({4, 6}), 1, true, false, 0.5},
      {Shape({0, 8}), 1, true, true, 1e-5},
      {Shape({33, 150}), 1, true, true, 1e-5},
      {Shape({3, 2, 5}), 2, false, true, 1e-3},
      {Shape({6}), 0, true, true, 1e-5},
      // Lines the CUDA kernels hold in registers (65..1024 columns): GPT's
      // 768, a partial last lane (100, 1000).
      {Shape({40, 768}), 1, true, true, 1e-5},
      {Shape({17, 100}), -1, false, true, 1e-5},
      {Shape({3, 4, 250}), 1, true, false, 1e-5},
  };
  uint64_t seed = 27000;
  for (DataType t : kFloats) {
    for (const Config& cfg : configs) {
      const int axis = static_cast<int>(cfg.axis < 0 ? cfg.axis + cfg.x.rank() : cfg.axis);
      int64_t cols = 1;
      for (int d = axis; d < cfg.x.rank(); ++d) cols *= cfg.x.dim(d);
      auto [x, xa] = Input(t, cfg.x, ++seed);
      auto [scale, scale_a] = Input(t, Shape({cols}), ++seed);
      auto [bias, bias_a] = Input(t, Shape({cols}), ++seed);
      const std::string what =
          absl::StrCat(cfg.x.ToString(), " begin_norm_axis ", cfg.axis, cfg.scale ? " Scale" : "",
                       cfg.bias ? " Bias" : "", " epsilon ", cfg.epsilon);
      const AttrMap attrs = {{"begin_norm_axis", cfg.axis}, {"epsilon", cfg.epsilon}};
      const Array no_scale, no_bias;
      const reference::LayerNormResult r = reference::LayerNorm(
          xa, cfg.scale ? scale_a : no_scale, cfg.bias ? bias_a : no_bias, axis, cfg.epsilon);
      ConformanceCase c;
      c.op = "layer_norm";
      c.label = Label(c.op, t, what);
      c.inputs = {{"X", x}};
      if (cfg.scale) c.inputs.push_back({"Scale", scale});
      if (cfg.bias) c.inputs.push_back({"Bias", bias});
      c.attrs = attrs;
      c.expected["Y"] = {t, r.y};
      c.expected["Mean"] = {t, r.mean};
      c.expected["Variance"] = {t, r.var};
      SetTolerance(&c, t, 4 * cols);
      cases->push_back(c);

      auto [dy, dya] = Input(t, cfg.x, ++seed);
      const reference::LayerNormGrads d =
          reference::LayerNormGrad(xa, cfg.scale ? scale_a : no_scale, dya, axis, cfg.epsilon);
      ConformanceCase g;
      g.op = "layer_norm_grad";
      g.label = Label(g.op, t, what);
      // Mean and Variance as the kernel would see them: in T.
      g.inputs = {{"X", x},
                  {"Mean", MakeTensor(t, r.mean.shape, r.mean.values)},
                  {"Variance", MakeTensor(t, r.var.shape, r.var.values)},
                  {"Y@GRAD", dy}};
      if (cfg.scale) {
        g.inputs.push_back({"Scale", scale});
        g.expected["Scale@GRAD"] = {t, d.dscale};
      }
      if (cfg.bias) g.expected["Bias@GRAD"] = {t, d.dbias};
      g.attrs = attrs;
      g.expected["X@GRAD"] = {t, d.dx};
      SetTolerance(&g, t, 8 * std::max<int64_t>(cols, cfg.x.num_elements() / cols));
      cases->push_back(g);

      ConformanceCase dx_only = g;
      dx_only.label += " (X@GRAD only)";
      dx_only.expected.erase("Scale@GRAD");
      dx_only.expected.erase("Bias@GRAD");
      cases->push_back(dx_only);
    }
  }
}

// A 16-bit kernel computes in float32 from inputs that were rounded to 16
// bits (the gradient's Out, whose dot product with Out@GRAD is subtracted
// from dP): its error is a few units in the last place of the largest values
// involved, not of each result. So 16-bit attention cases get an absolute
// tolerance of 4 units of the largest expected magnitude.
void ScaleAbsoluteTolerance(ConformanceCase* c, DataType t) {
  if (!IsLowPrecisionFloat(t)) return;
  double largest = 0;
  for (const auto& [arg, expected] : c->expected) {
    for (double v : expected.second.values) largest = std::max(largest, std::abs(v));
  }
  c->atol = std::max(c->atol, 4 * c->rtol * largest);
}

void AddSelfAttention(std::vector<ConformanceCase>* cases) {
  struct Config {
    Shape qkv;
    int64_t heads;
    bool causal;
    double scale;  // 0: 1 / sqrt(head_dim)
  };
  const std::vector<Config> configs = {
      {Shape({2, 5, 12}), 2, true, 0},
      {Shape({1, 7, 24}), 1, false, 0},
      {Shape({3, 4, 18}), 3, true, 0.5},
      {Shape({2, 33, 48}), 4, true, 0},
      {Shape({0, 3, 6}), 1, true, 0},
      {Shape({2, 1, 6}), 2, false, 0},
      {Shape({1, 64, 192}), 2, true, 0},
      {Shape({2, 0, 12}), 2, true, 0},
      // Heads of 16, 64 and 128 columns (the GPU's fused kernels for the
      // 16-bit types), sequences across several 64-token tiles, not whole.
      {Shape({2, 65, 96}), 2, true, 0},
      {Shape({2, 130, 384}), 2, true, 0},
      {Shape({1, 70, 384}), 1, false, 0.3},
      // Not causal over several tiles with heads of 32 and 64 columns; causal
      // with a head of 128 (its gradient walks query tiles of 32 rows).
      {Shape({1, 200, 192}), 2, false, 0},
      {Shape({1, 150, 384}), 2, false, 0},
      {Shape({1, 100, 384}), 1, true, 0},
  };
  uint64_t seed = 28000;
  for (DataType t : kFloatsWith16Bit) {
    for (const Config& cfg : configs) {
      const int64_t width = cfg.qkv.dim(2) / 3, head_dim = width / cfg.heads;
      const double scale = cfg.scale != 0 ? cfg.scale : 1 / std::sqrt(double(head_dim));
      const DataType stats = t == DataType::kFloat64 ? t : DataType::kFloat32;
      auto [qkv, qkv_a] = Input(t, cfg.qkv, ++seed);
      const std::string what = absl::StrCat(cfg.qkv.ToString(), " heads ", cfg.heads,
                                            cfg.causal ? " causal" : "", " scale ", cfg.scale);
      const AttrMap attrs = {
          {"num_heads", cfg.heads}, {"causal", cfg.causal}, {"scale", cfg.scale}};
      const reference::AttentionResult r =
          reference::SelfAttention(qkv_a, cfg.heads, cfg.causal, scale);
      ConformanceCase c;
      c.op = "self_attention";
      c.label = Label(c.op, t, what);
      c.inputs = {{"QKV", qkv}};
      c.attrs = attrs;
      c.expected["Out"] = {t, r.out};
      c.expected["Lse"] = {stats, r.lse};
      SetTolerance(&c, t, 2 * cfg.qkv.dim(1) * head_dim);
      ScaleAbsoluteTolerance(&c, t);
      cases->push_back(c);

      auto [dout, dout_a] = Input(t, r.out.shape, ++seed);
      ConformanceCase g;
      g.op = "self_attention_grad";
      g.label = Label(g.op, t, what);
      // Out and Lse as the kernel would see them: in T and in the stats dtype.
      g.inputs = {{"QKV", qkv},
                  {"Out", MakeTensor(t, r.out.shape, r.out.values)},
                  {"Lse", MakeTensor(stats, r.lse.shape, r.lse.values)},
                  {"Out@GRAD", dout}};
      g.attrs = attrs;
      g.expected["QKV@GRAD"] = {
          t, reference::SelfAttentionGrad(qkv_a, dout_a, cfg.heads, cfg.causal, scale)};
      SetTolerance(&g, t, 4 * cfg.qkv.dim(1) * head_dim);
      ScaleAbsoluteTolerance(&g, t);
      cases->push_back(g);
    }
  }
}

}  // namespace

void AddLayerCases(std::vector<ConformanceCase>* cases) {
  AddReshape(cases);
  AddTranspose(cases);
  AddConcat(cases);
  AddSplit(cases);
  AddDropout(cases);
  AddConv2D(cases);
  AddPool2D(cases);
  AddLayerNorm(cases);
  AddSelfAttention(cases);
}

}  // namespace tandem
