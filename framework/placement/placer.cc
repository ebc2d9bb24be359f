#include "framework/placement/placer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "framework/base/status_macros.h"
#include "framework/placement/copy_rule.h"
#include "framework/placement/placement_passes.h"
#include "glog/logging.h"

namespace tandem {
namespace {

bool IsHostPlace(const Place& place) { return place.is_host(); }

std::string CopyVarName(const Block& block, const std::string& var, const Place& to) {
  std::string name = absl::StrCat(var, "@", to.ToString());
  for (int i = 1; block.HasVar(name); ++i) name = absl::StrCat(var, "@", to.ToString(), "#", i);
  return name;
}

// Places ops in program order (placement_passes.h decides each op's place
// and kernel) and inserts the copies where their arguments must live.
class Placer {
 public:
  Placer(const Program& program, const PlacerOptions& options)
      : in_(program), options_(options), ctx_(program, options) {}

  absl::StatusOr<PlacedProgram> Run();

 private:
  // Makes `var` available at `want` for op #`consumer_index` of the input
  // program; returns the name to read.
  absl::StatusOr<std::string> Ensure(const std::string& var, const Place& want,
                                     const OpDesc& consumer, const std::string& arg, bool host_arg,
                                     int consumer_index);
  void AppendCopy(CopyStep copy, PlacementCause cause, const std::string& why);
  // The new value of each output lives where the kernel writes it; copies
  // of the old value are stale.
  void RecordOutputs(const OpDesc& op, const KernelRegistration& kernel, const Place& place);
  absl::Status WriteBackPersistables();

  const Program& in_;
  const PlacerOptions& options_;
  PlacementContext ctx_;
  PlacedProgram out_;
  std::map<std::string, Place> loc_;  // latest value's place
  // Valid copies: variable -> destination -> the copy's variable.
  std::map<std::string, CopyList<std::string, Place>> copies_;
  std::vector<int> pending_copies_;  // table rows of the current op's copies
};

void Placer::AppendCopy(CopyStep copy, PlacementCause cause, const std::string& why) {
  OpDesc op;
  op.type = copy.to.is_host() ? "memcpy_d2h" : "memcpy_h2d";
  op.inputs["X"] = {copy.source};
  op.outputs["Out"] = {copy.output};
  const Place device = copy.to.is_host() ? copy.from : copy.to;
  op.op_device = device.ToString();
  op.role = OpRole::kCopy;
  const VarDesc* src = out_.program.block().FindVar(copy.source);
  VarDesc dst = src != nullptr ? *src : VarDesc{};
  dst.name = copy.output;
  dst.persistable = false;
  dst.is_parameter = false;
  if (copy.output != copy.var) out_.program.block().SetVar(dst);  // a fresh name
  const int index = static_cast<int>(out_.program.block().ops().size());
  const std::string type = op.type;
  out_.program.block().AppendOp(std::move(op));
  out_.places.push_back(device);
  out_.kernels.push_back(nullptr);
  out_.source_ops.push_back(-1);
  out_.table.push_back({index, type, device, cause, why, std::move(copy)});
  ++out_.num_copies;
}

absl::StatusOr<std::string> Placer::Ensure(const std::string& var, const Place& want,
                                           const OpDesc& consumer, const std::string& arg,
                                           bool host_arg, int consumer_index) {
  auto it = loc_.find(var);
  if (it == loc_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("op '", consumer.type, "' (#", consumer_index, ") reads variable '", var,
                     "', which no earlier op produces and which is neither fed nor in the scope"));
  }
  const Place have = it->second;
  if (have == want) return var;
  CopyList<std::string, Place>& var_copies = copies_[var];
  if (std::optional<std::string> valid = var_copies.Find(want)) return *valid;

  TransferPolicy policy = consumer.transfer_policy == TransferPolicy::kInherit
                              ? options_.policy
                              : consumer.transfer_policy;
  const std::string direction = want.is_host() ? "device->host" : "host->device";
  const std::string why =
      absl::StrCat("variable '", var, "' is on ", have.ToString(), "; op '", consumer.type, "' (#",
                   consumer_index, ") reads ", arg, " on ", want.ToString(),
                   host_arg ? " (HostMemory argument)" : "");
  if (policy == TransferPolicy::kDisallow) {
    return absl::FailedPreconditionError(absl::StrCat(
        "transfer policy 'disallow' forbids a ", direction, " copy: ", why,
        ". Place the op with device_guard(\"", have.ToString(), "\") or allow transfers"));
  }
  if (policy == TransferPolicy::kLog) LOG(INFO) << "planned " << direction << " copy: " << why;

  const PlacementCause cause = host_arg ? PlacementCause::kHostArg : PlacementCause::kCopy;
  return EnsureCopy(var, have, want, CPUPlace(), &var_copies, IsHostPlace,
                    [&](const std::string& source, const Place& from, const Place& to) {
                      CopyStep copy{
                          var,           source, CopyVarName(out_.program.block(), var, to),
                          from,          to,     -1,
                          consumer.type, arg};
                      std::string output = copy.output;
                      pending_copies_.push_back(static_cast<int>(out_.table.size()));
                      AppendCopy(std::move(copy), cause, why);
                      return output;
                    });
}

void Placer::RecordOutputs(const OpDesc& op, const KernelRegistration& kernel, const Place& place) {
  for (const auto& [arg, vars] : op.outputs) {
    const Place where = ArgumentPlace(kernel, arg, place);
    for (const std::string& v : vars) {
      loc_[v] = where;
      copies_.erase(v);
    }
  }
}

absl::Status Placer::WriteBackPersistables() {
  const Block& block = in_.block();
  for (const auto& initial : options_.initial_places) {
    const std::string& var = initial.first;
    const Place& home = initial.second;
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
    WriteBackCopy(
        var, it->second, home, CPUPlace(), IsHostPlace,
        [&](const std::string& source, const Place& from, const Place& to, bool into_var) {
          // The last copy writes the persistable itself.
          CopyStep copy{
              var,          source, into_var ? var : CopyVarName(out_.program.block(), var, to),
              from,         to,     -1,
              "write-back", ""};
          std::string output = copy.output;
          AppendCopy(std::move(copy), PlacementCause::kWriteBack, why);
          return output;
        });
  }
  return absl::OkStatus();
}

absl::StatusOr<PlacedProgram> Placer::Run() {
  const Block& block = in_.block();
  for (const VarDesc& v : block.vars()) out_.program.block().SetVar(v);
  loc_ = options_.initial_places;
  out_.initial_places = options_.initial_places;
  out_.homes = options_.homes;
  out_.auto_summary = options_.auto_summary;
  out_.auto_step_micros = options_.auto_step_micros;

  for (int i = 0; i < static_cast<int>(block.ops().size()); ++i) {
    OpDesc op = block.ops()[i];
    ASSIGN_OR_RETURN(PlaceDecision decision, PlaceOp(op, i, ctx_));
    ASSIGN_OR_RETURN(const KernelRegistration* kernel, KernelWithFallback(op, i, ctx_, &decision));
    const Place place = decision.place;
    pending_copies_.clear();
    for (auto& [arg, vars] : op.inputs) {
      const Place want = ArgumentPlace(*kernel, arg, place);
      for (std::string& v : vars) {
        ASSIGN_OR_RETURN(v, Ensure(v, want, op, arg, kernel->def.IsHostMemory(arg), i));
      }
    }
    RecordOutputs(op, *kernel, place);
    ctx_.Record(block.ops()[i], i, place);
    op.op_device = place.ToString();
    const int index = static_cast<int>(out_.program.block().ops().size());
    for (int row : pending_copies_) out_.table[row].copy->consumer = index;
    out_.program.block().AppendOp(op);
    out_.places.push_back(place);
    out_.kernels.push_back(kernel);
    out_.source_ops.push_back(i);
    out_.table.push_back({index, op.type, place, decision.cause, decision.detail, std::nullopt});
  }
  RETURN_IF_ERROR(WriteBackPersistables());
  return std::move(out_);
}

}  // namespace

absl::string_view PlacementCauseName(PlacementCause cause) {
  switch (cause) {
    case PlacementCause::kCastAtSource:
      return "cast-at-source";
    case PlacementCause::kGuard:
      return "guard";
    case PlacementCause::kInherit:
      return "inherit";
    case PlacementCause::kLossGrad:
      return "loss-grad";
    case PlacementCause::kGradSum:
      return "grad-sum";
    case PlacementCause::kGradNorm:
      return "grad-norm";
    case PlacementCause::kParam:
      return "param";
    case PlacementCause::kState:
      return "state";
    case PlacementCause::kHostState:
      return "host-state";
    case PlacementCause::kAuto:
      return "auto";
    case PlacementCause::kDefault:
      return "default";
    case PlacementCause::kFallback:
      return "fallback";
    case PlacementCause::kCopy:
      return "copy";
    case PlacementCause::kHostArg:
      return "host-arg";
    case PlacementCause::kWriteBack:
      return "write-back";
  }
  return "?";
}

absl::StatusOr<Place> ResolveOpDevice(absl::string_view op_device, const Place& default_place) {
  if (op_device.empty()) return default_place;
  ASSIGN_OR_RETURN(Place p, ParsePlace(op_device));
  const bool has_index = op_device.find(':') != absl::string_view::npos;
  if (!has_index && p.type() == default_place.type()) return default_place;
  return p;
}

std::string PlacedProgram::TableString() const {
  std::string out =
      absl::StrFormat("%-4s %-22s %-8s %-10s %s\n", "#", "op", "place", "cause", "detail");
  for (const PlacementEntry& e : table) {
    absl::StrAppendFormat(&out, "%-4d %-22s %-8s %-10s %s\n", e.op_index, e.op_type,
                          e.place.ToString(), PlacementCauseName(e.cause), e.detail);
  }
  absl::StrAppendFormat(&out, "%d ops, %d copies\n", static_cast<int>(table.size()) - num_copies,
                        num_copies);
  if (!auto_summary.empty()) absl::StrAppend(&out, auto_summary, "\n");
  return out;
}

absl::StatusOr<PlacedProgram> PlaceProgram(const Program& program, const PlacerOptions& options) {
  return Placer(program, options).Run();
}

}  // namespace tandem
