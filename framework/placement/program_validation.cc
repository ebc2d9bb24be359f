#include "framework/placement/program_validation.h"

#include <unistd.h>

#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "framework/types/data_type.h"

namespace tandem {
namespace {

std::string Where(const OpDesc& op, size_t index) {
  return absl::StrCat("op '", op.type, "' (#", index, ")");
}

// The op against its schema; on success `*filled` is a copy of the op with
// the attribute defaults filled in (what shape inference reads).
absl::Status CheckSchema(const OpDesc& op, size_t index, OpDesc* filled) {
  absl::StatusOr<const OpSchema*> schema = OpRegistry::Global().Find(op.type);
  if (!schema.ok()) {
    return absl::Status(schema.status().code(),
                        absl::StrCat(Where(op, index), ": ", schema.status().message()));
  }
  *filled = op;
  absl::Status s = (*schema)->Validate(filled);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("#", index, ": ", s.message()));
  return absl::OkStatus();
}

// What validation knows of each variable: its declared dtype and shape, with
// the -1 dims refined by the shape inference of the ops that write it.
using MetaMap = std::map<std::string, TensorMeta>;

std::string MetaString(const TensorMeta& m) {
  return absl::StrCat(DataTypeName(m.dtype), m.shape.ToString());
}

// `known` with its unknown (negative) dims taken from `inferred`; nullopt if
// the ranks differ or a dim known on both sides differs.
std::optional<Shape> Refine(const Shape& known, const Shape& inferred) {
  if (known.rank() != inferred.rank()) return std::nullopt;
  Shape refined = known;
  for (int k = 0; k < known.rank(); ++k) {
    if (known.dim(k) < 0) {
      refined.set_dim(k, inferred.dim(k) < 0 ? -1 : inferred.dim(k));
    } else if (inferred.dim(k) >= 0 && inferred.dim(k) != known.dim(k)) {
      return std::nullopt;
    }
  }
  return refined;
}

// Runs the op's shape inference on what is known of its inputs and checks
// each output it describes against what is known of that variable (its
// declaration, refined by earlier writers), then refines it.
absl::Status CheckInferredOutputs(const OpDesc& op, size_t index, const Block& block,
                                  MetaMap* metas) {
  const OpSchema* schema = *OpRegistry::Global().Find(op.type);  // CheckSchema found it
  if (!schema->infer_shape()) return absl::OkStatus();
  std::map<std::string, std::vector<TensorMeta>> inputs;
  for (const auto& [arg, vars] : op.inputs) {
    for (const std::string& v : vars) inputs[arg].push_back(metas->at(v));
  }
  InferShapeContext ctx(op, std::move(inputs));
  absl::Status inferred = schema->infer_shape()(&ctx);
  if (!inferred.ok()) {
    return absl::Status(inferred.code(), absl::StrCat(Where(op, index),
                                                      ": shape inference on the "
                                                      "declared shapes: ",
                                                      inferred.message()));
  }
  for (const auto& [arg, vars] : op.outputs) {
    auto it = ctx.outputs().find(arg);
    if (it == ctx.outputs().end()) continue;
    for (size_t k = 0; k < vars.size() && k < it->second.size(); ++k) {
      const TensorMeta& out = it->second[k];
      TensorMeta& known = metas->at(vars[k]);
      std::optional<Shape> refined = Refine(known.shape, out.shape);
      if (refined.has_value() && out.dtype == known.dtype) {
        known.shape = *refined;
        continue;
      }
      const VarDesc& declared = *block.FindVar(vars[k]);
      return absl::InvalidArgumentError(
          absl::StrCat(Where(op, index), " output ", arg, " '", vars[k], "' is declared ",
                       DataTypeName(declared.dtype), declared.shape.ToString(),
                       known.shape == declared.shape
                           ? ""
                           : absl::StrCat(" (", MetaString(known), " after earlier ops)"),
                       " but the op makes it ", MetaString(out)));
    }
  }
  return absl::OkStatus();
}

// Bytes of physical memory on this host (0 if unknown).
int64_t HostMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
}

// Empty if `meta` can exist on this host: its known dims' product fits
// int64 and, when every dim is known, its bytes fit this host's physical
// memory (nothing Tandem runs on can hold more: devices have less, and their
// limits are checked when allocating). Else why not, after "is ".
std::string WhyTooLarge(const VarDesc& declared, const TensorMeta& meta, int64_t host_bytes) {
  absl::StatusOr<int64_t> elements = meta.shape.KnownElements();
  bool known = true;
  for (int64_t d : meta.shape.dims()) known &= d >= 0;
  const int64_t size = static_cast<int64_t>(SizeOf(meta.dtype));
  if (elements.ok() && (!known || host_bytes == 0 || *elements <= host_bytes / size)) return "";
  return absl::StrCat(
      meta.shape == declared.shape ? "declared " : "inferred as ", MetaString(meta), ": ",
      elements.ok() ? absl::StrCat(*elements, " elements of ", size,
                                   " bytes, more than this host's ", host_bytes, " bytes of memory")
                    : std::string(elements.status().message()));
}

// Every declared shape is one a tensor can have (before shape inference
// multiplies its dims), and a variable that is neither written by an op
// (checked with the op) nor persistable (in the scope already), i.e. a
// feed, fits this host.
absl::Status CheckDeclaredShapes(const Block& block, int64_t host_bytes) {
  std::set<std::string> written;
  for (const OpDesc& op : block.ops()) {
    for (const auto& [arg, vars] : op.outputs) written.insert(vars.begin(), vars.end());
  }
  for (const VarDesc& v : block.vars()) {
    const TensorMeta meta{v.dtype, v.shape};
    absl::StatusOr<int64_t> known = v.shape.KnownElements();
    if (!known.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("variable '", v.name, "' is declared ",
                                                     MetaString(meta), ": ",
                                                     known.status().message()));
    }
    if (v.persistable || written.count(v.name) > 0) continue;
    const std::string why = WhyTooLarge(v, meta, host_bytes);
    if (!why.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("variable '", v.name, "' (no op writes it: a feed) is ", why));
    }
  }
  return absl::OkStatus();
}

bool Initialised(const Scope& scope, const std::string& name) {
  const Variable* v = scope.Find(name);
  const Tensor* t = v == nullptr ? nullptr : v->data_tensor();
  return t != nullptr && t->initialized();
}

absl::Status CheckVariablesDeclared(const OpDesc& op, size_t index, const Block& block) {
  for (const auto* args : {&op.inputs, &op.outputs}) {
    for (const auto& [arg, vars] : *args) {
      for (const std::string& var : vars) {
        if (block.HasVar(var)) continue;
        return absl::InvalidArgumentError(absl::StrCat(Where(op, index), " argument ", arg,
                                                       " names variable '", var,
                                                       "', which the program does not declare"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckInputsHaveValues(const OpDesc& op, size_t index, const Block& block,
                                   const std::set<std::string>& available) {
  for (const auto& [arg, vars] : op.inputs) {
    for (const std::string& var : vars) {
      if (available.count(var) > 0) continue;
      const VarDesc* d = block.FindVar(var);
      return absl::InvalidArgumentError(absl::StrCat(
          Where(op, index), " reads '", var, "' (argument ", arg, ") before it has a value: ",
          d->persistable ? "it is persistable but not initialised in the scope (run the "
                           "startup program first?)"
                         : "no earlier op writes it and it is not fed"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateProgramForRun(const Program& program, const Scope& scope,
                                   const std::vector<std::string>& feeds) {
  const Block& block = program.block();
  std::set<std::string> available(feeds.begin(), feeds.end());
  MetaMap metas;
  for (const VarDesc& v : block.vars()) {
    if (v.persistable && Initialised(scope, v.name)) available.insert(v.name);
    metas[v.name] = TensorMeta{v.dtype, v.shape, v.kind == VarKind::kSelectedRows};
  }
  const int64_t host_bytes = HostMemoryBytes();
  RETURN_IF_ERROR(CheckDeclaredShapes(block, host_bytes));
  const std::vector<OpDesc>& ops = block.ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    OpDesc op;  // ops[i] with its attribute defaults
    RETURN_IF_ERROR(CheckSchema(ops[i], i, &op));
    RETURN_IF_ERROR(CheckVariablesDeclared(op, i, block));
    RETURN_IF_ERROR(CheckInputsHaveValues(op, i, block, available));
    RETURN_IF_ERROR(CheckInferredOutputs(op, i, block, &metas));
    for (const auto& [arg, vars] : op.outputs) {
      for (const std::string& var : vars) {
        const std::string why = WhyTooLarge(*block.FindVar(var), metas.at(var), host_bytes);
        if (!why.empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat(Where(op, i), " output ", arg, " '", var, "' is ", why));
        }
      }
      available.insert(vars.begin(), vars.end());
    }
  }
  return absl::OkStatus();
}

}  // namespace tandem
