#include "framework/runtime/placer.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "glog/logging.h"

namespace tandem {
namespace {

std::string CopyVarName(const Block& block, const std::string& var, const Place& to) {
  std::string name = absl::StrCat(var, "@", to.ToString());
  for (int i = 1; block.HasVar(name); ++i) name = absl::StrCat(var, "@", to.ToString(), "#", i);
  return name;
}

std::string KernelsPresent(const std::string& op) {
  std::vector<std::string> present;
  for (const KernelRegistration* k : KernelRegistry::Global().KernelsFor(op)) {
    present.push_back(k->def.DebugString());
  }
  return present.empty() ? "none" : absl::StrJoin(present, "; ");
}

class Placer {
 public:
  Placer(const Program& program, const PlacerOptions& options)
      : in_(program), options_(options) {}

  absl::StatusOr<PlacedProgram> Run();

 private:
  absl::StatusOr<Place> PlaceOf(const OpDesc& op, int index, std::string* cause);
  absl::StatusOr<const KernelRegistration*> KernelFor(const OpDesc& op, Place* place,
                                                      std::string* cause, int index);
  // Makes `var` available at `want` for `consumer`; returns the name to read.
  absl::StatusOr<std::string> Ensure(const std::string& var, const Place& want,
                                     const OpDesc& consumer, const std::string& arg,
                                     bool host_arg, int consumer_index);
  void AppendCopy(const std::string& from_var, const Place& from, const std::string& to_var,
                  const Place& to, const std::string& cause, const std::string& detail,
                  const std::string& consumer);

  const Program& in_;
  const PlacerOptions& options_;
  PlacedProgram out_;
  std::map<std::string, Place> loc_;                          // latest value's place
  std::map<std::pair<std::string, Place>, std::string> copies_;  // valid copies
};

absl::StatusOr<Place> Placer::PlaceOf(const OpDesc& op, int index, std::string* cause) {
  absl::StatusOr<Place> place = ResolveOpDevice(op.op_device, options_.default_place);
  if (!place.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("op '", op.type, "' (#", index,
                                                   "): ", place.status().message()));
  }
  absl::StatusOr<Device*> device = DeviceRegistry::Global().GetDevice(*place);
  if (!device.ok()) {
    return absl::Status(device.status().code(),
                        absl::StrCat("op '", op.type, "' (#", index, ") placed by device_guard(\"",
                                     op.op_device, "\"): ", device.status().message()));
  }
  if (op.op_device.empty()) {
    *cause = "default";
  } else if (op.role == OpRole::kBackward || op.role == OpRole::kLoss) {
    *cause = "inherit";
  } else if (op.role == OpRole::kOptimize) {
    *cause = "param";
  } else {
    *cause = "guard";
  }
  return *place;
}

absl::StatusOr<const KernelRegistration*> Placer::KernelFor(const OpDesc& op, Place* place,
                                                           std::string* cause, int index) {
  const Block& block = in_.block();
  auto var_dtype = [&](const std::string& var) -> std::optional<DataType> {
    const VarDesc* d = block.FindVar(var);
    if (d == nullptr) return std::nullopt;
    return d->dtype;
  };
  absl::StatusOr<const KernelRegistration*> k =
      KernelRegistry::Global().FindForOp(op, place->type(), var_dtype);
  if (k.ok()) return k;
  if (k.status().code() != absl::StatusCode::kNotFound) return k.status();
  if (options_.strict || place->is_host()) {
    return absl::NotFoundError(absl::StrCat("op '", op.type, "' (#", index, ") on ",
                                            place->ToString(), ": ", k.status().message()));
  }
  absl::StatusOr<const KernelRegistration*> cpu =
      KernelRegistry::Global().FindForOp(op, DeviceType::CPU(), var_dtype);
  if (!cpu.ok()) {
    return absl::NotFoundError(absl::StrCat("op '", op.type, "' (#", index,
                                            ") has no kernel on ", place->ToString(),
                                            " nor on cpu; kernels present: ",
                                            KernelsPresent(op.type)));
  }
  LOG(WARNING) << "op '" << op.type << "' (#" << index << ") has no kernel on "
               << place->ToString() << " for its dtypes; it runs on cpu instead "
               << "(kernels present: " << KernelsPresent(op.type) << ")";
  *place = CPUPlace();
  *cause = "fallback";
  return cpu;
}

void Placer::AppendCopy(const std::string& from_var, const Place& from, const std::string& to_var,
                        const Place& to, const std::string& cause, const std::string& detail,
                        const std::string& consumer) {
  OpDesc copy;
  copy.type = to.is_host() ? "memcpy_d2h" : "memcpy_h2d";
  copy.inputs["X"] = {from_var};
  copy.outputs["Out"] = {to_var};
  copy.attrs["reason"] = detail;
  copy.attrs["consumer"] = consumer;
  const Place device = to.is_host() ? from : to;
  copy.op_device = device.ToString();
  copy.role = OpRole::kCopy;
  const VarDesc* src = out_.program.block().FindVar(from_var);
  VarDesc dst = src != nullptr ? *src : VarDesc{};
  dst.name = to_var;
  dst.persistable = false;
  dst.is_parameter = false;
  out_.program.block().AddVar(dst);
  const int index = static_cast<int>(out_.program.block().ops().size());
  out_.program.block().AppendOp(std::move(copy));
  out_.places.push_back(device);
  out_.kernels.push_back(nullptr);
  out_.table.push_back({index, to.is_host() ? "memcpy_d2h" : "memcpy_h2d", device, cause, detail});
  ++out_.num_copies;
}

absl::StatusOr<std::string> Placer::Ensure(const std::string& var, const Place& want,
                                           const OpDesc& consumer, const std::string& arg,
                                           bool host_arg, int consumer_index) {
  auto it = loc_.find(var);
  if (it == loc_.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "op '", consumer.type, "' (#", consumer_index, ") reads variable '", var,
        "', which no earlier op produces and which is neither fed nor in the scope"));
  }
  const Place have = it->second;
  if (have == want) return var;
  auto cached = copies_.find({var, want});
  if (cached != copies_.end()) return cached->second;

  TransferPolicy policy = consumer.transfer_policy == TransferPolicy::kInherit
                              ? options_.policy
                              : consumer.transfer_policy;
  const std::string direction = want.is_host() ? "device->host" : "host->device";
  const std::string why = absl::StrCat(
      "variable '", var, "' is on ", have.ToString(), "; op '", consumer.type, "' (#",
      consumer_index, ") reads ", arg, " on ", want.ToString(),
      host_arg ? " (HostMemory argument)" : "");
  if (policy == TransferPolicy::kDisallow) {
    return absl::FailedPreconditionError(absl::StrCat(
        "transfer policy 'disallow' forbids a ", direction, " copy: ", why,
        ". Place the op with device_guard(\"", have.ToString(), "\") or allow transfers"));
  }
  if (policy == TransferPolicy::kLog) LOG(INFO) << "planned " << direction << " copy: " << why;

  const std::string cause = host_arg ? "host-arg" : "copy";
  std::string source = var;
  Place source_place = have;
  if (!have.is_host() && !want.is_host()) {  // device -> other device, through the host
    auto via = copies_.find({var, CPUPlace()});
    if (via == copies_.end()) {
      const std::string host_name = CopyVarName(out_.program.block(), var, CPUPlace());
      AppendCopy(var, have, host_name, CPUPlace(), cause, why, consumer.type);
      copies_[{var, CPUPlace()}] = host_name;
      source = host_name;
    } else {
      source = via->second;
    }
    source_place = CPUPlace();
  }
  const std::string name = CopyVarName(out_.program.block(), var, want);
  AppendCopy(source, source_place, name, want, cause, why, consumer.type);
  copies_[{var, want}] = name;
  return name;
}

absl::StatusOr<PlacedProgram> Placer::Run() {
  const Block& block = in_.block();
  for (const VarDesc& v : block.vars()) out_.program.block().AddVar(v);
  loc_ = options_.initial_places;
  out_.initial_places = options_.initial_places;

  for (int i = 0; i < static_cast<int>(block.ops().size()); ++i) {
    OpDesc op = block.ops()[i];
    std::string cause;
    ASSIGN_OR_RETURN(Place place, PlaceOf(op, i, &cause));
    ASSIGN_OR_RETURN(const KernelRegistration* kernel, KernelFor(op, &place, &cause, i));
    // Inputs: make each available where the kernel reads it.
    for (auto& [arg, vars] : op.inputs) {
      const bool host_arg = kernel->def.IsHostMemory(arg);
      const Place want = host_arg ? CPUPlace() : place;
      for (std::string& v : vars) {
        ASSIGN_OR_RETURN(v, Ensure(v, want, op, arg, host_arg, i));
      }
    }
    // Outputs: the new value lives where the kernel writes it; copies of the
    // old value are stale.
    for (const auto& [arg, vars] : op.outputs) {
      const Place where = kernel->def.IsHostMemory(arg) ? CPUPlace() : place;
      for (const std::string& v : vars) {
        loc_[v] = where;
        for (auto c = copies_.begin(); c != copies_.end();) {
          c = c->first.first == v ? copies_.erase(c) : std::next(c);
        }
      }
    }
    std::string detail = op.op_device.empty() ? "no device_guard" : absl::StrCat("op_device \"", op.op_device, "\"");
    if (cause == "fallback") detail = absl::StrCat("no kernel on ", op.op_device, "; fell back to cpu");
    op.op_device = place.ToString();
    const int index = static_cast<int>(out_.program.block().ops().size());
    out_.program.block().AppendOp(op);
    out_.places.push_back(place);
    out_.kernels.push_back(kernel);
    out_.table.push_back({index, op.type, place, cause, detail});
  }
  // Persistable variables end where they started.
  for (const auto& [var, home] : options_.initial_places) {
    const VarDesc* d = block.FindVar(var);
    if (d == nullptr || !d->persistable) continue;
    auto it = loc_.find(var);
    if (it == loc_.end() || it->second == home) continue;
    const std::string why = absl::StrCat("persistable '", var, "' was updated on ",
                                         it->second.ToString(), "; it lives on ", home.ToString());
    if (options_.policy == TransferPolicy::kDisallow) {
      return absl::FailedPreconditionError(
          absl::StrCat("transfer policy 'disallow' forbids a copy back: ", why));
    }
    std::string source = var;
    if (!it->second.is_host() && !home.is_host()) {
      source = CopyVarName(out_.program.block(), var, CPUPlace());
      AppendCopy(var, it->second, source, CPUPlace(), "write-back", why, "write-back");
    }
    // The copy's output is the persistable variable itself.
    AppendCopy(source, source == var ? it->second : CPUPlace(), var, home, "write-back", why,
               "write-back");
    out_.program.block().AddVar(*d);
  }
  return std::move(out_);
}

}  // namespace

absl::StatusOr<Place> ResolveOpDevice(absl::string_view op_device, const Place& default_place) {
  if (op_device.empty()) return default_place;
  ASSIGN_OR_RETURN(Place p, ParsePlace(op_device));
  const bool has_index = op_device.find(':') != absl::string_view::npos;
  if (!has_index && p.type() == default_place.type()) return default_place;
  return p;
}

std::string PlacedProgram::TableString() const {
  std::string out = absl::StrFormat("%-4s %-22s %-8s %-10s %s\n", "#", "op", "place", "cause",
                                    "detail");
  for (const PlacementEntry& e : table) {
    absl::StrAppendFormat(&out, "%-4d %-22s %-8s %-10s %s\n", e.op_index, e.op_type,
                          e.place.ToString(), e.cause, e.detail);
  }
  absl::StrAppendFormat(&out, "%d ops, %d copies\n", static_cast<int>(table.size()) - num_copies, num_copies);
  return out;
}

absl::StatusOr<PlacedProgram> PlaceProgram(const Program& program, const PlacerOptions& options) {
  return Placer(program, options).Run();
}

}  // namespace tandem
