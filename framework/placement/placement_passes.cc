#include "framework/placement/placement_passes.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "glog/logging.h"

namespace tandem {
namespace {

using RuleResult = absl::StatusOr<std::optional<PlaceDecision>>;

std::string OpName(const OpDesc& op, int index) {
  return absl::StrCat("op '", op.type, "' (#", index, ")");
}

std::string KernelsPresent(const std::string& op) {
  std::vector<std::string> present;
  for (const KernelRegistration* k : KernelRegistry::Global().KernelsFor(op)) {
    present.push_back(k->def.DebugString());
  }
  return present.empty() ? "none" : absl::StrJoin(present, "; ");
}

bool Unpinned(const OpDesc& op) { return op.op_device.empty(); }

// The place of op `origin.op`, which must be an earlier op (the origin of a
// generated op; Program::FromJson checks the same).
absl::StatusOr<Place> OriginOpPlace(const OpDesc& op, int index, const PlacementContext& ctx) {
  std::optional<Place> place =
      op.origin.op >= 0 && op.origin.op < index ? ctx.OpPlace(op.origin.op) : std::nullopt;
  if (!place.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(OpName(op, index), " derives from op #", op.origin.op, " (origin ",
                     OpOriginKindName(op.origin.kind), "), which is not an earlier op"));
  }
  return *place;
}

}  // namespace

std::optional<Place> PlacementContext::OpPlace(int index) const {
  if (index < 0 || index >= static_cast<int>(op_places_.size())) return std::nullopt;
  return op_places_[index];
}

std::optional<std::pair<Place, int>> PlacementContext::Writer(const std::string& var) const {
  auto it = writers_.find(var);
  if (it == writers_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::pair<Place, int>> PlacementContext::FirstReader(const std::string& var) const {
  auto it = first_readers_.find(var);
  if (it == first_readers_.end()) return std::nullopt;
  return it->second;
}

void PlacementContext::Record(const OpDesc& op, int index, const Place& place) {
  if (index >= static_cast<int>(op_places_.size())) op_places_.resize(index + 1);
  op_places_[index] = place;
  for (const auto& [arg, vars] : op.inputs) {
    for (const std::string& v : vars) first_readers_.emplace(v, std::make_pair(place, index));
  }
  for (const auto& [arg, vars] : op.outputs) {
    for (const std::string& v : vars) writers_[v] = {place, index};
  }
}

RuleResult CastAtSourceRule(const OpDesc& op, int index, const PlacementContext& ctx) {
  if (op.type != "cast" || op.origin.kind != OpOrigin::Kind::kAmpCast) return std::nullopt;
  const Block& block = ctx.program().block();
  const VarDesc* in = block.FindVar(op.Input("X"));
  const VarDesc* out = block.FindVar(op.Output("Out"));
  if (in == nullptr || out == nullptr || SizeOf(out->dtype) >= SizeOf(in->dtype)) {
    return std::nullopt;
  }
  std::optional<std::pair<Place, int>> writer = ctx.Writer(in->name);
  if (writer.has_value()) {
    return PlaceDecision{writer->first, PlacementCause::kCastAtSource,
                         absl::StrCat("to ", DataTypeName(out->dtype), " where #", writer->second,
                                      " produced '", in->name, "'")};
  }
  // A persistable nothing here wrote (a parameter): where it lives.
  auto lives = ctx.options().initial_places.find(in->name);
  if (!in->persistable || lives == ctx.options().initial_places.end()) return std::nullopt;
  return PlaceDecision{
      lives->second, PlacementCause::kCastAtSource,
      absl::StrCat("to ", DataTypeName(out->dtype), " where '", in->name, "' lives")};
}

RuleResult GuardRule(const OpDesc& op, int index, const PlacementContext& ctx) {
  if (Unpinned(op)) return std::nullopt;
  absl::StatusOr<Place> place = ResolveOpDevice(op.op_device, ctx.options().default_place);
  if (!place.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(OpName(op, index), ": ", place.status().message()));
  }
  return PlaceDecision{*place, PlacementCause::kGuard,
                       absl::StrCat("op_device \"", op.op_device, "\"")};
}

RuleResult InheritRule(const OpDesc& op, int index, const PlacementContext& ctx) {
  const bool grad = op.origin.kind == OpOrigin::Kind::kGradOf;
  if (!Unpinned(op) || !(grad || op.origin.kind == OpOrigin::Kind::kRecomputeOf)) {
    return std::nullopt;
  }
  ASSIGN_OR_RETURN(Place place, OriginOpPlace(op, index, ctx));
  const OpDesc& fwd = ctx.program().block().ops()[op.origin.op];
  return PlaceDecision{
      place, PlacementCause::kInherit,
      absl::StrCat(grad ? "gradient of '" : "recomputes '", fwd.type, "' (#", op.origin.op, ")")};
}

RuleResult LossGradRule(const OpDesc& op, int index, const PlacementContext& ctx) {
  if (!Unpinned(op) || op.origin.kind != OpOrigin::Kind::kLossGradOf) return std::nullopt;
  ASSIGN_OR_RETURN(Place place, OriginOpPlace(op, index, ctx));
  const OpDesc& loss = ctx.program().block().ops()[op.origin.op];
  return PlaceDecision{place, PlacementCause::kLossGrad,
                       absl::StrCat("with the loss op '", loss.type, "' (#", op.origin.op, ")")};
}

RuleResult GradSumRule(const OpDesc& op, int index, const PlacementContext& ctx) {
  if (!Unpinned(op) || op.origin.kind != OpOrigin::Kind::kGradSumOf) return std::nullopt;
  std::optional<std::pair<Place, int>> writer = ctx.Writer(op.origin.var);
  if (!writer.has_value()) return std::nullopt;  // nothing produced it: the later rules
  return PlaceDecision{
      writer->first, PlacementCause::kGradSum,
      absl::StrCat("where partial '", op.origin.var, "' was produced (#", writer->second, ")")};
}

RuleResult GradNormRule(const OpDesc& op, int index, const PlacementContext& ctx) {
  if (!Unpinned(op) || op.origin.kind != OpOrigin::Kind::kGradNormOf) return std::nullopt;
  std::optional<std::pair<Place, int>> writer = ctx.Writer(op.origin.var);
  if (!writer.has_value()) return std::nullopt;  // a fed gradient: the later rules
  return PlaceDecision{
      writer->first, PlacementCause::kGradNorm,
      absl::StrCat("where gradient '", op.origin.var, "' was produced (#", writer->second, ")")};
}

RuleResult ParamRule(const OpDesc& op, int index, const PlacementContext& ctx) {
  if (!Unpinned(op) || op.origin.kind != OpOrigin::Kind::kUpdateOf) return std::nullopt;
  const std::string& param = op.origin.var;
  auto lives = ctx.options().initial_places.find(param);
  const bool on_host = lives != ctx.options().initial_places.end() && lives->second.is_host();
  auto why = ctx.options().home_reasons.find(param);
  const std::string planner =
      why == ctx.options().home_reasons.end() ? "" : absl::StrCat("; ", why->second);
  std::optional<std::pair<Place, int>> reader = ctx.FirstReader(param);
  if (reader.has_value() && !(on_host && reader->first != lives->second)) {
    const OpDesc& r = ctx.program().block().ops()[reader->second];
    return PlaceDecision{reader->first, PlacementCause::kParam,
                         absl::StrCat("where '", param, "' is read ('", r.type, "' #",
                                      reader->second, ")", planner)};
  }
  // Kept on the host and read on a device (optimizer offload): the
  // gradient comes down, the parameter and its state stay.
  if (lives == ctx.options().initial_places.end()) return std::nullopt;
  return PlaceDecision{lives->second, PlacementCause::kParam,
                       absl::StrCat("where '", param, "' lives", planner)};
}

RuleResult StateRule(const OpDesc& op, int index, const PlacementContext& ctx) {
  if (!Unpinned(op) || op.origin.kind != OpOrigin::Kind::kStateOf) return std::nullopt;
  const std::string& param = op.origin.var;
  if (std::optional<std::pair<Place, int>> writer = ctx.Writer(param)) {
    return PlaceDecision{writer->first, PlacementCause::kState,
                         absl::StrCat("with '", param, "', initialised by #", writer->second)};
  }
  auto it = ctx.options().initial_places.find(param);
  if (it == ctx.options().initial_places.end()) return std::nullopt;
  return PlaceDecision{it->second, PlacementCause::kState,
                       absl::StrCat("with '", param, "', which lives there")};
}

RuleResult HostStateRule(const OpDesc& op, int index, const PlacementContext& ctx) {
  if (!Unpinned(op) || op.origin.kind != OpOrigin::Kind::kHostState) return std::nullopt;
  return PlaceDecision{CPUPlace(), PlacementCause::kHostState,
                       "host scalar: update kernels read it as HostMemory"};
}

RuleResult AutoRule(const OpDesc& op, int index, const PlacementContext& ctx) {
  if (!Unpinned(op) || op.origin.kind != OpOrigin::Kind::kUser) return std::nullopt;
  auto it = ctx.options().auto_places.find(index);
  if (it == ctx.options().auto_places.end()) return std::nullopt;
  return PlaceDecision{it->second.place, PlacementCause::kAuto, it->second.reason};
}

RuleResult DefaultRule(const OpDesc& op, int index, const PlacementContext& ctx) {
  return PlaceDecision{ctx.options().default_place, PlacementCause::kDefault,
                       Unpinned(op) ? "no device_guard" : "op_device"};
}

const std::vector<NamedPlacementRule>& PlacementRules() {
  static const auto* const kRules = new std::vector<NamedPlacementRule>{
      {"cast-at-source", CastAtSourceRule},
      {"guard", GuardRule},
      {"inherit", InheritRule},
      {"loss-grad", LossGradRule},
      {"grad-sum", GradSumRule},
      {"grad-norm", GradNormRule},
      {"param", ParamRule},
      {"state", StateRule},
      {"host-state", HostStateRule},
      {"auto", AutoRule},
      {"default", DefaultRule},
  };
  return *kRules;
}

absl::StatusOr<PlaceDecision> PlaceOp(const OpDesc& op, int index, const PlacementContext& ctx) {
  for (const NamedPlacementRule& r : PlacementRules()) {
    ASSIGN_OR_RETURN(std::optional<PlaceDecision> decision, r.rule(op, index, ctx));
    if (!decision.has_value()) continue;
    absl::StatusOr<Device*> device = DeviceRegistry::Global().GetDevice(decision->place);
    if (!device.ok()) {
      const std::string by =
          decision->cause == PlacementCause::kGuard
              ? absl::StrCat("device_guard(\"", op.op_device, "\")")
              : absl::StrCat("rule '", r.name, "' on ", decision->place.ToString());
      return absl::Status(device.status().code(), absl::StrCat(OpName(op, index), " placed by ", by,
                                                               ": ", device.status().message()));
    }
    return *std::move(decision);
  }
  return absl::InternalError(absl::StrCat(OpName(op, index), ": no placement rule applied"));
}

absl::StatusOr<const KernelRegistration*> KernelWithFallback(const OpDesc& op, int index,
                                                             const PlacementContext& ctx,
                                                             PlaceDecision* decision) {
  const Block& block = ctx.program().block();
  auto var_dtype = [&](const std::string& var) -> std::optional<DataType> {
    const VarDesc* d = block.FindVar(var);
    if (d == nullptr) return std::nullopt;
    return d->dtype;
  };
  const Place requested = decision->place;
  absl::StatusOr<const KernelRegistration*> k =
      KernelRegistry::Global().FindForOp(op, requested.type(), var_dtype);
  if (k.ok()) return k;
  if (k.status().code() != absl::StatusCode::kNotFound) return k.status();
  if (ctx.options().strict || requested.is_host()) {
    return absl::NotFoundError(
        absl::StrCat(OpName(op, index), " on ", requested.ToString(), ": ", k.status().message()));
  }
  absl::StatusOr<const KernelRegistration*> cpu =
      KernelRegistry::Global().FindForOp(op, DeviceType::CPU(), var_dtype);
  if (!cpu.ok()) {
    return absl::NotFoundError(
        absl::StrCat(OpName(op, index), " has no kernel on ", requested.ToString(),
                     " nor on cpu; kernels present: ", KernelsPresent(op.type)));
  }
  LOG(WARNING) << OpName(op, index) << " has no kernel on " << requested.ToString()
               << " for its dtypes; it runs on cpu instead (kernels present: "
               << KernelsPresent(op.type) << ")";
  *decision = {CPUPlace(), PlacementCause::kFallback,
               absl::StrCat("no kernel on ", requested.ToString(), " (",
                            PlacementCauseName(decision->cause), "); fell back to cpu")};
  return cpu;
}

Place ArgumentPlace(const KernelRegistration& kernel, const std::string& arg,
                    const Place& op_place) {
  return kernel.def.IsHostMemory(arg) ? CPUPlace() : op_place;
}

}  // namespace tandem
