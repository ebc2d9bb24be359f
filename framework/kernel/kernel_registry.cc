#include "framework/kernel/kernel_registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"

namespace tandem {

KernelDef& KernelDef::TypeConstraint(std::string arg_or_attr, std::vector<DataType> types) {
  constraints_[std::move(arg_or_attr)].insert(types.begin(), types.end());
  return *this;
}

KernelDef& KernelDef::HostMemory(std::string arg) {
  host_args_.insert(std::move(arg));
  return *this;
}

const TensorMeta* FirstMeta(const ArgMetas& args, absl::string_view arg) {
  auto it = args.find(std::string(arg));
  return it == args.end() || it->second.empty() ? nullptr : &it->second[0];
}

KernelDef& KernelDef::Scratch(ScratchFn bytes) {
  scratch_ = std::move(bytes);
  return *this;
}

KernelDef& KernelDef::HostStaging(ScratchFn bytes) {
  host_staging_ = std::move(bytes);
  return *this;
}

DeviceType KernelDef::device_type() const { return DeviceType::Register(device_type_name_, ""); }

KernelDef& KernelDef::Collective(CollectiveKind kind) {
  collective_ = kind;
  return *this;
}

const char* CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "allreduce";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kAllGather:
      return "allgather";
    case CollectiveKind::kNone:
      break;
  }
  return "none";
}

double CollectiveBusFactor(CollectiveKind kind, int ranks) {
  if (ranks <= 1) return 1;
  const double n = ranks;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2 * (n - 1) / n;
    case CollectiveKind::kAllGather:
      return (n - 1) / n;
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kNone:
      break;
  }
  return 1;
}

KernelDef& KernelDef::GathersRows(std::string table, std::string ids, std::string out,
                                  OpPredicate applies) {
  row_gather_ =
      RowGatherContract{std::move(table), std::move(ids), std::move(out), std::move(applies)};
  return *this;
}

KernelDef& KernelDef::SparseRowsFrom(std::string ids, std::string out, OpPredicate applies) {
  sparse_rows_ = SparseRowsContract{std::move(ids), std::move(out), std::move(applies)};
  return *this;
}

KernelDef& KernelDef::UpdatesRowsOf(std::string param, std::string grad) {
  row_update_ = RowUpdateContract{std::move(param), std::move(grad)};
  return *this;
}

const RowGatherContract* KernelDef::RowGather(const OpDesc& op) const {
  if (!row_gather_ || (row_gather_->applies && !row_gather_->applies(op))) return nullptr;
  return &*row_gather_;
}

const SparseRowsContract* KernelDef::SparseRows(const OpDesc& op) const {
  if (!sparse_rows_ || (sparse_rows_->applies && !sparse_rows_->applies(op))) return nullptr;
  return &*sparse_rows_;
}

std::string KernelDef::DebugString() const {
  std::string out = absl::StrCat(op_, " on ", device_type_name_);
  for (const auto& [name, types] : constraints_) {
    std::vector<std::string> names;
    for (DataType t : types) names.emplace_back(DataTypeName(t));
    absl::StrAppend(&out, " [", name, ": ", absl::StrJoin(names, ", "), "]");
  }
  for (const std::string& arg : host_args_) {
    absl::StrAppend(&out, " HostMemory(", arg, ")");
  }
  if (scratch_) absl::StrAppend(&out, " Scratch");
  if (!forwarded_input_.empty()) absl::StrAppend(&out, " ForwardsInput(", forwarded_input_, ")");
  if (row_gather_) {
    absl::StrAppend(&out, " GathersRows(", row_gather_->table, ", ", row_gather_->ids, " -> ",
                    row_gather_->out, ")");
  }
  if (sparse_rows_) {
    absl::StrAppend(&out, " SparseRowsFrom(", sparse_rows_->ids, " -> ", sparse_rows_->out, ")");
  }
  if (row_update_) {
    absl::StrAppend(&out, " UpdatesRowsOf(", row_update_->param, ", ", row_update_->grad, ")");
  }
  return out;
}

namespace {

// True if some dtype assignment satisfies both constraint sets.
bool Overlaps(const KernelDef& a, const KernelDef& b) {
  for (const auto& [name, types] : a.type_constraints()) {
    auto it = b.type_constraints().find(name);
    if (it == b.type_constraints().end()) continue;
    bool common = false;
    for (DataType t : types) common |= it->second.count(t) > 0;
    if (!common) return false;
  }
  return true;
}

}  // namespace

KernelRegistry& KernelRegistry::Global() {
  static KernelRegistry* registry = new KernelRegistry;
  return *registry;
}

void KernelRegistry::Register(KernelDef def, KernelFactory factory) {
  for (const auto& k : kernels_) {
    if (k->def.op() == def.op() && k->def.device_type_name() == def.device_type_name()) {
      CHECK(!Overlaps(k->def, def)) << "duplicate kernel registration: '" << def.DebugString()
                                    << "' overlaps '" << k->def.DebugString() << "'";
    }
  }
  def.device_type();  // interns the device-type name
  kernels_.push_back(
      std::make_unique<KernelRegistration>(KernelRegistration{std::move(def), std::move(factory)}));
}

int KernelRegistry::WrapFactories(absl::string_view device_type,
                                  absl::FunctionRef<KernelFactory(KernelFactory)> wrap) {
  int wrapped = 0;
  for (const auto& k : kernels_) {
    if (k->def.device_type_name() != device_type) continue;
    k->factory = wrap(std::move(k->factory));
    ++wrapped;
  }
  return wrapped;
}

absl::StatusOr<const KernelRegistration*> KernelRegistry::Find(absl::string_view op,
                                                               DeviceType device,
                                                               DTypeResolver dtype_of) const {
  std::vector<std::string> bound;
  bool bound_filled = false;
  for (const auto& k : kernels_) {
    if (k->def.op() != op || k->def.device_type() != device) continue;
    bool match = true;
    for (const auto& [name, types] : k->def.type_constraints()) {
      std::optional<DataType> t = dtype_of(name);
      if (!bound_filled) {
        bound.push_back(absl::StrCat(name, "=", t ? DataTypeName(*t) : "?"));
      }
      if (!t.has_value() || types.count(*t) == 0) match = false;
    }
    bound_filled = true;
    if (match) return k.get();
  }
  std::vector<std::string> registered;
  for (const auto& k : kernels_) {
    if (k->def.op() == op) registered.push_back(k->def.DebugString());
  }
  return absl::NotFoundError(
      absl::StrCat("no kernel for op '", op, "' on ", device.name(),
                   bound.empty() ? "" : absl::StrCat(" with ", absl::StrJoin(bound, ", ")),
                   "; registered kernels for '", op,
                   "': ", registered.empty() ? "none" : absl::StrJoin(registered, "; ")));
}

absl::StatusOr<const KernelRegistration*> KernelRegistry::FindForOp(
    const OpDesc& op, DeviceType device,
    absl::FunctionRef<std::optional<DataType>(const std::string& var)> var_dtype) const {
  return Find(op.type, device, [&](absl::string_view name) -> std::optional<DataType> {
    auto in = op.inputs.find(std::string(name));
    if (in != op.inputs.end()) {
      if (in->second.empty()) return std::nullopt;
      return var_dtype(in->second[0]);
    }
    auto attr = op.attrs.find(std::string(name));
    if (attr != op.attrs.end()) {
      if (const DataType* t = std::get_if<DataType>(&attr->second)) return *t;
    }
    return std::nullopt;
  });
}

bool KernelRegistry::HasKernel(absl::string_view op, DeviceType device) const {
  for (const auto& k : kernels_) {
    if (k->def.op() == op && k->def.device_type() == device) return true;
  }
  return false;
}

std::vector<const KernelRegistration*> KernelRegistry::KernelsFor(absl::string_view op) const {
  std::vector<const KernelRegistration*> out;
  for (const auto& k : kernels_) {
    if (k->def.op() == op) out.push_back(k.get());
  }
  return out;
}

std::vector<const KernelRegistration*> KernelRegistry::AllKernels() const {
  std::vector<const KernelRegistration*> out;
  for (const auto& k : kernels_) out.push_back(k.get());
  return out;
}

}  // namespace tandem
