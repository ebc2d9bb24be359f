#include "framework/autoplace/optimizer_offload.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "framework/autoplace/memory_budget.h"
#include "framework/base/status_macros.h"
#include "framework/estimate/memory_estimate.h"
#include "framework/memory/allocator.h"

namespace tandem {
namespace {

constexpr char kPlanner[] = "optimizer offload";

// A parameter and the state its device update kernel keeps in device
// memory (Adam's moments; not the host scalars it reads as HostMemory):
// what moves together.
struct ParamGroup {
  std::string param;
  std::vector<std::string> vars;  // param first
  int first_reader = -1;          // index of the first op that reads the parameter
  int64_t bytes = 0;              // of every var
  int64_t param_bytes = 0;
};

int64_t VarBytes(const VarDesc& v) {
  const int64_t n = v.shape.num_elements();
  return n < 0 ? 0 : n * static_cast<int64_t>(SizeOf(v.dtype));
}

class OffloadPlanner {
 public:
  OffloadPlanner(const PlacerOptions& base, const PlacementRequest& request,
                 const OffloadOptions& options)
      : program_(request.program),
        base_(base),
        request_(request),
        options_(options),
        device_(base.default_place) {}

  absl::StatusOr<OffloadPlacement> Run();

 private:
  absl::Status FindGroups();
  // Whether the planner may choose `var`'s home: it lives on the host or on
  // the default device, or nowhere yet (a value on another device stays).
  bool Movable(const std::string& var) const {
    auto it = base_.initial_places.find(var);
    return it == base_.initial_places.end() || it->second.is_host() || it->second == device_;
  }
  // The device's estimated peak with the first `k` groups of the order on
  // the host and the others on the device.
  absl::StatusOr<int64_t> DevicePeak(int k);
  PlacerOptions OptionsWith(int k) const;
  // The prefix length `fraction` of the parameters' bytes asks for.
  int PrefixForFraction(double fraction) const;
  absl::StatusOr<int> PrefixForBudget();
  absl::Status NoFit(int64_t least) const;
  OffloadPlacement Result(int k);

  const Program& program_;
  const PlacerOptions& base_;
  const PlacementRequest& request_;
  const OffloadOptions& options_;
  const Place device_;
  int64_t budget_ = 0;
  std::vector<ParamGroup> groups_;  // last read first
  std::map<int, int64_t> peaks_;    // by prefix length, as estimated
};

absl::Status OffloadPlanner::FindGroups() {
  // Placed with every parameter on the device, to see which are read there
  // and which update-kernel arguments are device memory.
  PlacerOptions all_on_device = base_;
  const Block& block = program_.block();
  for (const OpDesc& op : block.ops()) {
    if (op.origin.kind != OpOrigin::Kind::kUpdateOf || !Movable(op.origin.var)) continue;
    for (const std::string& v : ArgumentVars(op.outputs)) {
      const VarDesc* d = block.FindVar(v);
      if (d != nullptr && d->persistable && Movable(v)) all_on_device.initial_places[v] = device_;
    }
  }
  ASSIGN_OR_RETURN(PlacedProgram placed, PlaceProgram(program_, all_on_device));
  std::map<std::string, int> first_reader;
  for (int i = 0; i < static_cast<int>(placed.table.size()); ++i) {
    if (placed.is_copy(i)) continue;
    for (const std::string& v : ArgumentVars(placed.program.block().ops()[i].inputs)) {
      first_reader.emplace(v, i);
    }
  }
  std::map<std::string, int> index;  // group by parameter
  for (int i = 0; i < static_cast<int>(placed.table.size()); ++i) {
    const OpDesc& op = placed.program.block().ops()[i];
    if (placed.is_copy(i) || op.origin.kind != OpOrigin::Kind::kUpdateOf) continue;
    auto reader = first_reader.find(op.origin.var);
    const VarDesc* param = block.FindVar(op.origin.var);
    if (param == nullptr || !param->persistable || !Movable(op.origin.var) ||
        reader == first_reader.end() || !(placed.places[reader->second] == device_) ||
        !(placed.places[i] == device_)) {
      continue;  // read on the host already, updated there by a rule, or on another device
    }
    // One group per parameter (a check_finite_and_unscale is placed as one of its updates).
    auto [at, added] = index.emplace(op.origin.var, static_cast<int>(groups_.size()));
    if (added) {
      groups_.push_back(
          {op.origin.var, {op.origin.var}, reader->second, VarBytes(*param), VarBytes(*param)});
    }
    ParamGroup& g = groups_[at->second];
    for (const auto& [arg, vars] : op.outputs) {
      const std::string in_arg = arg.substr(0, arg.size() - 3);  // "Moment1Out" -> "Moment1"
      if (arg == "ParamOut" || !absl::EndsWith(arg, "Out") ||
          (placed.kernels[i] != nullptr && placed.kernels[i]->def.IsHostMemory(in_arg))) {
        continue;
      }
      for (const std::string& v : vars) {
        const VarDesc* d = block.FindVar(v);
        if (d == nullptr || !d->persistable || !Movable(v) ||
            std::find(g.vars.begin(), g.vars.end(), v) != g.vars.end()) {
          continue;
        }
        g.vars.push_back(v);
        g.bytes += VarBytes(*d);
      }
    }
  }
  std::stable_sort(groups_.begin(), groups_.end(), [](const ParamGroup& a, const ParamGroup& b) {
    return a.first_reader > b.first_reader;
  });
  return absl::OkStatus();
}

PlacerOptions OffloadPlanner::OptionsWith(int k) const {
  PlacerOptions o = base_;
  for (int g = 0; g < static_cast<int>(groups_.size()); ++g) {
    for (const std::string& v : groups_[g].vars) o.initial_places[v] = g < k ? CPUPlace() : device_;
  }
  return o;
}

absl::StatusOr<int64_t> OffloadPlanner::DevicePeak(int k) {
  auto known = peaks_.find(k);
  if (known != peaks_.end()) return known->second;
  ASSIGN_OR_RETURN(PlacedProgram placed, PlaceProgram(program_, OptionsWith(k)));
  ASSIGN_OR_RETURN(
      MemoryEstimate m,
      EstimateMemory(placed, PlanMemoryOptions(placed, request_.feeds, request_.fetches,
                                               request_.feed_shapes, request_.in_order)));
  const PlaceMemory* p = m.Find(device_);
  int64_t peak = 0;
  if (p != nullptr) {
    peak = request_.in_order ? p->peak_bytes : p->pipelined_peak_bytes;
  }
  peaks_[k] = peak;
  return peak;
}

int OffloadPlanner::PrefixForFraction(double fraction) const {
  int64_t total = 0;
  for (const ParamGroup& g : groups_) total += g.param_bytes;
  int64_t taken = 0;
  int k = 0;
  while (k < static_cast<int>(groups_.size()) && taken < fraction * total) {
    taken += groups_[k++].param_bytes;
  }
  return k;
}

absl::StatusOr<int> OffloadPlanner::PrefixForBudget() {
  const int n = static_cast<int>(groups_.size());
  ASSIGN_OR_RETURN(int64_t none, DevicePeak(0));
  if (budget_ <= 0 || none <= budget_) return 0;
  ASSIGN_OR_RETURN(int64_t all, DevicePeak(n));
  if (all > budget_) return NoFit(all);
  int lo = 0, hi = n;  // peak(lo) > budget, peak(hi) <= budget
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    ASSIGN_OR_RETURN(int64_t peak, DevicePeak(mid));
    (peak <= budget_ ? hi : lo) = mid;
  }
  return hi;
}

absl::Status OffloadPlanner::NoFit(int64_t least) const {
  return absl::ResourceExhaustedError(absl::StrCat(
      kPlanner, ": the plan does not fit the memory budget of ", device_.ToString(), ", ", budget_,
      " bytes (", ShortBytes(budget_), "): with all ", groups_.size(),
      " parameters and their optimizer state in host memory it still needs an estimated ", least,
      " bytes (", ShortBytes(least),
      ") there (activations, 16-bit weights and gradients), "
      "the smallest budget that would fit (memory_budget_mb=",
      (least + (1 << 20) - 1) >> 20, "); a smaller batch or sequence needs less"));
}

OffloadPlacement OffloadPlanner::Result(int k) {
  OffloadPlacement r;
  r.parameters = static_cast<int>(groups_.size());
  r.offloaded = k;
  r.budget_bytes = budget_;
  r.device_peak_bytes = peaks_.count(k) ? peaks_[k] : 0;
  const std::string budget =
      budget_ > 0 ? absl::StrCat(" budget ", ShortBytes(budget_), ";") : std::string();
  for (int g = 0; g < static_cast<int>(groups_.size()); ++g) {
    const ParamGroup& p = groups_[g];
    const bool offloaded = g < k;
    for (const std::string& v : p.vars) r.homes[v] = offloaded ? CPUPlace() : device_;
    if (offloaded) r.offloaded_bytes += p.bytes;
    r.reasons[p.param] = absl::StrCat(
        offloaded ? "offloaded" : "kept on the device", " (", g + 1, " of ", groups_.size(),
        " last read first; it and its state ", ShortBytes(p.bytes), ";", budget, " est. peak ",
        ShortBytes(r.device_peak_bytes), " with ", k, " offloaded",
        k > 0 && peaks_.count(k - 1)
            ? absl::StrCat(", ", ShortBytes(peaks_[k - 1]), " with ", k - 1)
            : std::string(),
        ")");
  }
  std::vector<std::string> bounds;
  if (peaks_.count(0)) bounds.push_back(absl::StrCat("none offloaded ", ShortBytes(peaks_[0])));
  if (peaks_.count(r.parameters) && r.parameters > 0) {
    bounds.push_back(absl::StrCat("all ", ShortBytes(peaks_[r.parameters])));
  }
  r.summary = absl::StrCat(
      kPlanner, " on ", device_.ToString(), ":",
      options_.fraction.has_value() ? absl::StrFormat(" fraction %.2f;", *options_.fraction)
      : budget_ > 0                 ? budget
                                    : std::string(" no memory budget;"),
      " ", k, " of ", r.parameters, " parameters on the host (", ShortBytes(r.offloaded_bytes),
      " with their state), last read first; est. peak ", device_.ToString(), " ",
      ShortBytes(r.device_peak_bytes),
      bounds.empty() ? std::string() : absl::StrCat(" (", absl::StrJoin(bounds, ", "), ")"));
  return r;
}

absl::StatusOr<OffloadPlacement> OffloadPlanner::Run() {
  if (options_.fraction.has_value() && !(*options_.fraction >= 0 && *options_.fraction <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        kPlanner, ": the offloaded fraction must be in [0, 1], got ", *options_.fraction));
  }
  if (!options_.fraction.has_value()) {
    ASSIGN_OR_RETURN(budget_, ResolveMemoryBudget(device_, options_.budget_bytes, kPlanner));
  }
  if (device_.is_host()) return OffloadPlacement{};
  RETURN_IF_ERROR(FindGroups());
  if (groups_.empty()) return OffloadPlacement{};
  int k = 0;
  if (options_.fraction.has_value()) {
    k = PrefixForFraction(*options_.fraction);
  } else {
    ASSIGN_OR_RETURN(k, PrefixForBudget());
  }
  RETURN_IF_ERROR(DevicePeak(k).status());
  return Result(k);
}

class OffloadPlacementPlanner : public PlacementPlanner {
 public:
  explicit OffloadPlacementPlanner(OffloadOptions options) : options_(options) {}

  absl::Status Plan(const PlacementRequest& request, PlacerOptions* placer) override {
    ASSIGN_OR_RETURN(OffloadPlacement o, OffloadPlanner(*placer, request, options_).Run());
    for (const auto& [var, home] : o.homes) {
      auto now = placer->initial_places.find(var);
      if (now == placer->initial_places.end() || !(now->second == home)) {
        placer->homes[var] = home;
      }
      placer->initial_places[var] = home;
    }
    placer->home_reasons = std::move(o.reasons);
    placer->auto_summary = o.summary;
    return absl::OkStatus();
  }

 private:
  const OffloadOptions options_;
};

}  // namespace

absl::StatusOr<OffloadPlacement> PlanOffload(const PlacementRequest& request,
                                             const PlacerOptions& base,
                                             const OffloadOptions& options) {
  return OffloadPlanner(base, request, options).Run();
}

std::shared_ptr<PlacementPlanner> MakeOffloadPlanner(OffloadOptions options) {
  return std::make_shared<OffloadPlacementPlanner>(options);
}

}  // namespace tandem
