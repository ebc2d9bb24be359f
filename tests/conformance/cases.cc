#include "tests/conformance/cases.h"

#include "absl/strings/str_cat.h"
#include "framework/testing/tensor_testutil.h"

namespace tandem {
namespace {

using reference::Array;

const std::vector<DataType> kNumeric = {DataType::kFloat32, DataType::kFloat64,
                                        DataType::kInt32, DataType::kInt64};
const std::vector<DataType> kFloats = {DataType::kFloat32, DataType::kFloat64};

void SetTolerance(ConformanceCase* c, DataType t, int64_t reduction = 1) {
  if (t == DataType::kFloat32) {
    c->rtol = 2e-6 * std::max<int64_t>(reduction, 1) + 1e-6;
    c->atol = 1e-5 * std::max<int64_t>(reduction, 1);
  } else if (t == DataType::kFloat64) {
    c->rtol = 1e-13 * std::max<int64_t>(reduction, 1);
    c->atol = 1e-13 * std::max<int64_t>(reduction, 1);
  }
}

// A random input and its float64 view (the values the kernel really sees).
std::pair<Tensor, Array> Input(DataType t, const Shape& s, uint64_t seed) {
  Tensor tensor = RandomTensor(t, s, seed);
  return {tensor, Array{s, ToDoubles(tensor)}};
}

std::string Label(const std::string& op, DataType t, const std::string& what) {
  return absl::StrCat(op, " ", DataTypeName(t), " ", what);
}

void AddFillConstant(std::vector<ConformanceCase>* cases) {
  const std::vector<Shape> shapes = {Shape(), Shape({0}), Shape({3}), Shape({2, 3, 5})};
  for (DataType t : AllDataTypes()) {
    for (const Shape& s : shapes) {
      for (double value : {2.75, -1.5}) {
        ConformanceCase c;
        c.op = "fill_constant";
        c.label = Label(c.op, t, absl::StrCat(s.ToString(), " value ", value));
        c.attrs["shape"] = s.ToVector();
        c.attrs["value"] = value;
        c.attrs["dtype"] = t;
        c.expected["Out"] = {t, Array{s, std::vector<double>(s.num_elements(),
                                                             reference::Convert(value, t))}};
        cases->push_back(std::move(c));
      }
    }
  }
}

struct AddShapes {
  Shape x, y;
  int64_t axis;
};

const std::vector<AddShapes>& AddConfigs() {
  static const auto* configs = new std::vector<AddShapes>{
      {Shape({1023}), Shape({1023}), -1},        // same shape, odd size
      {Shape({2, 3, 4}), Shape({4}), -1},        // row broadcast
      {Shape({4, 1, 5}), Shape({3, 1}), -1},     // both sides broadcast
      {Shape({2}), Shape({3, 2}), -1},           // X broadcast
      {Shape(), Shape(), -1},                    // 0-d
      {Shape(), Shape({2, 3}), -1},              // scalar X
      {Shape({2, 3}), Shape(), -1},              // scalar Y
      {Shape({0, 3}), Shape({3}), -1},           // empty
      {Shape({2, 3, 4}), Shape({3}), 1},         // axis alignment
      {Shape({2, 3, 4}), Shape({2, 3}), 0},      // axis 0
      {Shape({257, 65}), Shape({257, 1}), -1},   // column broadcast, odd
  };
  return *configs;
}

void AddElementwise(std::vector<ConformanceCase>* cases) {
  uint64_t seed = 100;
  for (DataType t : kNumeric) {
    for (const AddShapes& cfg : AddConfigs()) {
      auto [x, xa] = Input(t, cfg.x, ++seed);
      auto [y, ya] = Input(t, cfg.y, ++seed);
      const std::string what = absl::StrCat(cfg.x.ToString(), " + ", cfg.y.ToString(),
                                            " axis ", cfg.axis);
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
      {Shape({17, 33}), Shape({33, 9}), false, false, 1.0},   // odd sizes
      {Shape({2, 3, 4}), Shape({2, 4, 5}), false, false, 1.0},  // batched
      {Shape({3, 2, 4}), Shape({4, 5}), false, false, 2.0},   // Y shared
      {Shape({4, 2}), Shape({3, 4, 5}), true, false, 1.0},     // X shared
      {Shape({2, 0}), Shape({0, 3}), false, false, 1.0},       // K = 0
      {Shape({0, 4}), Shape({4, 3}), false, false, 1.0},       // empty output
      {Shape({1, 1}), Shape({1, 1}), false, false, -3.0},
  };
  uint64_t seed = 900;
  for (DataType t : kFloats) {
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
        c.label = Label(c.op, t, absl::StrCat(s.ToString(), after ? " bias after" : " bias before"));
        c.inputs = {{"X", x}};
        c.attrs = {{"scale", scale}, {"bias", bias}, {"bias_after_scale", after}};
        Array out{s, {}};
        for (double v : xa.values) {
          out.values.push_back(reference::Convert(after ? scale * v + bias : scale * (v + bias), t));
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
        c.label = absl::StrCat("cast ", DataTypeName(from), " -> ", DataTypeName(to), " ",
                               s.ToString());
        c.inputs = {{"X", x}};
        c.attrs["out_dtype"] = to;
        c.expected["Out"] = {to, Array{s, reference::Convert(xa.values, to)}};
        cases->push_back(std::move(c));
      }
    }
  }
}

}  // namespace

std::map<std::string, DataType> ConformanceCase::Bindings() const {
  std::map<std::string, DataType> b;
  for (const auto& [arg, t] : inputs) b.emplace(arg, t.dtype());
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
  return cases;
}

}  // namespace tandem
