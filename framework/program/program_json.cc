// Program <-> JSON. Format (version 1):
// {"format": "tandem.program", "version": 1,
//  "vars": [{"name", "dtype", "shape", "persistable", "parameter",
//            "stop_gradient", "kind"}],
//  "ops":  [{"type", "role", "device", "inputs": {arg: [vars]},
//            "outputs": {...}, "attrs": {name: {"type": t, "value": v}},
//            "origin": {"kind", "op", "var"} (only for generated ops)}]}
#include "absl/strings/str_cat.h"
#include "framework/base/json.h"
#include "framework/base/status_macros.h"
#include "framework/program/program.h"

namespace tandem {
namespace {

constexpr char kFormat[] = "tandem.program";
constexpr int64_t kVersion = 1;

Json ArgsToJson(const std::map<std::string, std::vector<std::string>>& args) {
  Json obj = Json::Object();
  for (const auto& [arg, vars] : args) {
    Json list = Json::Array();
    for (const std::string& v : vars) list.Push(v);
    obj.Set(arg, std::move(list));
  }
  return obj;
}

Json AttrToJson(const AttrValue& value) {
  struct ToJson {
    Json operator()(bool v) const { return Json(v); }
    Json operator()(int64_t v) const { return Json(v); }
    Json operator()(double v) const { return Json(v); }
    Json operator()(const std::string& v) const { return Json(v); }
    Json operator()(DataType v) const { return Json(std::string(DataTypeName(v))); }
    Json operator()(const std::vector<int64_t>& v) const {
      Json a = Json::Array();
      for (int64_t x : v) a.Push(x);
      return a;
    }
    Json operator()(const std::vector<double>& v) const {
      Json a = Json::Array();
      for (double x : v) a.Push(x);
      return a;
    }
    Json operator()(const std::vector<std::string>& v) const {
      Json a = Json::Array();
      for (const std::string& x : v) a.Push(x);
      return a;
    }
  };
  Json out = Json::Object();
  out.Set("type", std::string(AttrTypeName(AttrTypeOf(value))));
  out.Set("value", std::visit(ToJson{}, value));
  return out;
}

absl::Status Err(absl::string_view where, const absl::Status& s) {
  return absl::InvalidArgumentError(absl::StrCat("program json: ", where, ": ", s.message()));
}

absl::StatusOr<AttrValue> AttrFromJson(const Json& j, absl::string_view where) {
  absl::StatusOr<std::string> type = j.GetString("type");
  if (!type.ok()) return Err(where, type.status());
  absl::StatusOr<const Json*> value = j.Get("value");
  if (!value.ok()) return Err(where, value.status());
  const Json& v = **value;
  auto fail = [&](const absl::Status& s) { return Err(where, s); };
  if (*type == "bool") {
    absl::StatusOr<bool> b = v.AsBool();
    if (!b.ok()) return fail(b.status());
    return AttrValue(*b);
  }
  if (*type == "int") {
    absl::StatusOr<int64_t> i = v.AsInt();
    if (!i.ok()) return fail(i.status());
    return AttrValue(*i);
  }
  if (*type == "float") {
    absl::StatusOr<double> d = v.AsDouble();
    if (!d.ok()) return fail(d.status());
    return AttrValue(*d);
  }
  if (*type == "string") {
    absl::StatusOr<std::string> s = v.AsString();
    if (!s.ok()) return fail(s.status());
    return AttrValue(*s);
  }
  if (*type == "dtype") {
    absl::StatusOr<std::string> s = v.AsString();
    if (!s.ok()) return fail(s.status());
    absl::StatusOr<DataType> t = ParseDataType(*s);
    if (!t.ok()) return fail(t.status());
    return AttrValue(*t);
  }
  absl::StatusOr<const Json::Elements*> arr = v.AsArray();
  if (!arr.ok()) return fail(arr.status());
  if (*type == "ints") {
    std::vector<int64_t> out;
    for (const Json& e : **arr) {
      absl::StatusOr<int64_t> i = e.AsInt();
      if (!i.ok()) return fail(i.status());
      out.push_back(*i);
    }
    return AttrValue(out);
  }
  if (*type == "floats") {
    std::vector<double> out;
    for (const Json& e : **arr) {
      absl::StatusOr<double> d = e.AsDouble();
      if (!d.ok()) return fail(d.status());
      out.push_back(*d);
    }
    return AttrValue(out);
  }
  if (*type == "strings") {
    std::vector<std::string> out;
    for (const Json& e : **arr) {
      absl::StatusOr<std::string> s = e.AsString();
      if (!s.ok()) return fail(s.status());
      out.push_back(*s);
    }
    return AttrValue(out);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("program json: ", where, ": unknown attribute type '", *type, "'"));
}

absl::StatusOr<std::map<std::string, std::vector<std::string>>> ArgsFromJson(
    const Json& op, absl::string_view key, absl::string_view where) {
  std::map<std::string, std::vector<std::string>> args;
  const Json* obj = op.Find(key);
  if (obj == nullptr) return args;
  absl::StatusOr<const Json::Members*> members = obj->AsObject();
  if (!members.ok()) return Err(absl::StrCat(where, ".", key), members.status());
  for (const auto& [arg, list] : **members) {
    absl::StatusOr<const Json::Elements*> vars = list.AsArray();
    if (!vars.ok()) return Err(absl::StrCat(where, ".", key, ".", arg), vars.status());
    for (const Json& v : **vars) {
      absl::StatusOr<std::string> name = v.AsString();
      if (!name.ok()) return Err(absl::StrCat(where, ".", key, ".", arg), name.status());
      args[arg].push_back(*name);
    }
  }
  return args;
}

absl::StatusOr<OpRole> ParseRole(absl::string_view s) {
  for (OpRole r :
       {OpRole::kForward, OpRole::kBackward, OpRole::kLoss, OpRole::kOptimize, OpRole::kCopy}) {
    if (OpRoleName(r) == s) return r;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown op role '", s, "'"));
}

Json OriginToJson(const OpOrigin& origin) {
  Json j = Json::Object();
  j.Set("kind", std::string(OpOriginKindName(origin.kind)));
  if (origin.op >= 0) j.Set("op", static_cast<int64_t>(origin.op));
  if (!origin.var.empty()) j.Set("var", origin.var);
  return j;
}

// Op `index`'s origin; an op index must name an earlier op.
absl::StatusOr<OpOrigin> OriginFromJson(const Json& j, size_t index, const std::string& where) {
  OpOrigin origin;
  absl::StatusOr<std::string> kind = j.GetString("kind");
  if (!kind.ok()) return Err(where, kind.status());
  absl::StatusOr<OpOrigin::Kind> k = ParseOpOriginKind(*kind);
  if (!k.ok()) return Err(where, k.status());
  origin.kind = *k;
  if (const Json* op = j.Find("op")) {
    absl::StatusOr<int64_t> n = op->AsInt();
    if (!n.ok() || *n < 0 || *n >= static_cast<int64_t>(index)) {
      return absl::InvalidArgumentError(absl::StrCat("program json: ", where,
                                                     ".op must be the index of an earlier op (0..",
                                                     static_cast<int64_t>(index) - 1, ")"));
    }
    origin.op = static_cast<int>(*n);
  }
  origin.var = j.GetString("var").value_or("");
  return origin;
}

}  // namespace

std::string Program::ToJson() const {
  Json root = Json::Object();
  root.Set("format", kFormat);
  root.Set("version", kVersion);
  Json vars = Json::Array();
  for (const VarDesc& v : block_.vars()) {
    Json shape = Json::Array();
    for (int64_t d : v.shape.dims()) shape.Push(d);
    Json j = Json::Object();
    j.Set("name", v.name);
    j.Set("dtype", std::string(DataTypeName(v.dtype)));
    j.Set("shape", std::move(shape));
    j.Set("persistable", v.persistable);
    j.Set("parameter", v.is_parameter);
    j.Set("stop_gradient", v.stop_gradient);
    j.Set("kind", v.kind == VarKind::kSelectedRows ? "selected_rows" : "dense");
    vars.Push(std::move(j));
  }
  root.Set("vars", std::move(vars));
  Json ops = Json::Array();
  for (const OpDesc& op : block_.ops()) {
    Json j = Json::Object();
    j.Set("type", op.type);
    j.Set("role", std::string(OpRoleName(op.role)));
    j.Set("device", op.op_device);
    if (op.transfer_policy != TransferPolicy::kInherit) {
      j.Set("transfer_policy", std::string(TransferPolicyName(op.transfer_policy)));
    }
    j.Set("inputs", ArgsToJson(op.inputs));
    j.Set("outputs", ArgsToJson(op.outputs));
    Json attrs = Json::Object();
    for (const auto& [name, value] : op.attrs) attrs.Set(name, AttrToJson(value));
    j.Set("attrs", std::move(attrs));
    if (op.origin.kind != OpOrigin::Kind::kUser) j.Set("origin", OriginToJson(op.origin));
    ops.Push(std::move(j));
  }
  root.Set("ops", std::move(ops));
  return root.Dump(1);
}

namespace {

// vars[i] of a program's json (`where` names it in errors).
absl::StatusOr<VarDesc> VarFromJson(const Json& j, const std::string& where) {
  VarDesc v;
  absl::StatusOr<std::string> name = j.GetString("name");
  if (!name.ok()) return Err(where, name.status());
  v.name = *name;
  absl::StatusOr<std::string> dtype = j.GetString("dtype");
  if (!dtype.ok()) return Err(where, dtype.status());
  absl::StatusOr<DataType> t = ParseDataType(*dtype);
  if (!t.ok()) return Err(where, t.status());
  v.dtype = *t;
  absl::StatusOr<const Json::Elements*> shape = j.GetArray("shape");
  if (!shape.ok()) return Err(where, shape.status());
  std::vector<int64_t> dims;
  for (const Json& d : **shape) {
    absl::StatusOr<int64_t> dim = d.AsInt();
    if (!dim.ok() || *dim < -1) {
      return absl::InvalidArgumentError(
          absl::StrCat("program json: ", where, ".shape: dims must be integers >= -1"));
    }
    dims.push_back(*dim);
  }
  v.shape = Shape(dims);
  v.persistable = j.GetBool("persistable").value_or(false);
  v.is_parameter = j.GetBool("parameter").value_or(false);
  v.stop_gradient = j.GetBool("stop_gradient").value_or(false);
  v.kind = j.GetString("kind").value_or("dense") == "selected_rows" ? VarKind::kSelectedRows
                                                                    : VarKind::kDense;
  return v;
}

// ops[i] of a program's json (`where` names it in errors).
absl::StatusOr<OpDesc> OpFromJson(const Json& j, size_t i, const std::string& where) {
  OpDesc op;
  absl::StatusOr<std::string> type = j.GetString("type");
  if (!type.ok()) return Err(where, type.status());
  op.type = *type;
  absl::StatusOr<OpRole> role = ParseRole(j.GetString("role").value_or("forward"));
  if (!role.ok()) return Err(where, role.status());
  op.role = *role;
  op.op_device = j.GetString("device").value_or("");
  if (const Json* policy = j.Find("transfer_policy")) {
    absl::StatusOr<std::string> name = policy->AsString();
    if (!name.ok()) return Err(where, name.status());
    absl::StatusOr<TransferPolicy> p = ParseTransferPolicy(*name);
    if (!p.ok()) return Err(where, p.status());
    op.transfer_policy = *p;
  }
  ASSIGN_OR_RETURN(op.inputs, ArgsFromJson(j, "inputs", where));
  ASSIGN_OR_RETURN(op.outputs, ArgsFromJson(j, "outputs", where));
  if (const Json* attrs = j.Find("attrs")) {
    absl::StatusOr<const Json::Members*> members = attrs->AsObject();
    if (!members.ok()) return Err(where + ".attrs", members.status());
    for (const auto& [name, value] : **members) {
      ASSIGN_OR_RETURN(op.attrs[name], AttrFromJson(value, absl::StrCat(where, ".attrs.", name)));
    }
  }
  if (const Json* origin = j.Find("origin")) {
    ASSIGN_OR_RETURN(op.origin, OriginFromJson(*origin, i, where + ".origin"));
  }
  return op;
}

}  // namespace

absl::StatusOr<Program> Program::FromJson(absl::string_view text) {
  ASSIGN_OR_RETURN(Json root, ParseJson(text));
  absl::StatusOr<std::string> format = root.GetString("format");
  if (!format.ok() || *format != kFormat) {
    return absl::InvalidArgumentError(
        absl::StrCat("program json: not a Tandem program (\"format\" must be \"", kFormat, "\")"));
  }
  absl::StatusOr<int64_t> version = root.GetInt("version");
  if (!version.ok() || *version != kVersion) {
    return absl::InvalidArgumentError(absl::StrCat(
        "program json: unsupported version ", version.ok() ? absl::StrCat(*version) : "(missing)",
        "; this build reads version ", kVersion));
  }
  Program prog;
  absl::StatusOr<const Json::Elements*> vars = root.GetArray("vars");
  if (!vars.ok()) return Err("vars", vars.status());
  for (size_t i = 0; i < (*vars)->size(); ++i) {
    const std::string where = absl::StrCat("vars[", i, "]");
    ASSIGN_OR_RETURN(VarDesc v, VarFromJson((**vars)[i], where));
    absl::Status declared = prog.block().AddVar(std::move(v));
    if (!declared.ok()) return Err(where, declared);
  }
  absl::StatusOr<const Json::Elements*> ops = root.GetArray("ops");
  if (!ops.ok()) return Err("ops", ops.status());
  for (size_t i = 0; i < (*ops)->size(); ++i) {
    ASSIGN_OR_RETURN(OpDesc op, OpFromJson((**ops)[i], i, absl::StrCat("ops[", i, "]")));
    prog.block().AppendOp(std::move(op));
  }
  return prog;
}

}  // namespace tandem
