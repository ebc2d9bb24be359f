// Cases of elementwise_sub/mul/div, relu/sigmoid/tanh/gelu, reduce_sum/mean and
// mul, and of their gradient ops.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/testing/tensor_testutil.h"
#include "tests/conformance/case_util.h"
#include "tests/conformance/cases.h"
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

struct BinarySpec {
  std::string op;
  std::function<double(double, double)> fn;
  // {dOut/dX, dOut/dY} at (x, y).
  std::function<std::pair<double, double>(double, double)> d;
  bool int_grad;  // the gradient op takes integers too
};

// Divisors away from zero: floats moved out of (-0.5, 0.5), integer zeros
// made 1.
std::pair<Tensor, Array> Divisor(DataType t, const Shape& s, uint64_t seed) {
  std::vector<double> v = RandomValues(t, s.num_elements(), seed);
  for (double& e : v) {
    if (IsFloating(t)) {
      e += e < 0 ? -0.5 : 0.5;
    } else if (e == 0) {
      e = 1;
    }
  }
  const Tensor tensor = MakeTensor(t, s, v);
  return {tensor, Array{s, ToDoubles(tensor)}};
}

void AddBinary(std::vector<ConformanceCase>* cases) {
  const std::vector<BinarySpec> specs = {
      {"elementwise_sub", [](double a, double b) { return a - b; },
       [](double, double) { return std::make_pair(1.0, -1.0); }, true},
      {"elementwise_mul", [](double a, double b) { return a * b; },
       [](double a, double b) { return std::make_pair(b, a); }, true},
      {"elementwise_div", [](double a, double b) { return a / b; },
       [](double a, double b) { return std::make_pair(1 / b, -a / (b * b)); }, false},
  };
  uint64_t seed = 20000;
  for (const BinarySpec& spec : specs) {
    const bool div = spec.op == "elementwise_div";
    for (DataType t : kNumericWith16Bit) {
      for (const BroadcastConfig& cfg : BroadcastConfigs()) {
        auto [x, xa] = Input(t, cfg.x, ++seed);
        auto [y, ya] = div ? Divisor(t, cfg.y, ++seed) : Input(t, cfg.y, ++seed);
        const std::string what =
            absl::StrCat(cfg.x.ToString(), ", ", cfg.y.ToString(), " axis ", cfg.axis);
        const Array out = reference::Broadcast(xa, ya, cfg.axis, spec.fn);
        ConformanceCase c;
        c.op = spec.op;
        c.label = Label(c.op, t, what);
        c.inputs = {{"X", x}, {"Y", y}};
        c.attrs["axis"] = cfg.axis;
        c.expected["Out"] = {t, Array{out.shape, reference::Convert(out.values, t)}};
        SetTolerance(&c, t);
        cases->push_back(c);

        if (!IsFloating(t) && !spec.int_grad) continue;
        auto [dout, douta] = Input(t, out.shape, ++seed);
        auto [dx, dy] = reference::BroadcastGrad(xa, ya, douta, cfg.axis, spec.d);
        const int64_t reduction =
            std::max<int64_t>(1, out.shape.num_elements()) /
            std::max<int64_t>(1, std::min(xa.shape.num_elements(), ya.shape.num_elements()));
        ConformanceCase g;
        g.op = spec.op + "_grad";
        g.label = Label(g.op, t, what);
        g.inputs = {{"X", x}, {"Y", y}, {"Out@GRAD", dout}};
        // div's gradient reads Out: the forward result in T.
        if (div) g.inputs.push_back({"Out", MakeTensor(t, out.shape, out.values)});
        g.attrs["axis"] = cfg.axis;
        g.expected["X@GRAD"] = {t, dx};
        g.expected["Y@GRAD"] = {t, dy};
        // div's Y@GRAD terms reach |dout * x / y^2| <= 16.
        SetTolerance(&g, t, (div ? 16 : 4) * reduction);
        if (div && IsLowPrecisionFloat(t)) {
          // ... and read Out rounded to T: each term is off by up to one
          // unit in T's last place, which a sum over broadcast dims adds up.
          g.atol += (t == DataType::kBFloat16 ? 0x1p-7 : 0x1p-10) * 16 * reduction;
        }
        cases->push_back(g);

        ConformanceCase only_y = g;
        only_y.label += " (Y@GRAD only)";
        only_y.expected.erase("X@GRAD");
        cases->push_back(only_y);
      }
    }
  }
}

// Integer division truncates toward zero and wraps INT_MIN / -1.
void AddIntegerDivision(std::vector<ConformanceCase>* cases) {
  for (DataType t : {DataType::kInt32, DataType::kInt64}) {
    const double min = t == DataType::kInt32 ? -2147483648.0 : -9223372036854775808.0;
    ConformanceCase c;
    c.op = "elementwise_div";
    c.label = Label(c.op, t, "truncation and INT_MIN / -1");
    c.inputs = {{"X", MakeTensor(t, Shape({5}), {7, -7, 7, -7, min})},
                {"Y", MakeTensor(t, Shape({5}), {2, 2, -2, -2, -1})}};
    c.expected["Out"] = {t, Array{Shape({5}), {3, -3, -3, 3, min}}};
    cases->push_back(std::move(c));
  }
}

struct ActivationSpec {
  std::string op;
  std::function<double(double)> f;
  // f' as a function of what the gradient op reads: X (grad_reads_x) or
  // Out, so that in a 16-bit type the reference starts from the rounded
  // Out the kernel sees.
  std::function<double(double)> df;
  bool grad_reads_x = false;  // the gradient op reads X (else Out)
  bool approximate = false;   // gelu's attr
};

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

double NormalCdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
double NormalPdf(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI); }

// GPT-2's gelu: 0.5 x (1 + tanh(u)), u = sqrt(2 / pi) (x + 0.044715 x^3).
double GeluTanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
double GeluTanhGrad(double x) {
  const double t = std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * std::sqrt(2 / M_PI) * (1 + 3 * 0.044715 * x * x);
}

void AddActivations(std::vector<ConformanceCase>* cases) {
  const std::vector<ActivationSpec> specs = {
      {"relu", [](double x) { return x > 0 ? x : 0.0; },
       [](double out) { return out > 0 ? 1.0 : 0.0; }},
      {"sigmoid", Sigmoid, [](double out) { return out * (1 - out); }},
      {"tanh", [](double x) { return std::tanh(x); }, [](double out) { return 1 - out * out; }},
      {"gelu", [](double x) { return x * NormalCdf(x); },
       [](double x) { return NormalCdf(x) + x * NormalPdf(x); }, /*grad_reads_x=*/true},
      {"gelu", GeluTanh, GeluTanhGrad, /*grad_reads_x=*/true, /*approximate=*/true},
  };
  const std::vector<Shape> shapes = {Shape(), Shape({0}), Shape({1023}), Shape({3, 7}),
                                     Shape({33, 150})};
  uint64_t seed = 21000;
  for (const ActivationSpec& spec : specs) {
    for (DataType t : kFloatsWith16Bit) {
      std::vector<std::pair<std::string, std::pair<Tensor, Array>>> inputs;
      for (const Shape& s : shapes) inputs.push_back({s.ToString(), Input(t, s, ++seed)});
      // Far from 0: sigmoid must not overflow exp, tanh saturates.
      const Tensor extreme =
          MakeTensor(t, Shape({8}), {-1000, -100, -30, -1e-3, 1e-3, 30, 100, 1000});
      inputs.push_back({"extreme values", {extreme, Array{Shape({8}), ToDoubles(extreme)}}});
      for (const auto& [shape_name, input] : inputs) {
        const auto& [x, xa] = input;
        const Array out = reference::Map(xa, spec.f);
        const std::string what = spec.approximate ? shape_name + ", approximate" : shape_name;
        ConformanceCase c;
        c.op = spec.op;
        c.label = Label(c.op, t, what);
        c.inputs = {{"X", x}};
        if (spec.op == "gelu") c.attrs = {{"approximate", spec.approximate}};
        c.expected["Out"] = {t, out};
        SetTolerance(&c, t, 2);
        cases->push_back(c);

        auto [dout, douta] = Input(t, xa.shape, ++seed);
        // The forward result as the kernel would see it, in T.
        const Tensor out_t = MakeTensor(t, out.shape, out.values);
        Array dx =
            reference::Map(spec.grad_reads_x ? xa : Array{out.shape, ToDoubles(out_t)}, spec.df);
        for (size_t i = 0; i < dx.values.size(); ++i) dx.values[i] *= douta.values[i];
        ConformanceCase g;
        g.op = spec.op + "_grad";
        g.label = Label(g.op, t, what);
        g.attrs = c.attrs;
        if (spec.grad_reads_x) {
          g.inputs = {{"X", x}, {"Out@GRAD", dout}};
        } else {
          g.inputs = {{"Out", out_t}, {"Out@GRAD", dout}};
        }
        g.expected["X@GRAD"] = {t, dx};
        SetTolerance(&g, t, 4);
        cases->push_back(g);
      }
    }
  }
}

struct ReduceConfig {
  Shape x;
  std::vector<int64_t> dim;  // as the attr
  bool keep_dim;
  bool reduce_all;
  std::vector<int> reduced;  // the dims the reference reduces (empty: all)
};

void AddReduce(std::vector<ConformanceCase>* cases) {
  const std::vector<ReduceConfig> configs = {
      {Shape({2, 3, 4}), {}, false, false, {}},          // all, to [1]
      {Shape({2, 3, 4}), {1}, false, false, {1}},        // middle
      {Shape({2, 3, 4}), {-1, 0}, true, false, {0, 2}},  // negative, keep_dim
      {Shape({2, 3, 4}), {1}, true, true, {}},           // reduce_all wins
      {Shape(), {}, false, false, {}},                   // 0-d to [1]
      {Shape(), {}, true, false, {}},                    // 0-d kept: 0-d
      {Shape({257, 65}), {0}, false, false, {0}},        // odd, rows
      {Shape({3, 1023}), {1}, false, false, {1}},        // long rows
      {Shape({0, 3}), {1}, false, false, {1}},           // empty output
      {Shape({4, 0}), {1}, false, false, {1}},           // sums of nothing
  };
  uint64_t seed = 22000;
  for (bool mean : {false, true}) {
    const std::string op = mean ? "reduce_mean" : "reduce_sum";
    for (DataType t : kFloats) {
      for (const ReduceConfig& cfg : configs) {
        int64_t count = 1;
        for (int d = 0; d < cfg.x.rank(); ++d) {
          const bool reduced =
              cfg.reduced.empty() || std::count(cfg.reduced.begin(), cfg.reduced.end(), d) > 0;
          if (reduced) count *= cfg.x.dim(d);
        }
        if (mean && count == 0) continue;  // InvalidArgument (kernel tests)
        auto [x, xa] = Input(t, cfg.x, ++seed);
        const std::string what =
            absl::StrCat(cfg.x.ToString(), " dim [", absl::StrJoin(cfg.dim, ","), "]",
                         cfg.keep_dim ? " keep_dim" : "", cfg.reduce_all ? " reduce_all" : "");
        const AttrMap attrs = {
            {"dim", cfg.dim}, {"keep_dim", cfg.keep_dim}, {"reduce_all", cfg.reduce_all}};
        const Array out = reference::Reduce(xa, cfg.reduced, cfg.keep_dim, mean);
        ConformanceCase c;
        c.op = op;
        c.label = Label(op, t, what);
        c.inputs = {{"X", x}};
        c.attrs = attrs;
        c.expected["Out"] = {t, out};
        SetTolerance(&c, t, count);
        cases->push_back(c);

        auto [dout, douta] = Input(t, out.shape, ++seed);
        ConformanceCase g;
        g.op = op + "_grad";
        g.label = Label(g.op, t, what);
        g.inputs = {{"X", x}, {"Out@GRAD", dout}};
        g.attrs = attrs;
        g.expected["X@GRAD"] = {t, reference::ReduceGrad(xa, cfg.reduced, douta, mean)};
        SetTolerance(&g, t);
        cases->push_back(g);
      }
    }
  }
}

struct MulConfig {
  Shape x, y;
  int64_t xn, yn;
};

void AddMul(std::vector<ConformanceCase>* cases) {
  const std::vector<MulConfig> configs = {
      {Shape({2, 3}), Shape({3, 4}), 1, 1},
      {Shape({2, 3, 4}), Shape({4, 5}), 2, 1},      // X rows from two dims
      {Shape({2, 12}), Shape({3, 4, 5}), 1, 2},     // Y rows from two dims
      {Shape({2, 3, 4}), Shape({12, 2, 3}), 1, 1},  // both flattened: Out [2, 2, 3]
      {Shape({17, 33}), Shape({33, 9}), 1, 1},      // odd sizes
      {Shape({2, 0}), Shape({0, 3}), 1, 1},         // K = 0
      {Shape({0, 4}), Shape({4, 3}), 1, 1},         // empty output
  };
  uint64_t seed = 23000;
  for (DataType t : kFloatsWith16Bit) {
    for (const MulConfig& cfg : configs) {
      auto [x, xa] = Input(t, cfg.x, ++seed);
      auto [y, ya] = Input(t, cfg.y, ++seed);
      const std::string what =
          absl::StrCat(cfg.x.ToString(), " (", cfg.xn, ") x ", cfg.y.ToString(), " (", cfg.yn, ")");
      const AttrMap attrs = {{"x_num_col_dims", cfg.xn}, {"y_num_col_dims", cfg.yn}};
      const Array xm = reference::AsMatrix(xa, static_cast<int>(cfg.xn));
      const Array ym = reference::AsMatrix(ya, static_cast<int>(cfg.yn));
      Array out = reference::Matmul(xm, ym, false, false, 1.0);
      std::vector<int64_t> out_dims(cfg.x.dims().begin(), cfg.x.dims().begin() + cfg.xn);
      out_dims.insert(out_dims.end(), cfg.y.dims().begin() + cfg.yn, cfg.y.dims().end());
      out.shape = Shape(out_dims);
      const int64_t k = xm.shape.dim(1);
      ConformanceCase c;
      c.op = "mul";
      c.label = Label(c.op, t, what);
      c.inputs = {{"X", x}, {"Y", y}};
      c.attrs = attrs;
      c.expected["Out"] = {t, out};
      SetTolerance(&c, t, k);
      cases->push_back(c);

      auto [dout, douta] = Input(t, out.shape, ++seed);
      auto [dx, dy] = reference::MatmulGrad(
          xm, ym, Array{Shape({xm.shape.dim(0), ym.shape.dim(1)}), douta.values}, false, false,
          1.0);
      dx.shape = cfg.x;
      dy.shape = cfg.y;
      ConformanceCase g;
      g.op = "mul_grad";
      g.label = Label(g.op, t, what);
      g.inputs = {{"X", x}, {"Y", y}, {"Out@GRAD", dout}};
      g.attrs = attrs;
      g.expected["X@GRAD"] = {t, dx};
      g.expected["Y@GRAD"] = {t, dy};
      SetTolerance(&g, t, std::max<int64_t>(1, out.shape.num_elements()));
      cases->push_back(g);

      ConformanceCase only_x = g;
      only_x.label += " (X@GRAD only)";
      only_x.expected.erase("Y@GRAD");
      cases->push_back(only_x);
    }
  }
}

}  // namespace

void AddMathCases(std::vector<ConformanceCase>* cases) {
  AddBinary(cases);
  AddIntegerDivision(cases);
  AddActivations(cases);
  AddReduce(cases);
  AddMul(cases);
}

}  // namespace tandem
