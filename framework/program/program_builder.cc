#include "framework/program/program_builder.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "framework/op/op_schema.h"
#include "framework/place/place.h"

namespace tandem {

int64_t DefaultSeed(absl::string_view name) {
  uint64_t hash = 0xcbf29ce484222325u;  // FNV-1a 64-bit
  for (const char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3u;
  }
  return static_cast<int64_t>(hash >> 1);
}

ProgramBuilder::DeviceGuardScope::DeviceGuardScope(DeviceGuardScope&& other) noexcept
    : slot_(other.slot_), previous_(std::move(other.previous_)) {
  other.slot_ = nullptr;
}

ProgramBuilder::DeviceGuardScope::~DeviceGuardScope() {
  if (slot_ != nullptr) *slot_ = previous_;
}

ProgramBuilder::DeviceGuardScope ProgramBuilder::SetDevice(absl::string_view what,
                                                           absl::string_view device,
                                                           std::string* slot) {
  std::string previous = *slot;
  if (!device.empty()) {
    absl::StatusOr<Place> place = ParsePlace(device);
    if (!place.ok()) {
      RecordError(absl::InvalidArgumentError(absl::StrCat(what, ": ", place.status().message())));
      return DeviceGuardScope(slot, previous);
    }
  }
  *slot = std::string(device);
  return DeviceGuardScope(slot, previous);
}

ProgramBuilder::DeviceGuardScope ProgramBuilder::device_guard(absl::string_view device) {
  return SetDevice("device_guard", device, &device_);
}

ProgramBuilder::DeviceGuardScope ProgramBuilder::parameters_on(absl::string_view device) {
  return SetDevice("parameters_on", device, &parameter_device_);
}

ProgramBuilder::TransferPolicyScope::TransferPolicyScope(TransferPolicyScope&& other) noexcept
    : builder_(other.builder_), previous_(other.previous_) {
  other.builder_ = nullptr;
}

ProgramBuilder::TransferPolicyScope::~TransferPolicyScope() {
  if (builder_ != nullptr) builder_->policy_ = previous_;
}

ProgramBuilder::TransferPolicyScope ProgramBuilder::transfer_policy(TransferPolicy policy) {
  TransferPolicy previous = policy_;
  policy_ = policy;
  return TransferPolicyScope(this, previous);
}

void ProgramBuilder::RecordError(absl::Status error) {
  if (status_.ok()) status_ = std::move(error);
}

std::string ProgramBuilder::UniqueName(const std::string& prefix) {
  while (true) {
    std::string name = absl::StrCat(prefix, "_", name_counters_[prefix]++, ".tmp_0");
    if (!main_.block().HasVar(name) && !startup_.block().HasVar(name)) return name;
  }
}

Var ProgramBuilder::Data(const std::string& name, DataType dtype, const Shape& shape) {
  if (!status_.ok()) return {};
  if (main_.block().HasVar(name)) {
    RecordError(
        absl::InvalidArgumentError(absl::StrCat("Data: variable '", name, "' already exists")));
    return {};
  }
  VarDesc v{name, dtype, shape};
  v.stop_gradient = true;
  absl::Status declared = main_.block().AddVar(v);
  if (!declared.ok()) {
    RecordError(declared);
    return {};
  }
  return {name};
}

namespace {

// fan_in and fan_out of a parameter of `shape` (see Initializer).
std::pair<int64_t, int64_t> Fans(const Shape& shape) {
  if (shape.rank() == 0) return {1, 1};
  if (shape.rank() == 1) return {shape.dim(0), shape.dim(0)};
  int64_t receptive = 1;
  for (int i = 2; i < shape.rank(); ++i) receptive *= shape.dim(i);
  if (shape.rank() == 2) return {shape.dim(0), shape.dim(1)};
  return {shape.dim(1) * receptive, shape.dim(0) * receptive};
}

}  // namespace

void ProgramBuilder::AppendInitOp(const std::string& var, DataType dtype, const Shape& shape,
                                  const Initializer& init, const std::string& device) {
  OpDesc op;
  op.outputs["Out"] = {var};
  op.attrs["shape"] = shape.ToVector();
  op.attrs["dtype"] = dtype;
  op.op_device = device;
  const auto [fan_in, fan_out] = Fans(shape);
  const double fan_sum = std::max<double>(1, fan_in + fan_out);  // an empty shape: no values
  switch (init.kind) {
    case Initializer::Kind::kConstant:
      op.type = "fill_constant";
      op.attrs["value"] = init.value;
      break;
    case Initializer::Kind::kUniform:
    case Initializer::Kind::kXavierUniform: {
      const double limit = std::sqrt(6.0 / fan_sum);
      const bool xavier = init.kind == Initializer::Kind::kXavierUniform;
      op.type = "uniform_random";
      op.attrs["min"] = xavier ? -limit : init.low;
      op.attrs["max"] = xavier ? limit : init.high;
      break;
    }
    case Initializer::Kind::kNormal:
    case Initializer::Kind::kXavierNormal: {
      const bool xavier = init.kind == Initializer::Kind::kXavierNormal;
      op.type = "gaussian_random";
      op.attrs["mean"] = xavier ? 0.0 : init.mean;
      op.attrs["std"] = xavier ? std::sqrt(2.0 / fan_sum) : init.std;
      break;
    }
  }
  if (op.type != "fill_constant") {
    op.attrs["seed"] = init.seed != 0 ? init.seed : DefaultSeed(var);
  }
  startup_.block().AppendOp(std::move(op));
}

Var ProgramBuilder::CreateParameter(const std::string& name, DataType dtype, const Shape& shape,
                                    Initializer init) {
  if (!status_.ok()) return {};
  absl::StatusOr<Shape> checked = Shape::Make(shape.dims());
  if (!checked.ok()) {
    RecordError(absl::InvalidArgumentError(
        absl::StrCat("parameter '", name, "': ", checked.status().message())));
    return {};
  }
  if (main_.block().HasVar(name)) {
    RecordError(absl::InvalidArgumentError(absl::StrCat("parameter '", name, "' already exists")));
    return {};
  }
  VarDesc v{name, dtype, shape};
  v.persistable = true;
  v.is_parameter = true;
  if (!DeclarePersistable(v, "parameter")) return {};
  AppendInitOp(name, dtype, shape, init, parameter_device_.empty() ? device_ : parameter_device_);
  return {name};
}

bool ProgramBuilder::DeclarePersistable(const VarDesc& v, absl::string_view what) {
  // The startup program first: several main programs may share it (Python's
  // program_guard), so it may declare `v` already. The same declaration is
  // fine; a different one is refused before either program changes.
  absl::Status declared = startup_.block().AddVar(v);
  if (!declared.ok()) {
    RecordError(absl::Status(
        declared.code(),
        absl::StrCat(what, " '", v.name, "' in the startup program: ", declared.message())));
    return false;
  }
  declared = main_.block().AddVar(v);  // the callers checked that main lacks it
  if (!declared.ok()) {
    RecordError(declared);
    return false;
  }
  return true;
}

Var ProgramBuilder::CreatePersistableConstant(const std::string& name, DataType dtype,
                                              const Shape& shape, double value) {
  if (!status_.ok()) return {};
  if (main_.block().HasVar(name)) {
    RecordError(absl::InvalidArgumentError(
        absl::StrCat("persistable constant '", name, "' already exists")));
    return {};
  }
  VarDesc v{name, dtype, shape};
  v.persistable = true;
  v.stop_gradient = true;
  if (!DeclarePersistable(v, "persistable constant")) return {};
  AppendInitOp(name, dtype, shape, Initializer::Constant(value), device_);
  return {name};
}

std::map<std::string, std::vector<Var>> ProgramBuilder::AppendOp(
    const std::string& type, const std::map<std::string, std::vector<Var>>& inputs, AttrMap attrs,
    const std::vector<std::string>& outputs, const std::map<std::string, std::string>& output_names,
    const std::map<std::string, int>& output_counts) {
  std::map<std::string, std::vector<Var>> result;
  if (!status_.ok()) return result;
  absl::StatusOr<const OpSchema*> schema = OpRegistry::Global().Find(type);
  if (!schema.ok()) {
    RecordError(schema.status());
    return result;
  }
  OpDesc op;
  op.type = type;
  op.attrs = std::move(attrs);
  op.op_device = device_;
  op.transfer_policy = policy_;
  std::map<std::string, std::vector<TensorMeta>> metas;
  for (const auto& [arg, vars] : inputs) {
    for (const Var& v : vars) {
      const VarDesc* desc = main_.block().FindVar(v.name);
      if (desc == nullptr) {
        RecordError(absl::InvalidArgumentError(absl::StrCat(
            "op '", type, "': input '", arg, "' names unknown variable '", v.name, "'")));
        return result;
      }
      op.inputs[arg].push_back(v.name);
      metas[arg].push_back(TensorMeta{desc->dtype, desc->shape});
    }
  }
  const std::string prefix = UniqueName(type);  // "<type>_<n>.tmp_0"
  const std::string stem = prefix.substr(0, prefix.size() - 1);
  int next_index = 0;
  for (const std::string& arg : outputs) {
    auto named = output_names.find(arg);
    if (named != output_names.end()) {
      op.outputs[arg] = {named->second};
      ++next_index;
      continue;
    }
    auto count = output_counts.find(arg);
    const int n = count == output_counts.end() ? 1 : count->second;
    for (int i = 0; i < n; ++i) op.outputs[arg].push_back(absl::StrCat(stem, next_index++));
  }
  absl::Status s = (*schema)->Validate(&op);
  if (s.ok() && (*schema)->infer_shape()) {
    InferShapeContext ctx(op, metas);
    s = (*schema)->infer_shape()(&ctx);
    // Every output is checked before any is declared, so that a refused op
    // leaves the program as it was.
    std::vector<VarDesc> declared;  // in the order the outputs come
    for (const auto& [arg, names] : op.outputs) {
      auto it = ctx.outputs().find(arg);
      for (size_t i = 0; s.ok() && i < names.size(); ++i) {
        VarDesc v{names[i]};
        if (it != ctx.outputs().end() && i < it->second.size()) {
          v.dtype = it->second[i].dtype;
          v.shape = it->second[i].shape;
        }
        // An output naming an existing variable writes it in place: the
        // variable keeps its flags, and its dtype and shape must stay.
        const VarDesc* existing = main_.block().FindVar(v.name);
        for (const VarDesc& earlier : declared) {
          if (earlier.name == v.name) existing = &earlier;
        }
        if (existing != nullptr) {
          v.persistable = existing->persistable;
          v.is_parameter = existing->is_parameter;
          v.stop_gradient = existing->stop_gradient;
          v.kind = existing->kind;
          if (!(v == *existing)) {
            s = absl::InvalidArgumentError(
                absl::StrCat("op '", type, "': output '", arg, "': variable '", v.name,
                             "' is declared twice, as ", VarDeclString(*existing), " and as ",
                             VarDeclString(v), " (what the op gives)"));
          }
        }
        declared.push_back(v);
        result[arg].push_back({names[i]});
      }
    }
    for (VarDesc& v : declared) {
      if (s.ok()) s = main_.block().AddVar(std::move(v));  // new, or identical
    }
  }
  if (!s.ok()) {
    RecordError(s);
    return {};
  }
  main_.block().AppendOp(std::move(op));
  return result;
}

Var ProgramBuilder::AppendSingle(const std::string& type,
                                 const std::map<std::string, std::vector<Var>>& inputs,
                                 AttrMap attrs, const std::string& output) {
  for (const auto& [arg, vars] : inputs) {
    for (const Var& v : vars) {
      if (!v.valid()) {
        RecordError(absl::InvalidArgumentError(
            absl::StrCat("op '", type, "': input '", arg, "' is an invalid Var")));
        return {};
      }
    }
  }
  auto out = AppendOp(type, inputs, std::move(attrs), {output});
  auto it = out.find(output);
  if (it == out.end() || it->second.empty()) return {};
  return it->second[0];
}

Var ProgramBuilder::FillConstant(const std::vector<int64_t>& shape, DataType dtype, double value) {
  Var out =
      AppendSingle("fill_constant", {}, {{"shape", shape}, {"dtype", dtype}, {"value", value}});
  if (VarDesc* v = main_.block().FindVar(out.name)) v->stop_gradient = true;
  return out;
}

Var ProgramBuilder::ElementwiseAdd(Var x, Var y, int64_t axis) {
  return AppendSingle("elementwise_add", {{"X", {x}}, {"Y", {y}}}, {{"axis", axis}});
}

Var ProgramBuilder::Matmul(Var x, Var y, bool transpose_x, bool transpose_y, double alpha) {
  return AppendSingle(
      "matmul", {{"X", {x}}, {"Y", {y}}},
      {{"transpose_X", transpose_x}, {"transpose_Y", transpose_y}, {"alpha", alpha}});
}

Var ProgramBuilder::Scale(Var x, double scale, double bias, bool bias_after_scale) {
  return AppendSingle("scale", {{"X", {x}}},
                      {{"scale", scale}, {"bias", bias}, {"bias_after_scale", bias_after_scale}});
}

Var ProgramBuilder::Cast(Var x, DataType out_dtype) {
  return AppendSingle("cast", {{"X", {x}}}, {{"out_dtype", out_dtype}});
}

Var ProgramBuilder::LookupTable(Var ids, Var table, bool is_sparse, int64_t padding_idx) {
  return AppendSingle("lookup_table", {{"Ids", {ids}}, {"W", {table}}},
                      {{"is_sparse", is_sparse}, {"padding_idx", padding_idx}});
}

Var ProgramBuilder::Embedding(Var ids, const std::vector<int64_t>& size, bool is_sparse,
                              int64_t padding_idx, Initializer init,
                              const std::string& param_name) {
  if (!status_.ok()) return {};
  if (size.size() != 2) {
    RecordError(absl::InvalidArgumentError(
        absl::StrCat("Embedding: size must be {rows, dim}, got ", size.size(), " values")));
    return {};
  }
  const std::string name = param_name.empty() ? UniqueName("embedding") + "_w" : param_name;
  Var table = CreateParameter(name, DataType::kFloat32, Shape({size[0], size[1]}), init);
  return LookupTable(ids, table, is_sparse, padding_idx);
}

Var ProgramBuilder::L2Normalize(Var x, int64_t axis, double epsilon) {
  return AppendSingle("l2_normalize", {{"X", {x}}}, {{"axis", axis}, {"epsilon", epsilon}});
}

Var ProgramBuilder::SquareErrorCost(Var input, Var label) {
  return AppendSingle("square_error_cost", {{"X", {input}}, {"Y", {label}}}, {});
}

Var ProgramBuilder::Mean(Var x) { return AppendSingle("mean", {{"X", {x}}}, {}); }

Var ProgramBuilder::ElementwiseSub(Var x, Var y, int64_t axis) {
  return AppendSingle("elementwise_sub", {{"X", {x}}, {"Y", {y}}}, {{"axis", axis}});
}

Var ProgramBuilder::ElementwiseMul(Var x, Var y, int64_t axis) {
  return AppendSingle("elementwise_mul", {{"X", {x}}, {"Y", {y}}}, {{"axis", axis}});
}

Var ProgramBuilder::ElementwiseDiv(Var x, Var y, int64_t axis) {
  return AppendSingle("elementwise_div", {{"X", {x}}, {"Y", {y}}}, {{"axis", axis}});
}

Var ProgramBuilder::Relu(Var x) { return AppendSingle("relu", {{"X", {x}}}, {}); }

Var ProgramBuilder::Sigmoid(Var x) { return AppendSingle("sigmoid", {{"X", {x}}}, {}); }

Var ProgramBuilder::Tanh(Var x) { return AppendSingle("tanh", {{"X", {x}}}, {}); }

Var ProgramBuilder::Gelu(Var x, bool approximate) {
  return AppendSingle("gelu", {{"X", {x}}}, {{"approximate", approximate}});
}

Var ProgramBuilder::Softmax(Var x, int64_t axis) {
  return AppendSingle("softmax", {{"X", {x}}}, {{"axis", axis}});
}

Var ProgramBuilder::ReduceSum(Var x, const std::vector<int64_t>& dims, bool keep_dim) {
  return AppendSingle("reduce_sum", {{"X", {x}}}, {{"dim", dims}, {"keep_dim", keep_dim}});
}

Var ProgramBuilder::ReduceMean(Var x, const std::vector<int64_t>& dims, bool keep_dim) {
  return AppendSingle("reduce_mean", {{"X", {x}}}, {{"dim", dims}, {"keep_dim", keep_dim}});
}

Var ProgramBuilder::Mul(Var x, Var y, int64_t x_num_col_dims, int64_t y_num_col_dims) {
  return AppendSingle("mul", {{"X", {x}}, {"Y", {y}}},
                      {{"x_num_col_dims", x_num_col_dims}, {"y_num_col_dims", y_num_col_dims}});
}

Var ProgramBuilder::Fc(Var x, int64_t size, int64_t in_num_col_dims, bool with_bias,
                       const std::string& name, Initializer w_init) {
  if (!status_.ok()) return {};
  const VarDesc* desc = main_.block().FindVar(x.name);
  if (desc == nullptr) {
    RecordError(absl::InvalidArgumentError(
        absl::StrCat("Fc: input '", x.name, "' is not a variable of the program")));
    return {};
  }
  const Shape& shape = desc->shape;
  int64_t k = 1;  // the columns of x as a matrix; -1 if unknown
  std::string problem;
  if (desc->dtype != DataType::kFloat32 && desc->dtype != DataType::kFloat64) {
    problem = absl::StrCat("must be float32 or float64, got ", DataTypeName(desc->dtype));
  } else if (in_num_col_dims < 1 || in_num_col_dims >= shape.rank()) {
    problem = absl::StrCat("has rank ", shape.rank(), " but in_num_col_dims is ", in_num_col_dims,
                           " (need 1 <= in_num_col_dims < rank)");
  } else if (size < 1) {
    problem = absl::StrCat("gives size ", size, " (need >= 1)");
  } else {
    for (int d = static_cast<int>(in_num_col_dims); d < shape.rank(); ++d) {
      k = shape.dim(d) < 0 || k < 0 ? -1 : k * shape.dim(d);
    }
    if (k < 0) {
      problem =
          absl::StrCat("needs known dims from in_num_col_dims ", in_num_col_dims, " on to size W");
    }
  }
  if (!problem.empty()) {
    RecordError(absl::InvalidArgumentError(
        absl::StrCat("Fc: input '", x.name, "' ", shape.ToString(), " ", problem)));
    return {};
  }
  std::string prefix = name;
  if (prefix.empty()) {
    const std::string unique = UniqueName("fc");  // "fc_<n>.tmp_0"
    prefix = unique.substr(0, unique.find('.'));
  }
  // A copy: creating parameters adds variables, which moves the descriptions.
  const DataType dtype = desc->dtype;
  std::map<std::string, std::vector<Var>> inputs = {
      {"Input", {x}}, {"W", {CreateParameter(prefix + ".w_0", dtype, Shape({k, size}), w_init)}}};
  if (with_bias) {
    inputs["Bias"] = {
        CreateParameter(prefix + ".b_0", dtype, Shape({size}), Initializer::Constant(0))};
  }
  auto out = AppendOp("fc", inputs, {{"in_num_col_dims", in_num_col_dims}}, {"Out"},
                      {{"Out", prefix + ".tmp_0"}});
  return out.count("Out") ? out.at("Out")[0] : Var{};
}

Var ProgramBuilder::SoftmaxWithCrossEntropy(Var logits, Var label, int64_t ignore_index,
                                            Var* softmax) {
  auto out = AppendOp("softmax_with_cross_entropy", {{"Logits", {logits}}, {"Label", {label}}},
                      {{"ignore_index", ignore_index}}, {"Softmax", "Loss"});
  if (out.empty()) return {};
  main_.block().FindVar(out.at("Softmax")[0].name)->stop_gradient = true;
  if (softmax != nullptr) *softmax = out.at("Softmax")[0];
  return out.at("Loss")[0];
}

Var ProgramBuilder::Accuracy(Var scores, Var label, int64_t k, Var* correct, Var* total) {
  auto out = AppendOp("accuracy", {{"Out", {scores}}, {"Label", {label}}}, {{"k", k}},
                      {"Accuracy", "Correct", "Total"});
  if (out.empty()) return {};
  for (const auto& [arg, vars] : out) main_.block().FindVar(vars[0].name)->stop_gradient = true;
  if (correct != nullptr) *correct = out.at("Correct")[0];
  if (total != nullptr) *total = out.at("Total")[0];
  return out.at("Accuracy")[0];
}

Var ProgramBuilder::ShapeOf(Var x) {
  Var out = AppendSingle("shape", {{"Input", {x}}}, {});
  // A shape has no gradient: a trainable value's shape feeding crop_tensor
  // must not ask backward for one.
  if (VarDesc* v = main_.block().FindVar(out.name)) v->stop_gradient = true;
  return out;
}

Var ProgramBuilder::Slice(Var x, const std::vector<int64_t>& axes,
                          const std::vector<int64_t>& starts, const std::vector<int64_t>& ends) {
  return AppendSingle("slice", {{"Input", {x}}},
                      {{"axes", axes}, {"starts", starts}, {"ends", ends}});
}

Var ProgramBuilder::CropTensor(Var x, Var shape, const std::vector<int64_t>& offsets) {
  AttrMap attrs;
  if (!offsets.empty()) attrs["offsets"] = offsets;
  return AppendSingle("crop_tensor", {{"X", {x}}, {"Shape", {shape}}}, std::move(attrs));
}

namespace {

// The description of layer input `x`, or null after recording an
// InvalidArgument naming the layer.
const VarDesc* LayerInput(ProgramBuilder* b, absl::string_view layer, Var x) {
  const VarDesc* desc = b->main_program().block().FindVar(x.name);
  if (desc == nullptr) {
    b->RecordError(absl::InvalidArgumentError(
        absl::StrCat(layer, ": input '", x.name, "' is not a variable of the program")));
  }
  return desc;
}

// `name`, or a fresh "<type>_<n>" when empty: the prefix of a layer's
// parameter names.
std::string LayerPrefix(ProgramBuilder* b, const std::string& name, const std::string& type) {
  if (!name.empty()) return name;
  const std::string unique = b->UniqueName(type);  // "<type>_<n>.tmp_0"
  return unique.substr(0, unique.find('.'));
}

std::vector<Var> AppendSplit(ProgramBuilder* b, Var x, AttrMap attrs, int64_t pieces) {
  // At least one output, so that shape inference reports bad attrs.
  auto out = b->AppendOp("split", {{"X", {x}}}, std::move(attrs), {"Out"}, {},
                         {{"Out", static_cast<int>(std::max<int64_t>(pieces, 1))}});
  return out.count("Out") ? out.at("Out") : std::vector<Var>{};
}

}  // namespace

Var ProgramBuilder::Reshape(Var x, const std::vector<int64_t>& shape) {
  return AppendSingle("reshape", {{"X", {x}}}, {{"shape", shape}});
}

Var ProgramBuilder::Transpose(Var x, const std::vector<int64_t>& axis) {
  return AppendSingle("transpose", {{"X", {x}}}, {{"axis", axis}});
}

Var ProgramBuilder::Concat(const std::vector<Var>& xs, int64_t axis) {
  return AppendSingle("concat", {{"X", xs}}, {{"axis", axis}});
}

std::vector<Var> ProgramBuilder::Split(Var x, int64_t num, int64_t axis) {
  return AppendSplit(this, x, {{"num", num}, {"axis", axis}}, num);
}

std::vector<Var> ProgramBuilder::SplitSections(Var x, const std::vector<int64_t>& sections,
                                               int64_t axis) {
  return AppendSplit(this, x, {{"sections", sections}, {"axis", axis}},
                     static_cast<int64_t>(sections.size()));
}

Var ProgramBuilder::Dropout(Var x, double dropout_prob, bool is_test, int64_t seed) {
  auto out = AppendOp("dropout", {{"X", {x}}},
                      {{"dropout_prob", dropout_prob}, {"is_test", is_test}, {"seed", seed}},
                      {"Out", "Mask"});
  if (out.empty()) return {};
  const Var result = out.at("Out")[0];
  if (seed == 0) {
    main_.block().mutable_ops().back().attrs["seed"] = DefaultSeed(result.name);
  }
  main_.block().FindVar(out.at("Mask")[0].name)->stop_gradient = true;
  return result;
}

Var ProgramBuilder::Conv2D(Var input, int64_t num_filters, int64_t filter_size, int64_t stride,
                           int64_t padding, int64_t groups, bool with_bias, const std::string& name,
                           Initializer w_init) {
  if (!status_.ok()) return {};
  const VarDesc* desc = LayerInput(this, "Conv2D", input);
  if (desc == nullptr) return {};
  // Copies: creating parameters adds variables, which moves the descriptions.
  const Shape shape = desc->shape;
  const DataType dtype = desc->dtype;
  if (shape.rank() != 4 || shape.dim(1) < 0 || groups < 1 || shape.dim(1) % groups != 0 ||
      num_filters < 1 || filter_size < 1) {
    RecordError(absl::InvalidArgumentError(
        absl::StrCat("Conv2D: input '", input.name, "' ", shape.ToString(), " with groups ", groups,
                     ", num_filters ", num_filters, " and filter_size ", filter_size,
                     ": need NCHW input with known channels divisible by groups, num_filters and "
                     "filter_size >= 1")));
    return {};
  }
  const std::string prefix = LayerPrefix(this, name, "conv2d");
  const Var filter = CreateParameter(
      prefix + ".w_0", dtype, Shape({num_filters, shape.dim(1) / groups, filter_size, filter_size}),
      w_init);
  Var out = AppendSingle("conv2d", {{"Input", {input}}, {"Filter", {filter}}},
                         {{"strides", std::vector<int64_t>{stride, stride}},
                          {"paddings", std::vector<int64_t>{padding, padding}},
                          {"groups", groups}},
                         "Output");
  if (!with_bias) return out;
  const Var bias =
      CreateParameter(prefix + ".b_0", dtype, Shape({num_filters}), Initializer::Constant(0));
  return ElementwiseAdd(out, bias, /*axis=*/1);
}

Var ProgramBuilder::Pool2D(Var x, int64_t pool_size, const std::string& pool_type,
                           int64_t pool_stride, int64_t pool_padding, bool global_pooling,
                           bool exclusive) {
  return AppendSingle("pool2d", {{"X", {x}}},
                      {{"pooling_type", pool_type},
                       {"ksize", std::vector<int64_t>{pool_size, pool_size}},
                       {"strides", std::vector<int64_t>{pool_stride, pool_stride}},
                       {"paddings", std::vector<int64_t>{pool_padding, pool_padding}},
                       {"global_pooling", global_pooling},
                       {"exclusive", exclusive}});
}

Var ProgramBuilder::LayerNorm(Var x, int64_t begin_norm_axis, double epsilon, bool scale,
                              bool shift, const std::string& name) {
  if (!status_.ok()) return {};
  const VarDesc* desc = LayerInput(this, "LayerNorm", x);
  if (desc == nullptr) return {};
  // Copies: creating parameters adds variables, which moves the descriptions.
  const Shape shape = desc->shape;
  const DataType dtype = desc->dtype;
  const int64_t axis = begin_norm_axis < 0 ? begin_norm_axis + shape.rank() : begin_norm_axis;
  int64_t d = axis >= 0 && axis < shape.rank() ? 1 : -1;
  for (int i = static_cast<int>(std::max<int64_t>(axis, 0)); d > 0 && i < shape.rank(); ++i) {
    d = shape.dim(i) < 0 ? -1 : d * shape.dim(i);
  }
  if (d <= 0) {
    RecordError(absl::InvalidArgumentError(absl::StrCat(
        "LayerNorm: input '", x.name, "' ", shape.ToString(), " with begin_norm_axis ",
        begin_norm_axis, ": need an axis in [-rank, rank) and known, non-empty dims from it on")));
    return {};
  }
  const std::string prefix = LayerPrefix(this, name, "layer_norm");
  std::map<std::string, std::vector<Var>> inputs = {{"X", {x}}};
  if (scale) {
    inputs["Scale"] = {
        CreateParameter(prefix + ".scale_0", dtype, Shape({d}), Initializer::Constant(1))};
  }
  if (shift) {
    inputs["Bias"] = {
        CreateParameter(prefix + ".b_0", dtype, Shape({d}), Initializer::Constant(0))};
  }
  auto out =
      AppendOp("layer_norm", inputs, {{"begin_norm_axis", begin_norm_axis}, {"epsilon", epsilon}},
               {"Y", "Mean", "Variance"});
  if (out.empty()) return {};
  for (const char* stat : {"Mean", "Variance"}) {
    main_.block().FindVar(out.at(stat)[0].name)->stop_gradient = true;
  }
  return out.at("Y")[0];
}

Var ProgramBuilder::SelfAttention(Var qkv, int64_t num_heads, bool causal, double scale) {
  if (!status_.ok()) return {};
  if (!qkv.valid()) {
    RecordError(absl::InvalidArgumentError("op 'self_attention': input 'QKV' is an invalid Var"));
    return {};
  }
  auto out =
      AppendOp("self_attention", {{"QKV", {qkv}}},
               {{"num_heads", num_heads}, {"causal", causal}, {"scale", scale}}, {"Out", "Lse"});
  if (out.empty()) return {};
  main_.block().FindVar(out.at("Lse")[0].name)->stop_gradient = true;
  return out.at("Out")[0];
}

}  // namespace tandem
