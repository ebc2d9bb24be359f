#include "framework/op/op_schema.h"

#include "absl/strings/str_join.h"
#include "glog/logging.h"

namespace tandem {

bool InferShapeContext::HasInput(absl::string_view arg) const { return InputCount(arg) > 0; }

int InferShapeContext::InputCount(absl::string_view arg) const {
  auto it = inputs_.find(std::string(arg));
  return it == inputs_.end() ? 0 : static_cast<int>(it->second.size());
}

absl::StatusOr<TensorMeta> InferShapeContext::Input(absl::string_view arg, int index) const {
  auto it = inputs_.find(std::string(arg));
  if (it == inputs_.end() || index >= static_cast<int>(it->second.size())) {
    return Error(absl::StrCat("input '", arg, "' is missing"));
  }
  return it->second[index];
}

const Tensor* InferShapeContext::InputValues(absl::string_view arg, int index) const {
  auto it = host_values_.find(std::string(arg));
  if (it == host_values_.end() || index >= static_cast<int>(it->second.size())) {
    return nullptr;
  }
  return it->second[index];
}

void InferShapeContext::SetOutput(absl::string_view arg, TensorMeta meta, int index) {
  std::vector<TensorMeta>& v = outputs_[std::string(arg)];
  if (static_cast<int>(v.size()) <= index) v.resize(index + 1);
  v[index] = std::move(meta);
}

OpSchema& OpSchema::Doc(std::string doc) {
  doc_ = std::move(doc);
  return *this;
}
OpSchema& OpSchema::Constant() {
  constant_ = true;
  return *this;
}
OpSchema& OpSchema::Input(std::string name, std::string doc) {
  inputs_.push_back({std::move(name), false, false, std::move(doc)});
  return *this;
}
OpSchema& OpSchema::OptionalInput(std::string name, std::string doc) {
  inputs_.push_back({std::move(name), true, false, std::move(doc)});
  return *this;
}
OpSchema& OpSchema::DuplicableInput(std::string name, std::string doc) {
  inputs_.push_back({std::move(name), false, true, std::move(doc)});
  return *this;
}
OpSchema& OpSchema::Output(std::string name, std::string doc) {
  outputs_.push_back({std::move(name), false, false, std::move(doc)});
  return *this;
}
OpSchema& OpSchema::OptionalOutput(std::string name, std::string doc) {
  outputs_.push_back({std::move(name), true, false, std::move(doc)});
  return *this;
}
OpSchema& OpSchema::DuplicableOutput(std::string name, std::string doc) {
  outputs_.push_back({std::move(name), false, true, std::move(doc)});
  return *this;
}
OpSchema& OpSchema::RequiredAttr(std::string name, AttrType type, std::string doc) {
  attrs_.push_back({std::move(name), type, std::nullopt, std::move(doc)});
  return *this;
}
OpSchema& OpSchema::SetInferShape(InferShapeFn fn) {
  infer_shape_ = std::move(fn);
  return *this;
}
OpSchema& OpSchema::SetGradMaker(GradMakerFn fn) {
  grad_maker_ = std::move(fn);
  return *this;
}

bool OpSchema::HasArg(absl::string_view name) const {
  for (const ArgDef& a : inputs_)
    if (a.name == name) return true;
  for (const ArgDef& a : outputs_)
    if (a.name == name) return true;
  return false;
}

namespace {

absl::Status CheckArgs(const std::string& op_type, const char* kind,
                       const std::vector<OpSchema::ArgDef>& defs,
                       const std::map<std::string, std::vector<std::string>>& given) {
  for (const auto& [name, vars] : given) {
    bool known = false;
    for (const OpSchema::ArgDef& d : defs) known |= d.name == name;
    if (!known) {
      std::vector<std::string> names;
      for (const OpSchema::ArgDef& d : defs) names.push_back(d.name);
      return absl::InvalidArgumentError(
          absl::StrCat("op '", op_type, "': unknown ", kind, " '", name,
                       "'; expected one of: ", absl::StrJoin(names, ", ")));
    }
  }
  for (const OpSchema::ArgDef& d : defs) {
    auto it = given.find(d.name);
    const size_t n = it == given.end() ? 0 : it->second.size();
    if (n == 0 && !d.optional) {
      return absl::InvalidArgumentError(
          absl::StrCat("op '", op_type, "': missing ", kind, " '", d.name, "'"));
    }
    if (n > 1 && !d.duplicable) {
      return absl::InvalidArgumentError(absl::StrCat("op '", op_type, "': ", kind, " '", d.name,
                                                     "' takes one variable, got ", n));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status OpSchema::Validate(OpDesc* op) const {
  if (op->type != type_) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", op->type, "' validated against schema '", type_, "'"));
  }
  absl::Status s = CheckArgs(type_, "input", inputs_, op->inputs);
  if (!s.ok()) return s;
  s = CheckArgs(type_, "output", outputs_, op->outputs);
  if (!s.ok()) return s;
  for (const auto& [name, value] : op->attrs) {
    const AttrDef* def = nullptr;
    for (const AttrDef& d : attrs_)
      if (d.name == name) def = &d;
    if (def == nullptr) {
      std::vector<std::string> names;
      for (const AttrDef& d : attrs_) names.push_back(d.name);
      return absl::InvalidArgumentError(absl::StrCat(
          "op '", type_, "': unknown attribute '", name,
          "'; expected one of: ", names.empty() ? "(none)" : absl::StrJoin(names, ", ")));
    }
    if (AttrTypeOf(value) != def->type) {
      return absl::InvalidArgumentError(absl::StrCat(
          "op '", type_, "': attribute '", name, "' is ", AttrTypeName(AttrTypeOf(value)), " ",
          AttrValueToString(value), ", expected ", AttrTypeName(def->type)));
    }
  }
  for (const AttrDef& d : attrs_) {
    if (op->attrs.count(d.name)) continue;
    if (!d.default_value.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat("op '", type_,
                                                     "': missing required attribute '", d.name,
                                                     "' (", AttrTypeName(d.type), ")"));
    }
    op->attrs[d.name] = *d.default_value;
  }
  return absl::OkStatus();
}

OpRegistry& OpRegistry::Global() {
  static OpRegistry* registry = new OpRegistry;
  return *registry;
}

OpSchema& OpRegistry::Register(const std::string& type) {
  auto [it, inserted] = schemas_.emplace(type, std::make_unique<OpSchema>(type));
  CHECK(inserted) << "op '" << type << "' registered twice";
  return *it->second;
}

absl::StatusOr<const OpSchema*> OpRegistry::Find(absl::string_view type) const {
  auto it = schemas_.find(type);
  if (it == schemas_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "unknown op '", type, "'; registered ops: ", absl::StrJoin(RegisteredOps(), ", ")));
  }
  return it->second.get();
}

std::vector<std::string> OpRegistry::RegisteredOps() const {
  std::vector<std::string> names;
  for (const auto& [name, schema] : schemas_) names.push_back(name);
  return names;
}

}  // namespace tandem
