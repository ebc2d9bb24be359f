#include "framework/runtime/program_validation.h"

#include <unistd.h>

#include <set>

#include "absl/strings/str_cat.h"
#include "framework/op/op_schema.h"
#include "framework/types/data_type.h"

namespace tandem {
namespace {

std::string Where(const OpDesc& op, size_t index) {
  return absl::StrCat("op '", op.type, "' (#", index, ")");
}

// The op against its schema (on a copy: Validate fills in defaults).
absl::Status CheckSchema(const OpDesc& op, size_t index) {
  absl::StatusOr<const OpSchema*> schema = OpRegistry::Global().Find(op.type);
  if (!schema.ok()) {
    return absl::Status(schema.status().code(),
                        absl::StrCat(Where(op, index), ": ", schema.status().message()));
  }
  OpDesc copy = op;
  absl::Status s = (*schema)->Validate(&copy);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("#", index, ": ", s.message()));
  return absl::OkStatus();
}

// Bytes of physical memory on this host (0 if unknown).
int64_t HostMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
}

// An output whose declared shape is fully known must fit this host's memory:
// nothing Tandem runs on can hold more (devices have less, and their limits
// are checked when allocating).
absl::Status CheckDeclaredSize(const OpDesc& op, size_t index, const std::string& arg,
                               const VarDesc& var, int64_t host_bytes) {
  for (int64_t d : var.shape.dims()) {
    if (d < 0) return absl::OkStatus();  // known at run time only
  }
  absl::StatusOr<int64_t> elements = var.shape.NumElements();
  const int64_t size = static_cast<int64_t>(SizeOf(var.dtype));
  if (elements.ok() && (host_bytes == 0 || *elements <= host_bytes / size)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(Where(op, index), " output ", arg, " '", var.name, "' is declared ",
                   DataTypeName(var.dtype), var.shape.ToString(), ": ",
                   elements.ok() ? absl::StrCat(*elements, " elements of ", size, " bytes")
                                 : std::string(elements.status().message()),
                   ", more than this host's ", host_bytes, " bytes of memory"));
}

bool Initialised(const Scope& scope, const std::string& name) {
  const Variable* v = scope.Find(name);
  const Tensor* t = v == nullptr ? nullptr : v->data_tensor();
  return t != nullptr && t->initialized();
}

}  // namespace

absl::Status ValidateProgramForRun(const Program& program, const Scope& scope,
                                   const std::vector<std::string>& feeds) {
  const Block& block = program.block();
  std::set<std::string> available(feeds.begin(), feeds.end());
  for (const VarDesc& v : block.vars()) {
    if (v.persistable && Initialised(scope, v.name)) available.insert(v.name);
  }
  const int64_t host_bytes = HostMemoryBytes();
  const std::vector<OpDesc>& ops = block.ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpDesc& op = ops[i];
    absl::Status schema = CheckSchema(op, i);
    if (!schema.ok()) return schema;
    for (const auto* args : {&op.inputs, &op.outputs}) {
      for (const auto& [arg, vars] : *args) {
        for (const std::string& var : vars) {
          if (block.HasVar(var)) continue;
          return absl::InvalidArgumentError(absl::StrCat(Where(op, i), " argument ", arg,
                                                         " names variable '", var,
                                                         "', which the program does not declare"));
        }
      }
    }
    for (const auto& [arg, vars] : op.inputs) {
      for (const std::string& var : vars) {
        if (available.count(var) > 0) continue;
        const VarDesc* d = block.FindVar(var);
        return absl::InvalidArgumentError(absl::StrCat(
            Where(op, i), " reads '", var, "' (argument ", arg, ") before it has a value: ",
            d->persistable ? "it is persistable but not initialised in the scope (run the "
                             "startup program first?)"
                           : "no earlier op writes it and it is not fed"));
      }
    }
    for (const auto& [arg, vars] : op.outputs) {
      for (const std::string& var : vars) {
        absl::Status size = CheckDeclaredSize(op, i, arg, *block.FindVar(var), host_bytes);
        if (!size.ok()) return size;
      }
      available.insert(vars.begin(), vars.end());
    }
  }
  return absl::OkStatus();
}

}  // namespace tandem
