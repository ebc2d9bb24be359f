// Central-difference gradient checks: for L = sum(Out * R) with a fixed
// random R (Out: the case's differentiated output, gradcheck_cases.h; an
// output bound to several variables sums over them, each with its R), the
// gradient ops built by each op's GradMaker must match
// (L(x + eps) - L(x - eps)) / 2eps for every element of every float64
// input, on every available place. Other inputs (int64 ids, int32 shapes)
// are held fixed and get no gradient. Gradient ops may read any forward
// output; SelectedRows gradients are densified for the comparison.
#include <map>

#include "absl/strings/str_cat.h"
#include "framework/device/device_registry.h"
#include "framework/kernel/eager.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/op/op_schema.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"
#include "tests/conformance/gradcheck_cases.h"

namespace tandem {
namespace {

// Inputs that are differentiated (the others are held fixed).
bool Differentiable(const Tensor& t) { return t.dtype() == DataType::kFloat64; }

// A gradient's values as a dense array (SelectedRows: rows summed into zeros).
std::vector<double> DenseValues(const Variable& v) {
  if (!v.is_selected_rows()) return ToDoubles(v.tensor());
  const SelectedRows& r = v.selected_rows();
  std::vector<double> dense(r.DenseShape().num_elements(), 0.0);
  const std::vector<double> value = ToDoubles(r.value());
  const size_t width = r.rows().empty() ? 0 : value.size() / r.rows().size();
  for (size_t i = 0; i < r.rows().size(); ++i) {
    for (size_t j = 0; j < width; ++j) dense[r.rows()[i] * width + j] += value[i * width + j];
  }
  return dense;
}

// sum over the variables i of `output` of sum(Out_i * r[i]).
double Loss(const OpDesc& op, const std::string& output, const Place& place,
            const std::map<std::string, Tensor>& vars, const std::vector<std::vector<double>>& r) {
  EagerInputs in;
  for (const auto& [arg, names] : op.inputs) {
    for (const std::string& n : names) in[arg].push_back(Variable(vars.at(n)));
  }
  absl::StatusOr<EagerOutputs> out = RunOpEager(op, place, in);
  CHECK(out.ok()) << out.status();
  double loss = 0;
  for (size_t k = 0; k < r.size(); ++k) {
    const std::vector<double> v = ToDoubles(out->at(output)[k].tensor());
    for (size_t i = 0; i < v.size(); ++i) loss += v[i] * r[k][i];
  }
  return loss;
}

void CheckGradients(const GradCase& c, const Place& place) {
  SCOPED_TRACE(absl::StrCat(c.label, " on ", place.ToString()));
  ASSERT_OK_AND_ASSIGN(const OpSchema* schema, OpRegistry::Global().Find(c.op.type));
  OpDesc fwd = c.op;
  ASSERT_OK(schema->Validate(&fwd));
  // A place without the op's kernels is not checked here (the conformance
  // suite checks that every registered kernel has a case).
  if (!KernelRegistry::Global().HasKernel(fwd.type, place.type())) return;

  // Forward once for the output's shapes, then R (one per variable of the
  // output, e.g. split's pieces).
  EagerInputs in;
  for (const auto& [arg, names] : fwd.inputs) {
    for (const std::string& n : names) in[arg].push_back(Variable(c.vars.at(n)));
  }
  ASSERT_OK_AND_ASSIGN(EagerOutputs out, RunOpEager(fwd, place, in));
  const std::vector<std::string>& out_names = fwd.outputs.at(c.output);
  std::map<std::string, Tensor> r;  // by gradient variable name
  std::vector<std::vector<double>> r_values;
  for (size_t k = 0; k < out_names.size(); ++k) {
    const Tensor rk =
        RandomTensor(DataType::kFloat64, out.at(c.output)[k].tensor().shape(), 77 + k);
    r[GradVarName(out_names[k])] = rk;
    r_values.push_back(ToDoubles(rk));
  }

  // Analytic gradients through the op's gradient ops.
  GradContext gctx;
  for (const auto& [name, t] : c.vars) {
    if (Differentiable(t)) gctx.wanted.push_back(name);
  }
  // Forward inputs and the output's gradients (which exist) are known.
  gctx.meta = [&](const std::string& var) -> std::optional<TensorMeta> {
    const std::map<std::string, Tensor>* const known_vars[] = {&c.vars, &r};
    for (const std::map<std::string, Tensor>* known : known_vars) {
      auto it = known->find(var);
      if (it != known->end()) return TensorMeta{it->second.dtype(), it->second.shape()};
    }
    return std::nullopt;
  };
  ASSERT_TRUE(schema->grad_maker()) << c.op.type << " has no gradient";
  ASSERT_OK_AND_ASSIGN(std::vector<OpDesc> grad_ops, schema->grad_maker()(fwd, gctx));
  ASSERT_FALSE(grad_ops.empty());
  for (const OpDesc& g : grad_ops) {
    if (!KernelRegistry::Global().HasKernel(g.type, place.type())) return;
  }
  // Complete as made: the backward pass runs grad ops without filling
  // attribute defaults.
  for (const OpDesc& g : grad_ops) {
    ASSERT_OK_AND_ASSIGN(const OpSchema* grad_schema, OpRegistry::Global().Find(g.type));
    OpDesc validated = g;
    ASSERT_OK(grad_schema->Validate(&validated));
    EXPECT_EQ(validated.attrs.size(), g.attrs.size()) << g.type << " lacks attributes";
  }
  std::map<std::string, Variable> env;
  for (const auto& [name, t] : c.vars) env[name] = Variable(t);
  // Gradient ops may read any forward output.
  for (const auto& [arg, names] : fwd.outputs) {
    for (size_t i = 0; i < names.size(); ++i) env[names[i]] = out.at(arg)[i];
  }
  for (const auto& [name, t] : r) env[name] = Variable(t);
  for (const OpDesc& g : grad_ops) {
    EagerInputs gin;
    for (const auto& [arg, names] : g.inputs) {
      for (const std::string& n : names) gin[arg].push_back(env.at(n));
    }
    ASSERT_OK_AND_ASSIGN(EagerOutputs gout, RunOpEager(g, place, gin));
    for (const auto& [arg, names] : g.outputs) {
      for (size_t i = 0; i < names.size(); ++i) env[names[i]] = gout.at(arg)[i];
    }
  }

  const double eps = 1e-6;
  for (const auto& [name, t] : c.vars) {
    if (!Differentiable(t)) {
      EXPECT_EQ(env.count(GradVarName(name)), 0u) << "gradient for fixed input " << name;
      continue;
    }
    ASSERT_TRUE(env.count(GradVarName(name))) << "no gradient for " << name;
    const std::vector<double> analytic = DenseValues(env.at(GradVarName(name)));
    const std::vector<double> base = ToDoubles(t);
    ASSERT_EQ(analytic.size(), base.size());
    for (size_t j = 0; j < base.size(); ++j) {
      std::map<std::string, Tensor> plus = c.vars, minus = c.vars;
      std::vector<double> p = base, m = base;
      p[j] += eps;
      m[j] -= eps;
      plus[name] = MakeTensor(DataType::kFloat64, t.shape(), p);
      minus[name] = MakeTensor(DataType::kFloat64, t.shape(), m);
      const double numeric = (Loss(fwd, c.output, place, plus, r_values) -
                              Loss(fwd, c.output, place, minus, r_values)) /
                             (2 * eps);
      EXPECT_NEAR(analytic[j], numeric, 1e-6 * (1 + std::abs(numeric))) << name << "[" << j << "]";
    }
  }
}

std::vector<GradCase> Cases() {
  auto rnd = [](const Shape& s, uint64_t seed) {
    return RandomTensor(DataType::kFloat64, s, seed);
  };
  std::vector<GradCase> cases;
  cases.push_back({"add same shape",
                   GradOp("elementwise_add", {{"X", {"x"}}, {"Y", {"y"}}}),
                   {{"x", rnd({2, 3}, 1)}, {"y", rnd({2, 3}, 2)}}});
  cases.push_back({"add broadcast both",
                   GradOp("elementwise_add", {{"X", {"x"}}, {"Y", {"y"}}}),
                   {{"x", rnd({3, 1, 2}, 3)}, {"y", rnd({4, 1}, 4)}}});
  cases.push_back({"add axis 1",
                   GradOp("elementwise_add", {{"X", {"x"}}, {"Y", {"y"}}}, {{"axis", int64_t{1}}}),
                   {{"x", rnd({2, 3, 2}, 5)}, {"y", rnd({3}, 6)}}});
  cases.push_back({"add scalar",
                   GradOp("elementwise_add", {{"X", {"x"}}, {"Y", {"y"}}}),
                   {{"x", rnd({}, 7)}, {"y", rnd({3}, 8)}}});
  for (bool tx : {false, true}) {
    for (bool ty : {false, true}) {
      const Shape xs = tx ? Shape({4, 3}) : Shape({3, 4});
      const Shape ys = ty ? Shape({2, 4}) : Shape({4, 2});
      cases.push_back({absl::StrCat("matmul tx=", tx, " ty=", ty),
                       GradOp("matmul", {{"X", {"x"}}, {"Y", {"y"}}},
                              {{"transpose_X", tx}, {"transpose_Y", ty}, {"alpha", 0.7}}),
                       {{"x", rnd(xs, 10 + tx)}, {"y", rnd(ys, 20 + ty)}}});
    }
  }
  cases.push_back({"matmul batched, Y shared",
                   GradOp("matmul", {{"X", {"x"}}, {"Y", {"y"}}}),
                   {{"x", rnd({2, 3, 2}, 30)}, {"y", rnd({2, 2}, 31)}}});
  cases.push_back({"matmul batched both",
                   GradOp("matmul", {{"X", {"x"}}, {"Y", {"y"}}}),
                   {{"x", rnd({2, 2, 3}, 32)}, {"y", rnd({2, 3, 2}, 33)}}});
  cases.push_back({"scale bias after",
                   GradOp("scale", {{"X", {"x"}}}, {{"scale", -1.5}, {"bias", 2.0}}),
                   {{"x", rnd({5}, 40)}}});
  cases.push_back({"scale bias before",
                   GradOp("scale", {{"X", {"x"}}},
                          {{"scale", 3.0}, {"bias", 1.0}, {"bias_after_scale", false}}),
                   {{"x", rnd({2, 2}, 41)}}});
  cases.push_back({"cast float64 -> float64",
                   GradOp("cast", {{"X", {"x"}}}, {{"out_dtype", DataType::kFloat64}}),
                   {{"x", rnd({4}, 50)}}});
  const Tensor ids = MakeTensor(DataType::kInt64, {2, 2}, {1, 3, 1, 0});
  for (bool sparse : {false, true}) {
    for (int64_t padding_idx : {int64_t{-1}, int64_t{1}}) {
      cases.push_back(
          {absl::StrCat("lookup_table ", sparse ? "sparse" : "dense", " padding_idx ", padding_idx),
           GradOp("lookup_table", {{"Ids", {"ids"}}, {"W", {"w"}}},
                  {{"is_sparse", sparse}, {"padding_idx", padding_idx}}),
           {{"ids", ids}, {"w", rnd({5, 3}, 60)}}});
    }
  }
  for (int64_t axis : {-1, 0}) {
    cases.push_back({absl::StrCat("l2_normalize axis ", axis),
                     GradOp("l2_normalize", {{"X", {"x"}}}, {{"axis", axis}}),
                     {{"x", rnd({3, 4}, 70 + axis)}}});
  }
  cases.push_back({"l2_normalize middle axis, epsilon 0.1",
                   GradOp("l2_normalize", {{"X", {"x"}}}, {{"axis", int64_t{1}}, {"epsilon", 0.1}}),
                   {{"x", rnd({2, 3, 2}, 72)}}});
  for (int64_t axis : {-1, 0}) {
    cases.push_back({absl::StrCat("l2_normalize_square_error_mean axis ", axis),
                     GradOp("l2_normalize_square_error_mean", {{"X", {"x"}}, {"Label", {"y"}}},
                            {{"axis", axis}}),
                     {{"x", rnd({3, 4}, 75 + axis)}, {"y", rnd({3, 4}, 77 + axis)}}});
  }
  cases.push_back({"square_error_cost",
                   GradOp("square_error_cost", {{"X", {"x"}}, {"Y", {"y"}}}),
                   {{"x", rnd({2, 3}, 80)}, {"y", rnd({2, 3}, 81)}}});
  cases.push_back({"mean", GradOp("mean", {{"X", {"x"}}}), {{"x", rnd({2, 3}, 90)}}});
  cases.push_back({"mean 0-d", GradOp("mean", {{"X", {"x"}}}), {{"x", rnd({}, 91)}}});
  cases.push_back({"slice",
                   GradOp("slice", {{"Input", {"x"}}},
                          {{"axes", std::vector<int64_t>{0, 1}},
                           {"starts", std::vector<int64_t>{1, -3}},
                           {"ends", std::vector<int64_t>{3, 100}}}),
                   {{"x", rnd({4, 5}, 100)}}});
  cases.push_back(
      {"crop_tensor",
       GradOp("crop_tensor", {{"X", {"x"}}, {"Shape", {"shape"}}},
              {{"offsets", std::vector<int64_t>{1, 1}}}),
       {{"x", rnd({3, 4}, 110)}, {"shape", MakeTensor(DataType::kInt32, {2}, {2, -1})}}});
  AddLayerGradCases(&cases);
  AddMathGradCases(&cases);
  AddClassifierGradCases(&cases);
  return cases;
}

TEST(GradCheck, EveryDifferentiableOpOnEveryPlace) {
  for (const Place& place : DeviceRegistry::Global().AvailablePlaces()) {
    for (const GradCase& c : Cases()) CheckGradients(c, place);
  }
}

TEST(GradCheck, EveryOpWithAGradientHasACase) {
  std::set<std::string> covered;
  for (const GradCase& c : Cases()) covered.insert(c.op.type);
  for (const std::string& type : OpRegistry::Global().RegisteredOps()) {
    ASSERT_OK_AND_ASSIGN(const OpSchema* s, OpRegistry::Global().Find(type));
    if (s->grad_maker()) {
      EXPECT_TRUE(covered.count(type))
          << "op '" << type << "' has a gradient but no gradcheck case";
    }
  }
}

}  // namespace
}  // namespace tandem
