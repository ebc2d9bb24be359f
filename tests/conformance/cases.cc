#include "tests/conformance/cases.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/testing/tensor_testutil.h"
#include "tests/conformance/case_util.h"
#include "tests/conformance/reference_math.h"

namespace tandem {
namespace {

using case_util::BroadcastConfig;
using case_util::BroadcastConfigs;
using case_util::Input;
using case_util::kFloats;
using case_util::kFloatsWith16Bit;
using case_util::kNumeric;
using case_util::kNumericWith16Bit;
using case_util::Label;
using case_util::SetTolerance;
using reference::Array;

void AddFillConstant(std::vector<ConformanceCase>* cases) {
  const std::vector<Shape> shapes = {Shape(),          Shape({0}),    Shape({3}),
                                     Shape({2, 3, 5}), Shape({1023}), Shape({3, 0, 2})};
  for (DataType t : AllDataTypes()) {
    for (const Shape& s : shapes) {
      for (double value : {2.75, -1.5, -2.7, 0.0}) {
        ConformanceCase c;
        c.op = "fill_constant";
        c.label = Label(c.op, t, absl::StrCat(s.ToString(), " value ", value));
        c.attrs["shape"] = s.ToVector();
        c.attrs["value"] = value;
        c.attrs["dtype"] = t;
        c.expected["Out"] = {
            t, Array{s, std::vector<double>(s.num_elements(), reference::Convert(value, t))}};
        cases->push_back(std::move(c));
      }
    }
  }
}

void AddElementwise(std::vector<ConformanceCase>* cases) {
  uint64_t seed = 100;
  for (DataType t : kNumericWith16Bit) {
    for (const BroadcastConfig& cfg : BroadcastConfigs()) {
      auto [x, xa] = Input(t, cfg.x, ++seed);
      auto [y, ya] = Input(t, cfg.y, ++seed);
      const std::string what =
          absl::StrCat(cfg.x.ToString(), " + ", cfg.y.ToString(), " axis ", cfg.axis);
      ConformanceCase c;
      c.op = "elementwise_add";
      c.label = Label(c.op, t, what);
      c.inputs = {{"X", x}, {"Y", y}};
      c.attrs["axis"] = cfg.axis;
      Array out = reference::Add(xa, ya, cfg.axis);
      c.expected["Out"] = {t, out};
      SetTolerance(&c, t);
      cases->push_back(c);

      auto [dout, douta] = Input(t, out.shape, ++seed);
      auto [dx, dy] = reference::AddGrad(xa, ya, douta, cfg.axis);
      const int64_t reduction =
          std::max<int64_t>(1, out.shape.num_elements()) /
          std::max<int64_t>(1, std::min(xa.shape.num_elements(), ya.shape.num_elements()));
      ConformanceCase g;
      g.op = "elementwise_add_grad";
      g.label = Label(g.op, t, what);
      g.inputs = {{"X", x}, {"Y", y}, {"Out@GRAD", dout}};
      g.attrs["axis"] = cfg.axis;
      g.expected["X@GRAD"] = {t, dx};
      g.expected["Y@GRAD"] = {t, dy};
      SetTolerance(&g, t, reduction);
      cases->push_back(g);

      // Only one gradient wanted: the other output stays unbound.
      ConformanceCase only_y = g;
      only_y.label += " (Y@GRAD only)";
      only_y.expected.erase("X@GRAD");
      cases->push_back(only_y);
    }
  }
}

struct MatmulConfig {
  Shape x, y;
  bool tx, ty;
  double alpha;
};

void AddMatmul(std::vector<ConformanceCase>* cases) {
  const std::vector<MatmulConfig> configs = {
      {Shape({2, 3}), Shape({3, 4}), false, false, 1.0},
      {Shape({3, 2}), Shape({3, 4}), true, false, 1.0},
      {Shape({2, 3}), Shape({4, 3}), false, true, 1.0},
      {Shape({3, 2}), Shape({4, 3}), true, true, 0.5},
      {Shape({17, 33}), Shape({33, 9}), false, false, 1.0},     // odd sizes
      {Shape({2, 3, 4}), Shape({2, 4, 5}), false, false, 1.0},  // batched
      {Shape({3, 2, 4}), Shape({4, 5}), false, false, 2.0},     // Y shared
      {Shape({4, 2}), Shape({3, 4, 5}), true, false, 1.0},      // X shared
      {Shape({2, 0}), Shape({0, 3}), false, false, 1.0},        // K = 0
      {Shape({0, 4}), Shape({4, 3}), false, false, 1.0},        // empty output
      {Shape({1, 1}), Shape({1, 1}), false, false, -3.0},
      {Shape({2, 2, 7, 5}), Shape({2, 2, 3, 7}), true, true, 2.0},  // 2 batch dims, transposed
      {Shape({2, 2, 7, 5}), Shape({3, 7}), true, true, 1.0},        // Y shared, transposed
      {Shape({7, 5}), Shape({2, 2, 7, 3}), true, false, -0.5},      // X shared, transposed
      {Shape({2, 3, 1, 5}), Shape({5, 7}), false, false, 1.0},      // 2 batch dims, Y shared
      {Shape({2, 3, 0}), Shape({0, 4}), false, false, 1.0},         // K = 0, batched
      {Shape({0, 3, 5}), Shape({5, 4}), false, false, 1.0},         // empty batch
      {Shape({3, 5}), Shape({0, 5, 4}), false, false, 1.0},         // X shared, no batch
      {Shape({64, 8, 8}), Shape({64, 8, 8}), false, false, 1.0},    // many small products
      {Shape({1, 1023}), Shape({1023, 3}), false, false, 1.0},      // a long inner dim
      {Shape({67, 130}), Shape({130, 259}), false, false, 1.0},     // split across threads
  };
  uint64_t seed = 900;
  for (DataType t : kFloatsWith16Bit) {
    for (const MatmulConfig& cfg : configs) {
      auto [x, xa] = Input(t, cfg.x, ++seed);
      auto [y, ya] = Input(t, cfg.y, ++seed);
      const std::string what =
          absl::StrCat(cfg.x.ToString(), cfg.tx ? "^T" : "", " x ", cfg.y.ToString(),
                       cfg.ty ? "^T" : "", " alpha ", cfg.alpha);
      AttrMap attrs = {{"transpose_X", cfg.tx}, {"transpose_Y", cfg.ty}, {"alpha", cfg.alpha}};
      Array out = reference::Matmul(xa, ya, cfg.tx, cfg.ty, cfg.alpha);
      const int64_t k = cfg.tx ? cfg.x.dim(cfg.x.rank() - 2) : cfg.x.dim(cfg.x.rank() - 1);
      ConformanceCase c;
      c.op = "matmul";
      c.label = Label(c.op, t, what);
      c.inputs = {{"X", x}, {"Y", y}};
      c.attrs = attrs;
      c.expected["Out"] = {t, out};
      SetTolerance(&c, t, k);
      cases->push_back(c);

      auto [dout, douta] = Input(t, out.shape, ++seed);
      auto [dx, dy] = reference::MatmulGrad(xa, ya, douta, cfg.tx, cfg.ty, cfg.alpha);
      ConformanceCase g;
      g.op = "matmul_grad";
      g.label = Label(g.op, t, what);
      g.inputs = {{"X", x}, {"Y", y}, {"Out@GRAD", dout}};
      g.attrs = attrs;
      g.expected["X@GRAD"] = {t, dx};
      g.expected["Y@GRAD"] = {t, dy};
      SetTolerance(&g, t, std::max<int64_t>(out.shape.num_elements(), 1));
      cases->push_back(g);

      ConformanceCase only_x = g;
      only_x.label += " (X@GRAD only)";
      only_x.expected.erase("Y@GRAD");
      cases->push_back(only_x);
    }
  }
}

void AddScale(std::vector<ConformanceCase>* cases) {
  const std::vector<Shape> shapes = {Shape(), Shape({0}), Shape({1023}), Shape({3, 7})};
  uint64_t seed = 2000;
  for (DataType t : kNumeric) {
    for (const Shape& s : shapes) {
      for (bool after : {true, false}) {
        auto [x, xa] = Input(t, s, ++seed);
        const double scale = 2.5, bias = -1.5;
        ConformanceCase c;
        c.op = "scale";
        c.label =
            Label(c.op, t, absl::StrCat(s.ToString(), after ? " bias after" : " bias before"));
        c.inputs = {{"X", x}};
        c.attrs = {{"scale", scale}, {"bias", bias}, {"bias_after_scale", after}};
        Array out{s, {}};
        for (double v : xa.values) {
          out.values.push_back(
              reference::Convert(after ? scale * v + bias : scale * (v + bias), t));
        }
        c.expected["Out"] = {t, out};
        SetTolerance(&c, t);
        cases->push_back(std::move(c));
      }
    }
  }
}

void AddCast(std::vector<ConformanceCase>* cases) {
  uint64_t seed = 3000;
  for (DataType from : AllDataTypes()) {
    for (DataType to : AllDataTypes()) {
      for (const Shape& s : {Shape(), Shape({37})}) {
        auto [x, xa] = Input(from, s, ++seed);
        ConformanceCase c;
        c.op = "cast";
        c.label =
            absl::StrCat("cast ", DataTypeName(from), " -> ", DataTypeName(to), " ", s.ToString());
        c.inputs = {{"X", x}};
        c.attrs["out_dtype"] = to;
        c.expected["Out"] = {to, Array{s, reference::Convert(xa.values, to)}};
        cases->push_back(std::move(c));
      }
    }
  }
}

struct LookupConfig {
  Shape ids;
  int64_t rows, dim;
  int64_t padding_idx;
};

void AddLookupTable(std::vector<ConformanceCase>* cases) {
  const std::vector<LookupConfig> configs = {
      {Shape({5}), 7, 3, -1},      // duplicates likely
      {Shape(), 7, 3, -1},         // rank-0 Ids: Out is [dim]
      {Shape({2, 3}), 4, 5, 2},    // padding row 2
      {Shape({6}), 6, 2, -2},      // padding counted from the end: row 4
      {Shape({0}), 3, 4, -1},      // no ids
      {Shape({37}), 101, 17, -1},  // odd sizes
  };
  uint64_t seed = 4000;
  for (DataType t : kFloats) {
    for (const LookupConfig& cfg : configs) {
      const int64_t padding_row = cfg.padding_idx >= 0 || cfg.padding_idx == -1
                                      ? cfg.padding_idx
                                      : cfg.rows + cfg.padding_idx;
      std::vector<double> id_values(cfg.ids.num_elements());
      for (size_t i = 0; i < id_values.size(); ++i) {
        id_values[i] = static_cast<double>((i * 5 + seed) % cfg.rows);
      }
      if (padding_row >= 0 && !id_values.empty()) id_values[0] = padding_row;
      const Array ids{cfg.ids, id_values};
      const Tensor ids_t = MakeTensor(DataType::kInt64, cfg.ids, id_values);
      auto [w, wa] = Input(t, Shape({cfg.rows, cfg.dim}), ++seed);
      const std::string what = absl::StrCat("Ids", cfg.ids.ToString(), " W[", cfg.rows, ", ",
                                            cfg.dim, "] padding_idx ", cfg.padding_idx);
      const AttrMap attrs = {{"padding_idx", cfg.padding_idx}};
      ConformanceCase c;
      c.op = "lookup_table";
      c.label = Label(c.op, t, what);
      c.inputs = {{"Ids", ids_t}, {"W", w}};
      c.attrs = attrs;
      Array out = reference::LookupTable(ids, wa, padding_row);
      c.expected["Out"] = {t, out};
      cases->push_back(c);

      auto [dout, douta] = Input(t, out.shape, ++seed);
      for (bool sparse : {false, true}) {
        ConformanceCase g;
        g.op = "lookup_table_grad";
        g.label = Label(g.op, t, absl::StrCat(what, sparse ? " sparse" : " dense"));
        g.inputs = {{"Ids", ids_t}, {"W", w}, {"Out@GRAD", dout}};
        g.attrs = attrs;
        g.attrs["is_sparse"] = sparse;
        g.expected["W@GRAD"] = {t, reference::LookupTableGrad(ids, wa.shape, douta, padding_row)};
        if (sparse) g.selected_rows_outputs.insert("W@GRAD");
        SetTolerance(&g, t, std::max<int64_t>(1, cfg.ids.num_elements()));
        cases->push_back(g);
      }
    }
  }
}

struct AxisConfig {
  Shape x;
  int64_t axis;
  double epsilon;
};

void AddL2Normalize(std::vector<ConformanceCase>* cases) {
  const std::vector<AxisConfig> configs = {
      {Shape({1023}), -1, 1e-10},    {Shape({4, 5}), -1, 1e-10}, {Shape({4, 5}), 0, 1e-10},
      {Shape({2, 3, 4}), 1, 1e-10},  {Shape({0, 3}), -1, 1e-10}, {Shape({3, 1}), 1, 0.5},
      {Shape({33, 150}), -1, 1e-12},
  };
  uint64_t seed = 5000;
  for (DataType t : kFloats) {
    for (const AxisConfig& cfg : configs) {
      auto [x, xa] = Input(t, cfg.x, ++seed);
      const int axis = static_cast<int>(cfg.axis < 0 ? cfg.axis + cfg.x.rank() : cfg.axis);
      const std::string what =
          absl::StrCat(cfg.x.ToString(), " axis ", cfg.axis, " epsilon ", cfg.epsilon);
      const AttrMap attrs = {{"axis", cfg.axis}, {"epsilon", cfg.epsilon}};
      const int64_t n = cfg.x.rank() == 0 ? 1 : cfg.x.dim(axis);
      ConformanceCase c;
      c.op = "l2_normalize";
      c.label = Label(c.op, t, what);
      c.inputs = {{"X", x}};
      c.attrs = attrs;
      const Array out = reference::L2Normalize(xa, axis, cfg.epsilon);
      c.expected["Out"] = {t, out};
      SetTolerance(&c, t, n);
      cases->push_back(c);

      auto [dout, douta] = Input(t, cfg.x, ++seed);
      // Out as the kernel would see it: the forward result in T.
      const Tensor out_t = MakeTensor(t, cfg.x, out.values);
      ConformanceCase g;
      g.op = "l2_normalize_grad";
      g.label = Label(g.op, t, what);
      g.inputs = {{"X", x}, {"Out", out_t}, {"Out@GRAD", dout}};
      g.attrs = attrs;
      g.expected["X@GRAD"] = {t, reference::L2NormalizeGrad(xa, douta, axis, cfg.epsilon)};
      SetTolerance(&g, t, 4 * n);
      cases->push_back(g);
    }
  }
}

// The fused l2_normalize -> square_error_cost -> mean (the fusion pass's
// op) and its gradient, against the three float64 references composed.
void AddL2NormalizeSquareErrorMean(std::vector<ConformanceCase>* cases) {
  struct Config {
    Shape x;
    int64_t axis;
    double epsilon;
  };
  const std::vector<Config> configs = {{Shape({4, 5}), -1, 1e-10},
                                       {Shape({4, 5}), 0, 1e-10},
                                       {Shape({2, 3, 4}), 1, 0.5},
                                       {Shape({33, 150}), -1, 1e-12},
                                       {Shape({7}), 0, 1e-10}};
  uint64_t seed = 5500;
  for (DataType t : kFloats) {
    for (const Config& cfg : configs) {
      auto [x, xa] = Input(t, cfg.x, ++seed);
      auto [label, la] = Input(t, cfg.x, ++seed);
      const int axis = static_cast<int>(cfg.axis < 0 ? cfg.axis + cfg.x.rank() : cfg.axis);
      const std::string what =
          absl::StrCat(cfg.x.ToString(), " axis ", cfg.axis, " epsilon ", cfg.epsilon);
      const AttrMap attrs = {{"axis", cfg.axis}, {"epsilon", cfg.epsilon}};
      const Array y = reference::L2Normalize(xa, axis, cfg.epsilon);
      const Array cost = reference::SquareErrorCost(y, la);
      ConformanceCase c;
      c.op = "l2_normalize_square_error_mean";
      c.label = Label(c.op, t, what);
      c.inputs = {{"X", x}, {"Label", label}};
      c.attrs = attrs;
      c.expected["Out"] = {t, reference::Mean(cost)};
      SetTolerance(&c, t, 4 * cfg.x.num_elements());
      cases->push_back(c);

      const Tensor dout = MakeTensor(t, Shape({1}), {1.75});
      const Array dcost = reference::MeanGrad(cost, Array{Shape({1}), {1.75}});
      auto [dy, dlabel] = reference::SquareErrorCostGrad(y, la, dcost);
      ConformanceCase g;
      g.op = "l2_normalize_square_error_mean_grad";
      g.label = Label(g.op, t, what);
      g.inputs = {{"X", x}, {"Label", label}, {"Out@GRAD", dout}};
      g.attrs = attrs;
      g.expected["X@GRAD"] = {t, reference::L2NormalizeGrad(xa, dy, axis, cfg.epsilon)};
      g.expected["Label@GRAD"] = {t, dlabel};
      SetTolerance(&g, t, 8 * cfg.x.dim(axis));
      cases->push_back(g);
    }
  }
}

void AddSquareErrorCost(std::vector<ConformanceCase>* cases) {
  const std::vector<Shape> shapes = {Shape(), Shape({0}), Shape({1023}), Shape({3, 7}),
                                     Shape({4, 150})};
  uint64_t seed = 6000;
  for (DataType t : kFloats) {
    for (const Shape& s : shapes) {
      auto [x, xa] = Input(t, s, ++seed);
      auto [y, ya] = Input(t, s, ++seed);
      ConformanceCase c;
      c.op = "square_error_cost";
      c.label = Label(c.op, t, s.ToString());
      c.inputs = {{"X", x}, {"Y", y}};
      c.expected["Out"] = {t, reference::SquareErrorCost(xa, ya)};
      SetTolerance(&c, t, 16);
      cases->push_back(c);

      auto [dout, douta] = Input(t, s, ++seed);
      auto [dx, dy] = reference::SquareErrorCostGrad(xa, ya, douta);
      ConformanceCase g;
      g.op = "square_error_cost_grad";
      g.label = Label(g.op, t, s.ToString());
      g.inputs = {{"X", x}, {"Y", y}, {"Out@GRAD", dout}};
      g.expected["X@GRAD"] = {t, dx};
      g.expected["Y@GRAD"] = {t, dy};
      SetTolerance(&g, t, 16);
      cases->push_back(g);

      ConformanceCase only_x = g;
      only_x.label += " (X@GRAD only)";
      only_x.expected.erase("Y@GRAD");
      cases->push_back(only_x);
    }
  }
}

void AddMean(std::vector<ConformanceCase>* cases) {
  const std::vector<Shape> shapes = {Shape(), Shape({1}), Shape({1023}), Shape({3, 7}),
                                     Shape({300, 257})};
  uint64_t seed = 7000;
  for (DataType t : kFloats) {
    for (const Shape& s : shapes) {
      auto [x, xa] = Input(t, s, ++seed);
      ConformanceCase c;
      c.op = "mean";
      c.label = Label(c.op, t, s.ToString());
      c.inputs = {{"X", x}};
      c.expected["Out"] = {t, reference::Mean(xa)};
      SetTolerance(&c, t, 4);
      cases->push_back(c);

      auto [dout, douta] = Input(t, Shape({1}), ++seed);
      ConformanceCase g;
      g.op = "mean_grad";
      g.label = Label(g.op, t, s.ToString());
      g.inputs = {{"X", x}, {"Out@GRAD", dout}};
      g.expected["X@GRAD"] = {t, reference::MeanGrad(xa, douta)};
      SetTolerance(&g, t);
      cases->push_back(g);
    }
  }
}

void AddSgd(std::vector<ConformanceCase>* cases) {
  const double lr = 0.375;
  const Tensor lr_t = MakeTensor(DataType::kFloat32, Shape({1}), {lr});
  uint64_t seed = 8000;
  for (DataType t : kFloats) {
    for (const Shape& s : {Shape(), Shape({0, 3}), Shape({1023}), Shape({5, 3})}) {
      auto [param, pa] = Input(t, s, ++seed);
      auto [grad, ga] = Input(t, s, ++seed);
      ConformanceCase c;
      c.op = "sgd";
      c.label = Label(c.op, t, absl::StrCat(s.ToString(), " dense"));
      c.inputs = {{"Param", param}, {"Grad", grad}, {"LearningRate", lr_t}};
      c.expected["ParamOut"] = {t, reference::SgdDense(pa, ga, lr)};
      SetTolerance(&c, t, 4);
      cases->push_back(c);
      // GradScale (gradient clipping's factor), a power of two: exact.
      ConformanceCase scaled = c;
      scaled.label += " GradScale 0.25";
      scaled.inputs.push_back({"GradScale", MakeTensor(t, Shape({1}), {0.25})});
      scaled.expected["ParamOut"] = {
          t, reference::SgdDense(pa, reference::Map(ga, [](double v) { return v * 0.25; }), lr)};
      cases->push_back(scaled);
      if (t != DataType::kFloat32) continue;
      for (DataType g16 : {DataType::kBFloat16, DataType::kFloat16}) {  // mixed precision
        reference::Array g;
        for (const ConformanceCase* base : {&c, &scaled}) {
          ConformanceCase low = case_util::WithLowPrecisionGrad(*base, g16, &g);
          const double factor = base == &scaled ? 0.25 : 1;
          low.expected["ParamOut"] = {
              t,
              reference::SgdDense(pa, reference::Map(g, [&](double v) { return v * factor; }), lr)};
          cases->push_back(low);
        }
      }
    }
    // Sparse: duplicate rows accumulate; no rows leave Param unchanged.
    for (const std::vector<int64_t>& rows :
         {std::vector<int64_t>{1, 4, 1, 0, 1}, std::vector<int64_t>{}, std::vector<int64_t>{5}}) {
      auto [param, pa] = Input(t, Shape({6, 3}), ++seed);
      const Shape value_shape({static_cast<int64_t>(rows.size()), 3});
      auto [value, va] = Input(t, value_shape, ++seed);
      ConformanceCase c;
      c.op = "sgd";
      c.label = Label(c.op, t, absl::StrCat("[6, 3] sparse, ", rows.size(), " rows"));
      c.inputs = {{"Param", param}, {"LearningRate", lr_t}};
      c.selected_rows_inputs = {{"Grad", SelectedRows(6, rows, value)}};
      c.expected["ParamOut"] = {t, reference::SgdSparse(pa, rows, va, lr)};
      SetTolerance(&c, t, 4 * std::max<int64_t>(1, rows.size()));
      cases->push_back(c);
    }
  }
}

// check_finite_and_unscale: X / Scale, dense and sparse, with and without
// an infinity or a NaN; update_loss_scaling: back-off, a good step, growth.
void AddLossScaling(std::vector<ConformanceCase>* cases) {
  uint64_t seed = 8800;
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (DataType t : kFloats) {
    for (double scale : {1024.0, 3.0}) {
      for (double poison : {0.0, inf, nan}) {
        for (const Shape& s : {Shape({0}), Shape({1023}), Shape({5, 3})}) {
          if (poison != 0 && s.num_elements() == 0) continue;
          auto [x, xa] = Input(t, s, ++seed);
          if (poison != 0) {
            xa.values[s.num_elements() / 2] = poison;
            x = MakeTensor(t, s, xa.values);
          }
          ConformanceCase c;
          c.op = "check_finite_and_unscale";
          c.label = Label(c.op, t,
                          absl::StrCat(s.ToString(), " / ", scale, poison != 0 ? ", with " : "",
                                       poison != 0 ? (std::isnan(poison) ? "NaN" : "inf") : ""));
          c.inputs = {{"X", x}, {"Scale", MakeTensor(DataType::kFloat32, Shape({1}), {scale})}};
          c.expected["Out"] = {t, reference::Map(xa, [scale](double v) { return v / scale; })};
          c.expected["FoundInfinite"] = {DataType::kBool,
                                         Array{Shape({1}), {poison != 0 ? 1.0 : 0.0}}};
          SetTolerance(&c, t, 1);
          cases->push_back(c);
        }
      }
    }
    auto [value, va] = Input(t, Shape({3, 4}), ++seed);
    ConformanceCase c;
    c.op = "check_finite_and_unscale";
    c.label = Label(c.op, t, "[6, 4] sparse, 3 rows / 8");
    c.inputs = {{"Scale", MakeTensor(DataType::kFloat32, Shape({1}), {8})}};
    c.selected_rows_inputs = {{"X", SelectedRows(6, {4, 0, 4}, value)}};
    Array dense{Shape({6, 4}), std::vector<double>(24, 0.0)};
    const std::vector<int64_t> rows = {4, 0, 4};
    for (size_t r = 0; r < rows.size(); ++r) {
      for (int j = 0; j < 4; ++j) dense.values[rows[r] * 4 + j] += va.values[r * 4 + j] / 8;
    }
    c.expected["Out"] = {t, dense};
    c.selected_rows_outputs = {"Out"};
    c.expected["FoundInfinite"] = {DataType::kBool, Array{Shape({1}), {0.0}}};
    SetTolerance(&c, t, 2);
    cases->push_back(c);
  }
  struct ScalingStep {
    std::vector<bool> found;
    double scale;
    int good;
    double want_scale;
    int want_good;
    const char* what;
  };
  for (const ScalingStep& s : std::vector<ScalingStep>{
           {{false, true}, 1024, 5, 512, 0, "an infinite gradient backs off"},
           {{false, false}, 1024, 5, 1024, 6, "a good step counts"},
           {{false}, 1024, 9, 2048, 0, "the tenth good step grows"},
           {{false}, 3e38, 9, 3e38, 0, "growth past float32's range is skipped"}}) {
    ConformanceCase c;
    c.op = "update_loss_scaling";
    c.label = absl::StrCat(c.op, ": ", s.what);
    for (bool f : s.found) {
      c.inputs.push_back(
          {"FoundInfinite", MakeTensor(DataType::kBool, Shape({1}), {f ? 1.0 : 0.0})});
    }
    c.inputs.push_back({"PrevLossScaling", MakeTensor(DataType::kFloat32, Shape({1}), {s.scale})});
    c.inputs.push_back({"InGoodSteps", MakeTensor(DataType::kInt32, Shape({1}), {double(s.good)})});
    c.attrs = {{"growth_interval", int64_t{10}}};
    const bool skipped = std::find(s.found.begin(), s.found.end(), true) != s.found.end();
    c.expected["LossScaling"] = {
        DataType::kFloat32,
        Array{Shape({1}), {static_cast<double>(static_cast<float>(s.want_scale))}}};
    c.expected["OutGoodSteps"] = {DataType::kInt32, Array{Shape({1}), {double(s.want_good)}}};
    c.expected["StepSkipped"] = {DataType::kBool, Array{Shape({1}), {skipped ? 1.0 : 0.0}}};
    cases->push_back(c);
  }
}

// squared_l2_norm: the sum of squares in double (empty, odd and large
// sizes); global_norm_clip: below, at and above max_norm, and non-finite.
void AddGradientClipping(std::vector<ConformanceCase>* cases) {
  uint64_t seed = 8900;
  for (DataType t : kFloatsWith16Bit) {
    for (const Shape& s : {Shape({0}), Shape({1023}), Shape({5, 3}), Shape({300, 700})}) {
      auto [x, xa] = Input(t, s, ++seed);
      double sum = 0;
      for (double v : xa.values) sum += v * v;
      const DataType out = t == DataType::kFloat64 ? t : DataType::kFloat32;
      ConformanceCase c;
      c.op = "squared_l2_norm";
      c.label = Label(c.op, t, s.ToString());
      c.inputs = {{"X", x}};
      c.expected["Out"] = {out, Array{Shape({1}), {sum}}};
      SetTolerance(&c, out, s.num_elements());
      cases->push_back(c);
    }
  }
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Clip {
    std::vector<double> squared;
    double max_norm;
    const char* what;
  };
  // More norms than one CUDA launch takes (256): a sum carried over three.
  std::vector<double> many(600);
  for (size_t i = 0; i < many.size(); ++i) many[i] = 0.25 * static_cast<double>(i % 7);
  for (DataType t : kFloats) {
    for (const Clip& k : std::vector<Clip>{{{9, 16}, 10, "norm 5 below 10: scale 1"},
                                           {{9, 16}, 1, "norm 5 above 1: scale 1 / 5"},
                                           {{0}, 1, "a zero norm: scale 1"},
                                           {{4, inf}, 1, "an infinite norm: scale 0"},
                                           {{nan, 1}, 1, "a NaN norm: scale NaN"},
                                           {many, 2, "600 norms: scale 2 / 21.2"}}) {
      double sum = 0;
      for (double v : k.squared) sum += v;
      const double norm = std::sqrt(sum);
      const double scale = std::isnan(norm) ? norm : std::min(1.0, k.max_norm / (norm + 1e-6));
      ConformanceCase c;
      c.op = "global_norm_clip";
      c.label = Label(c.op, t, k.what);
      for (double v : k.squared)
        c.inputs.push_back({"SquaredNorms", MakeTensor(t, Shape({1}), {v})});
      c.attrs = {{"max_norm", k.max_norm}};
      c.expected["Scale"] = {t, Array{Shape({1}), {scale}}};
      c.expected["GlobalNorm"] = {t, Array{Shape({1}), {norm}}};
      SetTolerance(&c, t, 2);
      cases->push_back(c);
    }
  }
}

void AddShape(std::vector<ConformanceCase>* cases) {
  uint64_t seed = 9000;
  for (DataType t : AllDataTypes()) {
    for (const Shape& s : {Shape(), Shape({0, 3}), Shape({1, 3, 5, 5})}) {
      ConformanceCase c;
      c.op = "shape";
      c.label = Label(c.op, t, s.ToString());
      c.inputs = {{"Input", RandomTensor(t, s, ++seed)}};
      std::vector<double> dims(s.dims().begin(), s.dims().end());
      c.expected["Out"] = {DataType::kInt32, Array{Shape({s.rank()}), dims}};
      cases->push_back(std::move(c));
    }
  }
}

struct SliceConfig {
  Shape x;
  std::vector<int64_t> axes, starts, ends;
};

void AddSlice(std::vector<ConformanceCase>* cases) {
  const std::vector<SliceConfig> configs = {
      {Shape({4}), {0}, {0}, {4}},                        // the crop model's slice
      {Shape({3, 10}), {1}, {-3}, {-1}},                  // negative start and end
      {Shape({3, 10}), {1, 0}, {-100, 1}, {1000, 1000}},  // clamped
      {Shape({5}), {0}, {3}, {2}},                        // end <= start: empty
      {Shape({5}), {-1}, {7}, {9}},                       // start past the end: empty
      {Shape({2, 3, 4}), {2}, {1}, {3}},                  // inner dim
      {Shape({2, 3, 4}), {-2}, {1}, {2}},                 // negative axis
      {Shape({37, 29}), {0, 1}, {3, 5}, {30, -2}},        // odd sizes
      {Shape(), {}, {}, {}},                              // 0-d, nothing sliced
      {Shape({0, 4}), {1}, {1}, {3}},                     // empty input
  };
  uint64_t seed = 10000;
  for (DataType t : kNumeric) {
    for (const SliceConfig& cfg : configs) {
      auto [x, xa] = Input(t, cfg.x, ++seed);
      const std::string what = absl::StrCat(
          cfg.x.ToString(), " axes [", absl::StrJoin(cfg.axes, ","), "] starts [",
          absl::StrJoin(cfg.starts, ","), "] ends [", absl::StrJoin(cfg.ends, ","), "]");
      const AttrMap attrs = {{"axes", cfg.axes}, {"starts", cfg.starts}, {"ends", cfg.ends}};
      ConformanceCase c;
      c.op = "slice";
      c.label = Label(c.op, t, what);
      c.inputs = {{"Input", x}};
      c.attrs = attrs;
      const Array out = reference::Slice(xa, cfg.axes, cfg.starts, cfg.ends);
      c.expected["Out"] = {t, out};
      cases->push_back(c);

      auto [dout, douta] = Input(t, out.shape, ++seed);
      ConformanceCase g;
      g.op = "slice_grad";
      g.label = Label(g.op, t, what);
      g.inputs = {{"Input", x}, {"Out@GRAD", dout}};
      g.attrs = attrs;
      g.expected["Input@GRAD"] = {
          t, reference::SliceGrad(cfg.x, douta, cfg.axes, cfg.starts, cfg.ends)};
      cases->push_back(g);
    }
  }
}

struct CropConfig {
  Shape x;
  std::vector<int64_t> sizes, offsets;
};

void AddCropTensor(std::vector<ConformanceCase>* cases) {
  const std::vector<CropConfig> configs = {
      {Shape({1, 3, 8, 8}), {1, 3, 5, 5}, {}},  // the crop model
      {Shape({4, 8}), {2, -1}, {1, 3}},         // -1: to the end
      {Shape({5}), {0}, {2}},                   // empty crop
      {Shape(), {}, {}},                        // 0-d
      {Shape({37, 29}), {30, 20}, {2, 4}},      // odd sizes
      {Shape({2, 3, 4}), {2, 2, 2}, {0, 1, 2}},
  };
  uint64_t seed = 11000;
  for (DataType t : kNumeric) {
    for (const CropConfig& cfg : configs) {
      auto [x, xa] = Input(t, cfg.x, ++seed);
      const Tensor shape_t =
          MakeTensor(DataType::kInt32, Shape({static_cast<int64_t>(cfg.sizes.size())}),
                     std::vector<double>(cfg.sizes.begin(), cfg.sizes.end()));
      const std::string what =
          absl::StrCat(cfg.x.ToString(), " Shape [", absl::StrJoin(cfg.sizes, ","), "] offsets [",
                       absl::StrJoin(cfg.offsets, ","), "]");
      AttrMap attrs;
      if (!cfg.offsets.empty()) attrs["offsets"] = cfg.offsets;
      ConformanceCase c;
      c.op = "crop_tensor";
      c.label = Label(c.op, t, what);
      c.inputs = {{"X", x}, {"Shape", shape_t}};
      c.attrs = attrs;
      const Array out = reference::Crop(xa, cfg.sizes, cfg.offsets);
      c.expected["Out"] = {t, out};
      cases->push_back(c);

      auto [dout, douta] = Input(t, out.shape, ++seed);
      ConformanceCase g;
      g.op = "crop_tensor_grad";
      g.label = Label(g.op, t, what);
      g.inputs = {{"X", x}, {"Shape", shape_t}, {"Out@GRAD", dout}};
      g.attrs = attrs;
      g.expected["X@GRAD"] = {t, reference::CropGrad(cfg.x, douta, cfg.sizes, cfg.offsets)};
      cases->push_back(g);
    }
  }
}

void AddUniformRandom(std::vector<ConformanceCase>* cases) {
  struct Config {
    Shape shape;
    double min, max;
    int64_t seed;
  };
  const std::vector<Config> configs = {
      {Shape(), -1, 1, 0},
      {Shape({0}), -1, 1, 0},
      {Shape({1023}), -0.05, 0.05, 42},
      {Shape({3, 5}), 2, 7.5, -7},
      {Shape({300, 257}), -1, 1, 1234567},
  };
  for (DataType t : kFloats) {
    for (const Config& cfg : configs) {
      ConformanceCase c;
      c.op = "uniform_random";
      c.label = Label(
          c.op, t,
          absl::StrCat(cfg.shape.ToString(), " [", cfg.min, ", ", cfg.max, ") seed ", cfg.seed));
      c.attrs = {{"shape", cfg.shape.ToVector()},
                 {"dtype", t},
                 {"min", cfg.min},
                 {"max", cfg.max},
                 {"seed", cfg.seed}};
      // Bit-identical on every backend: no tolerance.
      c.expected["Out"] = {t, reference::UniformRandom(cfg.shape, t, cfg.min, cfg.max, cfg.seed)};
      cases->push_back(std::move(c));
    }
  }
}

}  // namespace

std::map<std::string, DataType> ConformanceCase::Bindings() const {
  std::map<std::string, DataType> b;
  for (const auto& [arg, t] : inputs) b.emplace(arg, t.dtype());
  for (const auto& [arg, r] : selected_rows_inputs) b.emplace(arg, r.value().dtype());
  for (const auto& [name, value] : attrs) {
    if (const DataType* t = std::get_if<DataType>(&value)) b.emplace(name, *t);
  }
  return b;
}

std::vector<ConformanceCase> AllConformanceCases() {
  std::vector<ConformanceCase> cases;
  AddFillConstant(&cases);
  AddElementwise(&cases);
  AddMatmul(&cases);
  AddScale(&cases);
  AddCast(&cases);
  AddLookupTable(&cases);
  AddL2Normalize(&cases);
  AddSquareErrorCost(&cases);
  AddL2NormalizeSquareErrorMean(&cases);
  AddMean(&cases);
  AddSgd(&cases);
  AddLossScaling(&cases);
  AddGradientClipping(&cases);
  AddShape(&cases);
  AddSlice(&cases);
  AddCropTensor(&cases);
  AddUniformRandom(&cases);
  AddMathCases(&cases);
  AddClassifierCases(&cases);
  AddTrainingCases(&cases);
  AddLayerCases(&cases);
  AddCollectiveCases(&cases);
  return cases;
}

}  // namespace tandem
