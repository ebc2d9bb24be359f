// tandem._C.layers: one function per ProgramBuilder method, plus append_op
// and the optimizers' minimize. Each takes a BuildTarget (the programs,
// device_guard and transfer policy in force in Python) and returns the
// names of the variables it made; tandem/layers.py wraps them.
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/backward/optimizer.h"
#include "pybind11/stl.h"
#include "python/attr_convert.h"
#include "python/bindings.h"
#include "python/program_handle.h"

namespace py = pybind11;

namespace tandem {
namespace python {
namespace {

// Where a layer goes: what tandem.framework's guards say at the call.
struct BuildTarget {
  ProgramHandle* main;
  ProgramHandle* startup;
  std::string device;
  std::string policy;
};

DataType Dtype(const std::string& name) { return ValueOrThrow(ParseDataType(name)); }
Shape ShapeOf(const std::vector<int64_t>& dims) { return Shape(absl::MakeConstSpan(dims)); }

std::vector<std::string> Names(const std::vector<Var>& vars) {
  std::vector<std::string> names;
  for (const Var& v : vars) names.push_back(v.name);
  return names;
}

// Defines `name(target, args...)`: runs `fn` (a plain function of the
// builder and the args) in a BuildCall and returns its result once the
// builder reports no error.
template <typename R, typename... A, typename... Extra>
void DefLayer(py::module_& m, const char* name, R (*fn)(ProgramBuilder*, A...), const char* doc,
              Extra... extra) {
  m.def(
      name,
      [fn](BuildTarget& t, A... args) -> R {
        BuildCall call(t.main, t.startup, t.device, t.policy);
        return call.Done(fn(call.b(), args...));
      },
      doc, py::arg("target"), extra...);
}

using Str = const std::string&;
using Ints = const std::vector<int64_t>&;

void DefElementwise(py::module_& m) {
  DefLayer(
      m, "elementwise_add",
      +[](ProgramBuilder* b, Str x, Str y, int64_t axis) {
        return b->ElementwiseAdd({x}, {y}, axis).name;
      },
      "x + y, y broadcast from `axis`", py::arg("x"), py::arg("y"), py::arg("axis"));
  DefLayer(
      m, "elementwise_sub",
      +[](ProgramBuilder* b, Str x, Str y, int64_t axis) {
        return b->ElementwiseSub({x}, {y}, axis).name;
      },
      "x - y", py::arg("x"), py::arg("y"), py::arg("axis"));
  DefLayer(
      m, "elementwise_mul",
      +[](ProgramBuilder* b, Str x, Str y, int64_t axis) {
        return b->ElementwiseMul({x}, {y}, axis).name;
      },
      "x * y", py::arg("x"), py::arg("y"), py::arg("axis"));
  DefLayer(
      m, "elementwise_div",
      +[](ProgramBuilder* b, Str x, Str y, int64_t axis) {
        return b->ElementwiseDiv({x}, {y}, axis).name;
      },
      "x / y", py::arg("x"), py::arg("y"), py::arg("axis"));
  DefLayer(
      m, "matmul",
      +[](ProgramBuilder* b, Str x, Str y, bool tx, bool ty, double alpha) {
        return b->Matmul({x}, {y}, tx, ty, alpha).name;
      },
      "alpha * x @ y", py::arg("x"), py::arg("y"), py::arg("transpose_x"), py::arg("transpose_y"),
      py::arg("alpha"));
  DefLayer(
      m, "mul",
      +[](ProgramBuilder* b, Str x, Str y, int64_t xc, int64_t yc) {
        return b->Mul({x}, {y}, xc, yc).name;
      },
      "Paddle's mul", py::arg("x"), py::arg("y"), py::arg("x_num_col_dims"),
      py::arg("y_num_col_dims"));
  DefLayer(
      m, "scale",
      +[](ProgramBuilder* b, Str x, double scale, double bias, bool after) {
        return b->Scale({x}, scale, bias, after).name;
      },
      "scale * x + bias", py::arg("x"), py::arg("scale"), py::arg("bias"),
      py::arg("bias_after_scale"));
  DefLayer(
      m, "cast",
      +[](ProgramBuilder* b, Str x, Str dtype) { return b->Cast({x}, Dtype(dtype)).name; },
      "x as dtype", py::arg("x"), py::arg("dtype"));
}

void DefActivations(py::module_& m) {
  DefLayer(
      m, "relu", +[](ProgramBuilder* b, Str x) { return b->Relu({x}).name; }, "max(x, 0)",
      py::arg("x"));
  DefLayer(
      m, "sigmoid", +[](ProgramBuilder* b, Str x) { return b->Sigmoid({x}).name; },
      "1 / (1 + exp(-x))", py::arg("x"));
  DefLayer(
      m, "tanh", +[](ProgramBuilder* b, Str x) { return b->Tanh({x}).name; }, "tanh(x)",
      py::arg("x"));
  DefLayer(
      m, "gelu",
      +[](ProgramBuilder* b, Str x, bool approximate) { return b->Gelu({x}, approximate).name; },
      "x * Phi(x); approximate: the tanh form", py::arg("x"), py::arg("approximate"));
  DefLayer(
      m, "self_attention",
      +[](ProgramBuilder* b, Str qkv, int64_t num_heads, bool causal, double scale) {
        return b->SelfAttention({qkv}, num_heads, causal, scale).name;
      },
      "multi-head self-attention of packed [batch, seq, 3 * width] projections",
      py::arg("qkv"), py::arg("num_heads"), py::arg("causal"), py::arg("scale"));
  DefLayer(
      m, "softmax",
      +[](ProgramBuilder* b, Str x, int64_t axis) { return b->Softmax({x}, axis).name; },
      "softmax over `axis`", py::arg("x"), py::arg("axis"));
  DefLayer(
      m, "l2_normalize",
      +[](ProgramBuilder* b, Str x, int64_t axis, double epsilon) {
        return b->L2Normalize({x}, axis, epsilon).name;
      },
      "x / ||x|| over `axis`", py::arg("x"), py::arg("axis"), py::arg("epsilon"));
  DefLayer(
      m, "mean", +[](ProgramBuilder* b, Str x) { return b->Mean({x}).name; },
      "the mean of every element, [1]", py::arg("x"));
  DefLayer(
      m, "reduce_sum",
      +[](ProgramBuilder* b, Str x, Ints dims, bool keep_dim) {
        return b->ReduceSum({x}, dims, keep_dim).name;
      },
      "sum over dims", py::arg("x"), py::arg("dim"), py::arg("keep_dim"));
  DefLayer(
      m, "reduce_mean",
      +[](ProgramBuilder* b, Str x, Ints dims, bool keep_dim) {
        return b->ReduceMean({x}, dims, keep_dim).name;
      },
      "mean over dims", py::arg("x"), py::arg("dim"), py::arg("keep_dim"));
  DefLayer(
      m, "dropout",
      +[](ProgramBuilder* b, Str x, double p, bool is_test, int64_t seed) {
        return b->Dropout({x}, p, is_test, seed).name;
      },
      "seeded dropout", py::arg("x"), py::arg("dropout_prob"), py::arg("is_test"), py::arg("seed"));
}

void DefLosses(py::module_& m) {
  DefLayer(
      m, "square_error_cost",
      +[](ProgramBuilder* b, Str input, Str label) {
        return b->SquareErrorCost({input}, {label}).name;
      },
      "(input - label)^2", py::arg("input"), py::arg("label"));
  DefLayer(
      m, "softmax_with_cross_entropy",
      +[](ProgramBuilder* b, Str logits, Str label, int64_t ignore_index) {
        Var softmax;
        Var loss = b->SoftmaxWithCrossEntropy({logits}, {label}, ignore_index, &softmax);
        return std::make_pair(loss.name, softmax.name);
      },
      "(loss, softmax)", py::arg("logits"), py::arg("label"), py::arg("ignore_index"));
  DefLayer(
      m, "accuracy",
      +[](ProgramBuilder* b, Str input, Str label, int64_t k) {
        Var correct, total;
        Var acc = b->Accuracy({input}, {label}, k, &correct, &total);
        return std::make_tuple(acc.name, correct.name, total.name);
      },
      "(accuracy, correct, total)", py::arg("input"), py::arg("label"), py::arg("k"));
}

void DefArrays(py::module_& m) {
  DefLayer(
      m, "fill_constant",
      +[](ProgramBuilder* b, Ints shape, Str dtype, double value) {
        return b->FillConstant(shape, Dtype(dtype), value).name;
      },
      "a constant tensor", py::arg("shape"), py::arg("dtype"), py::arg("value"));
  DefLayer(
      m, "shape", +[](ProgramBuilder* b, Str x) { return b->ShapeOf({x}).name; }, "x's dims, int32",
      py::arg("x"));
  DefLayer(
      m, "slice",
      +[](ProgramBuilder* b, Str x, Ints axes, Ints starts, Ints ends) {
        return b->Slice({x}, axes, starts, ends).name;
      },
      "x[starts:ends] on axes", py::arg("x"), py::arg("axes"), py::arg("starts"), py::arg("ends"));
  DefLayer(
      m, "crop_tensor",
      +[](ProgramBuilder* b, Str x, Str shape, Ints offsets) {
        return b->CropTensor({x}, {shape}, offsets).name;
      },
      "x cropped to `shape`", py::arg("x"), py::arg("shape"), py::arg("offsets"));
  DefLayer(
      m, "reshape",
      +[](ProgramBuilder* b, Str x, Ints shape) { return b->Reshape({x}, shape).name; },
      "x with new dims", py::arg("x"), py::arg("shape"));
  DefLayer(
      m, "transpose",
      +[](ProgramBuilder* b, Str x, Ints perm) { return b->Transpose({x}, perm).name; },
      "x's dims permuted", py::arg("x"), py::arg("perm"));
  DefLayer(
      m, "concat",
      +[](ProgramBuilder* b, const std::vector<std::string>& xs, int64_t axis) {
        std::vector<Var> vars;
        for (const std::string& x : xs) vars.push_back({x});
        return b->Concat(vars, axis).name;
      },
      "xs joined along axis", py::arg("input"), py::arg("axis"));
  DefLayer(
      m, "split",
      +[](ProgramBuilder* b, Str x, int64_t num, int64_t axis) {
        return Names(b->Split({x}, num, axis));
      },
      "x cut into num pieces", py::arg("x"), py::arg("num"), py::arg("axis"));
  DefLayer(
      m, "split_sections",
      +[](ProgramBuilder* b, Str x, Ints sections, int64_t axis) {
        return Names(b->SplitSections({x}, sections, axis));
      },
      "x cut into pieces of the given sizes", py::arg("x"), py::arg("sections"), py::arg("axis"));
}

void DefParameterLayers(py::module_& m) {
  DefLayer(
      m, "data",
      +[](ProgramBuilder* b, Str name, Str dtype, Ints shape) {
        return b->Data(name, Dtype(dtype), ShapeOf(shape)).name;
      },
      "a variable fed on every run", py::arg("name"), py::arg("dtype"), py::arg("shape"));
  DefLayer(
      m, "create_parameter",
      +[](ProgramBuilder* b, Str name, Str dtype, Ints shape, Initializer init) {
        return b->CreateParameter(name, Dtype(dtype), ShapeOf(shape), init).name;
      },
      "a trainable parameter", py::arg("name"), py::arg("dtype"), py::arg("shape"),
      py::arg("initializer"));
  DefLayer(
      m, "create_persistable_constant",
      +[](ProgramBuilder* b, Str name, Str dtype, Ints shape, double value) {
        return b->CreatePersistableConstant(name, Dtype(dtype), ShapeOf(shape), value).name;
      },
      "a persistable, non-trainable variable", py::arg("name"), py::arg("dtype"), py::arg("shape"),
      py::arg("value"));
  DefLayer(
      m, "lookup_table",
      +[](ProgramBuilder* b, Str ids, Str table, bool is_sparse, int64_t padding_idx) {
        return b->LookupTable({ids}, {table}, is_sparse, padding_idx).name;
      },
      "rows of table", py::arg("ids"), py::arg("table"), py::arg("is_sparse"),
      py::arg("padding_idx"));
  DefLayer(
      m, "embedding",
      +[](ProgramBuilder* b, Str ids, Ints size, bool is_sparse, int64_t padding_idx,
          Initializer init, Str param_name) {
        return b->Embedding({ids}, size, is_sparse, padding_idx, init, param_name).name;
      },
      "a new table looked up by ids", py::arg("ids"), py::arg("size"), py::arg("is_sparse"),
      py::arg("padding_idx"), py::arg("initializer"), py::arg("param_name"));
  DefLayer(
      m, "fc",
      +[](ProgramBuilder* b, Str x, int64_t size, int64_t num_col_dims, bool with_bias, Str name,
          Initializer w_init) {
        return b->Fc({x}, size, num_col_dims, with_bias, name, w_init).name;
      },
      "x @ w + b", py::arg("x"), py::arg("size"), py::arg("num_flatten_dims"), py::arg("with_bias"),
      py::arg("name"), py::arg("initializer"));
  DefLayer(
      m, "conv2d",
      +[](ProgramBuilder* b, Str x, int64_t filters, int64_t filter_size, int64_t stride,
          int64_t padding, int64_t groups, bool with_bias, Str name, Initializer w_init) {
        return b
            ->Conv2D({x}, filters, filter_size, stride, padding, groups, with_bias, name, w_init)
            .name;
      },
      "a 2-D convolution", py::arg("input"), py::arg("num_filters"), py::arg("filter_size"),
      py::arg("stride"), py::arg("padding"), py::arg("groups"), py::arg("with_bias"),
      py::arg("name"), py::arg("initializer"));
  DefLayer(
      m, "pool2d",
      +[](ProgramBuilder* b, Str x, int64_t size, Str type, int64_t stride, int64_t padding,
          bool global_pooling, bool exclusive) {
        return b->Pool2D({x}, size, type, stride, padding, global_pooling, exclusive).name;
      },
      "max or avg pooling", py::arg("input"), py::arg("pool_size"), py::arg("pool_type"),
      py::arg("pool_stride"), py::arg("pool_padding"), py::arg("global_pooling"),
      py::arg("exclusive"));
  DefLayer(
      m, "layer_norm",
      +[](ProgramBuilder* b, Str x, int64_t begin, double epsilon, bool scale, bool shift,
          Str name) { return b->LayerNorm({x}, begin, epsilon, scale, shift, name).name; },
      "layer normalisation", py::arg("input"), py::arg("begin_norm_axis"), py::arg("epsilon"),
      py::arg("scale"), py::arg("shift"), py::arg("name"));
}

std::map<std::string, std::vector<std::string>> AppendOp(
    ProgramBuilder* b, Str type, const std::map<std::string, std::vector<std::string>>& inputs,
    const py::dict& attrs, const std::vector<std::string>& outputs,
    const std::map<std::string, std::string>& output_names,
    const std::map<std::string, int>& output_counts) {
  std::map<std::string, std::vector<Var>> in;
  for (const auto& [arg, names] : inputs) {
    for (const std::string& n : names) in[arg].push_back({n});
  }
  AttrMap attr_map;
  for (auto [key, value] : attrs) {
    const std::string name = key.cast<std::string>();
    attr_map[name] =
        ValueOrThrow(AttrFromPython(value, absl::StrCat(type, " attribute '", name, "'")));
  }
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [arg, vars] :
       b->AppendOp(type, in, attr_map, outputs, output_names, output_counts)) {
    out[arg] = Names(vars);
  }
  return out;
}

// Dynamic loss scaling and gradient clipping from Python's options (None:
// neither; else a dict: "loss_scaling" (bool, absent: true) with
// LossScalingOptions' fields, each optional, and "max_grad_norm" (a float,
// or None: no clipping)).
void ConfigureLossScaling(Optimizer* opt, const py::object& scaling) {
  if (scaling.is_none()) return;
  const py::dict d = scaling.cast<py::dict>();
  if (d.contains("max_grad_norm") && !d["max_grad_norm"].is_none()) {
    opt->EnableGradientClipping(d["max_grad_norm"].cast<double>());
  }
  if (d.contains("loss_scaling") && !d["loss_scaling"].cast<bool>()) return;
  LossScalingOptions o;
  if (d.contains("initial_scale")) o.initial_scale = d["initial_scale"].cast<double>();
  if (d.contains("growth_factor")) o.growth_factor = d["growth_factor"].cast<double>();
  if (d.contains("backoff_factor")) o.backoff_factor = d["backoff_factor"].cast<double>();
  if (d.contains("growth_interval")) o.growth_interval = d["growth_interval"].cast<int64_t>();
  opt->EnableDynamicLossScaling(o);
}

// What minimize made: the learning-rate variable, each parameter's state
// and dynamic loss scaling's variables (when enabled).
py::dict Minimized(const Optimizer& opt, const Program& main) {
  py::dict d;
  d["learning_rate"] = opt.learning_rate_var();
  if (!opt.global_norm_var().empty()) d["global_norm"] = opt.global_norm_var();
  const LossScalingVars& scaling = opt.loss_scaling_vars();
  if (!scaling.scale.empty()) {
    py::dict vars;
    vars["scale"] = scaling.scale;
    vars["good_steps"] = scaling.good_steps;
    vars["step_skipped"] = scaling.step_skipped;
    d["loss_scaling"] = vars;
  }
  py::dict state;
  for (const VarDesc& v : main.block().vars()) {
    if (v.is_parameter && !opt.state_vars(v.name).empty())
      state[py::str(v.name)] = opt.state_vars(v.name);
  }
  d["state"] = state;
  return d;
}

void DefOptimizers(py::module_& m) {
  m.def(
      "minimize_sgd",
      [](BuildTarget& t, Str loss, double lr, const py::object& scaling) {
        BuildCall call(t.main, t.startup, t.device, t.policy);
        SGD opt(lr);
        ConfigureLossScaling(&opt, scaling);
        ThrowIfError(opt.Minimize(call.b(), {loss}));
        return Minimized(opt, call.b()->main_program());
      },
      py::arg("target"), py::arg("loss"), py::arg("learning_rate"),
      py::arg("loss_scaling") = py::none());
  m.def(
      "minimize_momentum",
      [](BuildTarget& t, Str loss, double lr, double mu, bool nesterov, const py::object& scaling) {
        BuildCall call(t.main, t.startup, t.device, t.policy);
        Momentum opt(lr, mu, nesterov);
        ConfigureLossScaling(&opt, scaling);
        ThrowIfError(opt.Minimize(call.b(), {loss}));
        return Minimized(opt, call.b()->main_program());
      },
      py::arg("target"), py::arg("loss"), py::arg("learning_rate"), py::arg("momentum"),
      py::arg("use_nesterov"), py::arg("loss_scaling") = py::none());
  m.def(
      "minimize_adam",
      [](BuildTarget& t, Str loss, double lr, double beta1, double beta2, double epsilon,
         double weight_decay, bool decoupled, const py::object& scaling) {
        BuildCall call(t.main, t.startup, t.device, t.policy);
        AdamOptions options;
        options.beta1 = beta1;
        options.beta2 = beta2;
        options.epsilon = epsilon;
        options.weight_decay = weight_decay;
        options.decoupled_weight_decay = decoupled;
        Adam opt(lr, options);
        ConfigureLossScaling(&opt, scaling);
        ThrowIfError(opt.Minimize(call.b(), {loss}));
        return Minimized(opt, call.b()->main_program());
      },
      py::arg("target"), py::arg("loss"), py::arg("learning_rate"), py::arg("beta1"),
      py::arg("beta2"), py::arg("epsilon"), py::arg("weight_decay"),
      py::arg("decoupled_weight_decay"), py::arg("loss_scaling") = py::none());
}

void DefInitializer(py::module_& m) {
  py::class_<Initializer>(m, "Initializer", "How the startup program fills a parameter.")
      .def_static("constant", &Initializer::Constant, py::arg("value"))
      .def_static("uniform", &Initializer::Uniform, py::arg("low"), py::arg("high"),
                  py::arg("seed") = 0)
      .def_static("normal", &Initializer::Normal, py::arg("mean"), py::arg("std"),
                  py::arg("seed") = 0)
      .def_static("xavier_uniform", &Initializer::XavierUniform, py::arg("seed") = 0)
      .def_static("xavier_normal", &Initializer::XavierNormal, py::arg("seed") = 0)
      .def("__repr__", [](const Initializer& i) {
        switch (i.kind) {
          case Initializer::Kind::kConstant:
            return absl::StrCat("Constant(", i.value, ")");
          case Initializer::Kind::kUniform:
            return absl::StrCat("Uniform(", i.low, ", ", i.high, ", seed=", i.seed, ")");
          case Initializer::Kind::kNormal:
            return absl::StrCat("Normal(", i.mean, ", ", i.std, ", seed=", i.seed, ")");
          case Initializer::Kind::kXavierUniform:
            return absl::StrCat("XavierUniform(seed=", i.seed, ")");
          case Initializer::Kind::kXavierNormal:
            return absl::StrCat("XavierNormal(seed=", i.seed, ")");
        }
        return std::string("Initializer");
      });
}

}  // namespace

void RegisterLayers(py::module_& m) {
  DefInitializer(m);
  py::class_<BuildTarget>(m, "BuildTarget", "Internal: where a layer call builds.")
      .def(py::init([](ProgramHandle& main, ProgramHandle& startup, std::string device,
                       std::string policy) {
             return BuildTarget{&main, &startup, std::move(device), std::move(policy)};
           }),
           py::arg("main"), py::arg("startup"), py::arg("device"), py::arg("policy"),
           py::keep_alive<1, 2>(), py::keep_alive<1, 3>());
  py::module_ layers = m.def_submodule("layers", "ProgramBuilder's ops (see tandem.layers)");
  DefElementwise(layers);
  DefActivations(layers);
  DefLosses(layers);
  DefArrays(layers);
  DefParameterLayers(layers);
  DefLayer(layers, "append_op", &AppendOp, "any registered op, by its schema", py::arg("type"),
           py::arg("inputs"), py::arg("attrs"), py::arg("outputs"), py::arg("output_names"),
           py::arg("output_counts"));
  DefOptimizers(layers);
  layers.def(
      "check_device",
      [](const std::string& device) {
        ProgramBuilder b;
        auto guard = b.device_guard(device);
        ThrowIfError(b.status());
      },
      "Raises for a device_guard string the builder would refuse.", py::arg("device"));
}

}  // namespace python
}  // namespace tandem
