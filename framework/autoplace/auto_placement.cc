#include "framework/autoplace/auto_placement.h"

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "framework/autoplace/calibration.h"
#include "framework/autoplace/memory_budget.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/memory/allocator.h"
#include "glog/logging.h"

namespace tandem {
namespace {

constexpr int kMaxMemoryRounds = 64;
constexpr int kMaxTimeSweeps = 8;

std::string Micros(double us) {
  return us >= 1000 ? absl::StrFormat("%.2f ms", us / 1000) : absl::StrFormat("%.0f us", us);
}

// An op that reads nothing and writes only persistables (a startup op).
bool IsInitialiser(const Block& block, const OpDesc& op) {
  if (!op.inputs.empty() || op.outputs.empty()) return false;
  for (const std::string& v : ArgumentVars(op.outputs)) {
    const VarDesc* d = block.FindVar(v);
    if (d == nullptr || !d->persistable) return false;
  }
  return true;
}

// What an op costs like. A sparse update (an optimizer op whose Grad is
// SelectedRows) touches only the rows it updates: it costs like the dense
// update of those rows, so its parameter, its state and its gradient count
// with the gradient's rows.
OpArgMetas CostMetas(const OpDesc& op, const OpArgMetas& metas) {
  if (op.role != OpRole::kOptimize) return metas;
  auto grad = metas.inputs.find("Grad");
  if (grad == metas.inputs.end() || grad->second.size() != 1 || !grad->second[0].selected_rows) {
    return metas;
  }
  const TensorMeta& g = grad->second[0];
  auto bytes = metas.bytes.find(op.Input("Grad"));
  int64_t row_bytes = static_cast<int64_t>(SizeOf(g.dtype));
  for (int k = 1; k < g.shape.rank(); ++k) row_bytes *= std::max<int64_t>(g.shape.dim(k), 1);
  if (bytes == metas.bytes.end() || g.shape.rank() == 0) return metas;
  const int64_t rows = std::max<int64_t>(bytes->second / std::max<int64_t>(row_bytes, 1), 1);
  OpArgMetas out = metas;
  for (auto* args : {&out.inputs, &out.outputs}) {
    for (auto& [arg, list] : *args) {
      for (TensorMeta& m : list) {
        if (m.shape.rank() == 0 || m.shape.dim(0) != g.shape.dim(0)) continue;
        std::vector<int64_t> dims(m.shape.dims().begin(), m.shape.dims().end());
        dims[0] = rows;
        m = {m.dtype, Shape(dims), false};
      }
    }
  }
  return out;
}

// Simulated clocks of the host and each device's compute and copy streams.
struct Clocks {
  double host = 0;
  std::map<Place, double> compute, copy;
  std::map<std::string, double> ready;  // when each variable's value is available

  double Ready(const OpDesc& op) {
    double t = 0;
    for (const std::string& v : ArgumentVars(op.inputs)) t = std::max(t, ready[v]);
    return t;
  }
  double End() const {
    double t = host;
    for (const auto* m : {&compute, &copy}) {
      for (const auto& [p, c] : *m) t = std::max(t, c);
    }
    return t;
  }
};

// The step-time simulation of EstimateStepMicros, with each op's cost and
// each copy's bytes given per placed op. A device op first takes its host
// part on the host (OpCost::host_micros: the launch and the kernel's host
// work), then the rest on its stream, after the stream's earlier work: the
// host goes on to the next op meanwhile (in order, it waits for the op).
double SimulateStep(const PlacedProgram& placed, const std::vector<OpCost>& op_costs,
                    const std::vector<int64_t>& copy_bytes, CostModel* costs, bool in_order) {
  Clocks c;
  const std::vector<OpDesc>& ops = placed.program.block().ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpDesc& op = ops[i];
    const Place place = placed.places[i];
    const double ready = in_order ? c.End() : c.Ready(op);
    double end = 0;
    if (placed.table[i].copy.has_value()) {
      const bool to_host = placed.table[i].copy->to.is_host();
      double& stream = to_host ? c.copy[place] : c.compute[place];
      end = std::max({stream, ready, c.host}) +
            costs->CopyMicros(place, to_host ? CopyKind::kDeviceToHost : CopyKind::kHostToDevice,
                              copy_bytes[i], to_host);
      stream = end;
      if (in_order && to_host) c.host = end;
    } else if (place.is_host()) {
      end = c.host = std::max(c.host, ready) + op_costs[i].micros;
    } else {
      const double host = std::min(op_costs[i].host_micros, op_costs[i].micros);
      double& stream = c.compute[place];
      end = stream = std::max({stream, ready, c.host + host}) + op_costs[i].micros - host;
      c.host = in_order ? end : c.host + host;
    }
    for (const std::string& v : ArgumentVars(op.outputs)) c.ready[v] = end;
  }
  double run = 0;  // the run's fixed cost: the largest of its places'
  for (const Place& p : placed.places) run = std::max(run, costs->Constants(p).run_us);
  return c.End() + run;
}

// One value of a variable between two writes.
struct Version {
  std::string var;
  int producer = -1;  // op index; -1: it exists before the run
  std::string producer_arg;
  int64_t bytes = 0;
  std::vector<std::pair<int, std::string>> readers;  // (op, argument)
  bool fetched = false;
  int persistable = -1;        // the persistable it is the starting value of
  std::map<Place, int> wants;  // readers per place they read it on, now
};

struct Persistable {
  std::string var;
  int64_t bytes = 0;
  int first_reader = -1;
  std::string first_arg;
  int start_version = -1, end_version = -1;
  Place now;  // where it is before the plan runs
};

// A unit: a user op and the ops whose place derives from it.
struct Unit {
  int op = -1;
  std::vector<int> ops;           // in program order, `op` first
  std::vector<int> versions;      // whose cost the unit's place changes
  std::vector<int> persistables;  // whose home or write-back it changes
  bool on_device = true;
  bool for_memory = false;  // moved to the CPU to fit the budget
  std::string memory_reason;
};

class AutoPlanner {
 public:
  AutoPlanner(const Program& program, const PlacerOptions& base,
              const AutoPlacementOptions& options, CostModel* costs)
      : program_(program),
        block_(program.block()),
        base_(base),
        options_(options),
        costs_(costs),
        device_(base.default_place) {}

  absl::StatusOr<AutoPlacement> Run();

 private:
  absl::Status Init();
  absl::Status FindUnits(const PlacedProgram& base_placed);
  absl::Status ComputeOpCosts();
  void BuildVersions();
  void CollectAffected();
  const KernelRegistration* Kernel(int op, const Place& place);
  Place Requested(int op) const;
  void Recompute(const Unit& unit);
  // Refreshes where op `op` reads each of its inputs (Version::wants).
  void UpdateWants(int op);
  Place Want(int op, const std::string& arg);
  Place Loc(int version);
  Place Home(int persistable);
  double CopyMicros(const Place& from, const Place& to, int64_t bytes);
  double VersionCost(int version, int* copies);
  double WriteBackCost(int persistable, int* copies);
  double UnitCost(const Unit& unit, int* copies);
  // Flips `unit` and returns the change of the estimated time; flipped
  // back unless `keep`.
  double Flip(Unit* unit, bool keep, int* copies_delta = nullptr);
  void TimePass();
  absl::Status MemoryPass();
  absl::StatusOr<PlacedProgram> PlaceNow();
  PlacerOptions OptionsNow() const;
  // Where the variables start: the executor's places, the persistables at their homes.
  std::map<std::string, Place> InitialPlacesNow();
  // The values live at the estimated peak of the device for the current
  // places (memory_'s variables with their bytes, largest first).
  struct DevicePeak {
    int64_t bytes = 0;
    std::vector<std::pair<int, int64_t>> live;
  };
  DevicePeak EstimateDevicePeak();
  // The unit that owns variable `var` of memory_ (-1: none): a
  // persistable's first reader's, a copy's consumer's, any other value's
  // first producer's.
  int Owner(int var) const;
  void FindOwners();
  // ResourceExhausted when the budget cannot be met; OK if the plan fits.
  absl::Status NoFit();
  std::string Reason(Unit* unit);
  std::string Summary(const PlacedProgram& placed, double step);
  // EstimateStepMicros with the ops' costs the planner has.
  double StepMicros(const PlacedProgram& placed);

  const Program& program_;
  const Block& block_;
  const PlacerOptions& base_;
  const AutoPlacementOptions& options_;
  CostModel* costs_;
  const Place device_;
  int64_t budget_ = 0;
  int64_t device_peak_ = 0;  // the memory pass's last estimate of the device's peak
  std::vector<OpArgMetas> metas_;
  std::vector<Place> place_;                 // per op, now
  std::vector<int> unit_of_;                 // per op: its unit, -1 fixed
  std::vector<std::array<OpCost, 2>> cost_;  // per op: on cpu, on the device
  std::vector<bool> device_kernel_;          // per op: has a kernel on the device
  std::map<std::pair<int, DeviceType>, const KernelRegistration*> kernels_;
  // Kernel(op, cpu) and Kernel(op, device), looked up once.
  std::vector<std::array<const KernelRegistration*, 2>> cpu_device_kernels_;
  std::vector<Unit> units_;
  std::map<int, AutoChoice> fixed_choices_;  // initialisers
  std::vector<Version> versions_;
  std::vector<Persistable> persistables_;
  std::vector<std::map<std::string, int>> reads_;  // per op: var -> version read
  // Per op: each (version, argument) it reads and where it reads it now.
  struct Read {
    int version;
    std::string arg;
    Place want;
  };
  std::vector<std::vector<Read>> read_list_;
  std::unique_ptr<PlacementMemory> memory_;  // with a budget: the memory rounds' estimates
  std::map<std::string, int> owners_;        // program variable -> its unit (see Owner)
};

const KernelRegistration* AutoPlanner::Kernel(int op, const Place& place) {
  if (op < static_cast<int>(cpu_device_kernels_.size())) {
    if (place.is_host()) return cpu_device_kernels_[op][0];
    if (place.type() == device_.type()) return cpu_device_kernels_[op][1];
  }
  auto [it, inserted] = kernels_.try_emplace({op, place.type()}, nullptr);
  if (inserted) {
    const OpDesc& o = block_.ops()[op];
    auto dtype = [&](const std::string& var) -> std::optional<DataType> {
      const VarDesc* d = block_.FindVar(var);
      return d == nullptr ? std::nullopt : std::optional<DataType>(d->dtype);
    };
    absl::StatusOr<const KernelRegistration*> k =
        KernelRegistry::Global().FindForOp(o, place.type(), dtype);
    it->second = k.ok() ? *k : nullptr;
  }
  return it->second;
}

absl::Status AutoPlanner::FindUnits(const PlacedProgram& base_placed) {
  const int n = static_cast<int>(block_.ops().size());
  place_.assign(n, device_);
  unit_of_.assign(n, -1);
  absl::flat_hash_map<std::string, int> writer, first_reader;
  for (int i = 0; i < static_cast<int>(base_placed.source_ops.size()); ++i) {
    if (base_placed.source_ops[i] >= 0) place_[base_placed.source_ops[i]] = base_placed.places[i];
  }
  for (int i = 0; i < n; ++i) {
    const OpDesc& op = block_.ops()[i];
    int ref = -1;  // the op whose unit this op follows
    if (!op.op_device.empty()) {
      ref = -1;
    } else if (op.origin.kind == OpOrigin::Kind::kUser && !fixed_choices_.count(i)) {
      unit_of_[i] = static_cast<int>(units_.size());
      units_.push_back(Unit{i, {i}});
    } else if (op.origin.kind == OpOrigin::Kind::kGradOf ||
               op.origin.kind == OpOrigin::Kind::kLossGradOf ||
               op.origin.kind == OpOrigin::Kind::kRecomputeOf) {
      ref = op.origin.op;
    } else if ((op.origin.kind == OpOrigin::Kind::kGradSumOf ||
                op.origin.kind == OpOrigin::Kind::kGradNormOf) &&
               writer.count(op.origin.var)) {
      ref = writer[op.origin.var];
    } else if (op.origin.kind == OpOrigin::Kind::kUpdateOf && first_reader.count(op.origin.var)) {
      ref = first_reader[op.origin.var];
    }
    if (ref >= 0 && ref < i && unit_of_[ref] >= 0) {
      unit_of_[i] = unit_of_[ref];
      units_[unit_of_[i]].ops.push_back(i);
    }
    for (const std::string& v : ArgumentVars(op.inputs)) first_reader.emplace(v, i);
    for (const std::string& v : ArgumentVars(op.outputs)) writer[v] = i;
  }
  return absl::OkStatus();
}

absl::Status AutoPlanner::ComputeOpCosts() {
  const int n = static_cast<int>(block_.ops().size());
  std::vector<std::array<const KernelRegistration*, 2>> kernels(n);
  for (int i = 0; i < n; ++i) kernels[i] = {Kernel(i, CPUPlace()), Kernel(i, device_)};
  cpu_device_kernels_ = std::move(kernels);
  cost_.assign(n, {0, 0});
  device_kernel_.assign(n, false);
  for (int i = 0; i < n; ++i) {
    if (unit_of_[i] < 0) continue;  // fixed: its cost is the same whatever the units do
    const OpDesc& op = block_.ops()[i];
    device_kernel_[i] = Kernel(i, device_) != nullptr;
    const OpArgMetas m = CostMetas(op, metas_[i]);
    std::array<OpCost, 2> c;
    for (int d = 0; d < 2; ++d) {
      if (d == 1 && !device_kernel_[i]) {
        c[1] = c[0];
        continue;
      }
      ASSIGN_OR_RETURN(c[d],
                       costs_->OpTime(op, d == 0 ? CPUPlace() : device_, m.inputs, m.outputs));
    }
    // Timed on one side only (too large to try on the other): the other
    // side's time is the timed one scaled by the two measured bandwidths,
    // which knows how much of its inputs the kernel really reads.
    if (c[0].measured != c[1].measured) {
      const int timed = c[0].measured ? 0 : 1;
      const double bw_timed = costs_->Constants(timed == 0 ? CPUPlace() : device_).bytes_per_us;
      const double bw_other = costs_->Constants(timed == 0 ? device_ : CPUPlace()).bytes_per_us;
      c[1 - timed].micros = c[timed].micros * bw_timed / bw_other;
      c[1 - timed].host_micros = timed == 0 ? costs_->Constants(device_).launch_us : c[0].micros;
    }
    cost_[i] = c;
  }
  return absl::OkStatus();
}

void AutoPlanner::BuildVersions() {
  absl::flat_hash_map<std::string, int> current, persistable_of;
  reads_.assign(block_.ops().size(), {});
  read_list_.assign(block_.ops().size(), {});
  auto start_version = [&](const std::string& var, int reader) {
    Version v{var};
    const VarDesc* d = block_.FindVar(var);
    auto bytes = metas_[reader].bytes.find(var);
    v.bytes = bytes == metas_[reader].bytes.end() ? 0 : bytes->second;
    if (d != nullptr && d->persistable) {
      v.persistable = static_cast<int>(persistables_.size());
      Persistable p{var, v.bytes, -1, "", static_cast<int>(versions_.size())};
      auto now = base_.initial_places.find(var);
      p.now = now == base_.initial_places.end() ? device_ : now->second;
      persistables_.push_back(p);
      persistable_of[var] = v.persistable;
    }
    versions_.push_back(v);
    return current[var] = static_cast<int>(versions_.size()) - 1;
  };
  for (int i = 0; i < static_cast<int>(block_.ops().size()); ++i) {
    const OpDesc& op = block_.ops()[i];
    for (const auto& [arg, vars] : op.inputs) {
      for (const std::string& var : vars) {
        auto it = current.find(var);
        const int v = it == current.end() ? start_version(var, i) : it->second;
        versions_[v].readers.emplace_back(i, arg);
        reads_[i][var] = v;
        read_list_[i].push_back({v, arg, place_[i]});
        if (versions_[v].persistable >= 0 &&
            persistables_[versions_[v].persistable].first_reader < 0) {
          persistables_[versions_[v].persistable].first_reader = i;
          persistables_[versions_[v].persistable].first_arg = arg;
        }
      }
    }
    for (const auto& [arg, vars] : op.outputs) {
      for (const std::string& var : vars) {
        Version v{var, i, arg, metas_[i].bytes[var]};
        versions_.push_back(v);
        current[var] = static_cast<int>(versions_.size()) - 1;
      }
    }
  }
  for (const std::string& f : options_.fetches) {
    if (current.count(f)) versions_[current[f]].fetched = true;
  }
  for (Persistable& p : persistables_) p.end_version = current[p.var];
}

void AutoPlanner::CollectAffected() {
  for (int v = 0; v < static_cast<int>(versions_.size()); ++v) {
    const int producer = versions_[v].producer;
    if (producer >= 0 && unit_of_[producer] >= 0) units_[unit_of_[producer]].versions.push_back(v);
  }
  for (int p = 0; p < static_cast<int>(persistables_.size()); ++p) {
    const Persistable& q = persistables_[p];
    const int end_producer = versions_[q.end_version].producer;
    for (int op : {q.first_reader, end_producer}) {
      if (op >= 0 && unit_of_[op] >= 0) units_[unit_of_[op]].persistables.push_back(p);
    }
  }
  for (Unit& u : units_) {
    for (int i : u.ops) {
      for (const auto& [var, v] : reads_[i]) u.versions.push_back(v);
    }
    for (std::vector<int>* list : {&u.versions, &u.persistables}) {
      std::sort(list->begin(), list->end());
      list->erase(std::unique(list->begin(), list->end()), list->end());
    }
  }
}

// Where op `op` asks to run now, before its own kernel check (the placer's
// rules: a unit's op its unit's choice, a derived op the place of the op it
// derives from).
Place AutoPlanner::Requested(int op) const {
  const OpDesc& o = block_.ops()[op];
  const Unit& u = units_[unit_of_[op]];
  if (u.op == op) return u.on_device ? device_ : CPUPlace();
  if (o.origin.kind == OpOrigin::Kind::kGradOf || o.origin.kind == OpOrigin::Kind::kLossGradOf ||
      o.origin.kind == OpOrigin::Kind::kRecomputeOf) {
    return place_[o.origin.op];
  }
  // A sum where its partial was last produced (a clip norm where its
  // gradient was), an update where its parameter is first read: ops of the
  // same unit, placed before this one.
  const bool sum =
      o.origin.kind == OpOrigin::Kind::kGradSumOf || o.origin.kind == OpOrigin::Kind::kGradNormOf;
  int found = -1;
  for (int i : u.ops) {
    if (i >= op || (!sum && found >= 0)) break;
    const OpDesc& p = block_.ops()[i];
    const std::vector<std::string> vars = sum ? ArgumentVars(p.outputs) : ArgumentVars(p.inputs);
    if (std::count(vars.begin(), vars.end(), o.origin.var)) found = i;
  }
  if (found >= 0) return place_[found];
  return u.on_device ? device_ : CPUPlace();
}

void AutoPlanner::Recompute(const Unit& unit) {
  for (int i : unit.ops) {
    const Place want = Requested(i);
    place_[i] = want.is_host() || device_kernel_[i] ? want : CPUPlace();
    UpdateWants(i);
  }
}

void AutoPlanner::UpdateWants(int op) {
  for (Read& r : read_list_[op]) {
    const Place now = Want(op, r.arg);
    if (now == r.want) continue;
    std::map<Place, int>& wants = versions_[r.version].wants;
    if (--wants[r.want] == 0) wants.erase(r.want);
    ++wants[now];
    r.want = now;
  }
}

Place AutoPlanner::Want(int op, const std::string& arg) {
  const KernelRegistration* k = Kernel(op, place_[op]);
  return k != nullptr && k->def.IsHostMemory(arg) ? CPUPlace() : place_[op];
}

Place AutoPlanner::Home(int p) {
  const Persistable& q = persistables_[p];
  if (!options_.move_persistables || q.first_reader < 0) return q.now;
  for (const Read& r : read_list_[q.first_reader]) {
    if (r.arg == q.first_arg && r.version == q.start_version) return r.want;
  }
  return Want(q.first_reader, q.first_arg);
}

Place AutoPlanner::Loc(int version) {
  const Version& v = versions_[version];
  if (v.producer >= 0) return Want(v.producer, v.producer_arg);  // Want also reads outputs' memory
  if (v.persistable >= 0) return Home(v.persistable);
  auto it = base_.initial_places.find(v.var);
  return it == base_.initial_places.end() ? CPUPlace() : it->second;
}

double AutoPlanner::CopyMicros(const Place& from, const Place& to, int64_t bytes) {
  if (from == to) return 0;
  if (from.is_host()) return costs_->CopyMicros(to, CopyKind::kHostToDevice, bytes, false);
  const double down = costs_->CopyMicros(from, CopyKind::kDeviceToHost, bytes, true);
  return to.is_host() ? down : down + costs_->CopyMicros(to, CopyKind::kHostToDevice, bytes, false);
}

double AutoPlanner::VersionCost(int version, int* copies) {
  const Version& v = versions_[version];
  const Place loc = Loc(version);
  double micros = 0;
  bool host_read = false;
  for (const auto& [w, readers] : v.wants) {
    host_read |= w.is_host();
    if (w == loc) continue;
    micros += CopyMicros(loc, w, v.bytes);
    ++*copies;
  }
  if (v.fetched && !host_read && !loc.is_host()) {
    micros += CopyMicros(loc, CPUPlace(), v.bytes);
    ++*copies;
  }
  return micros;
}

double AutoPlanner::WriteBackCost(int p, int* copies) {
  const Persistable& q = persistables_[p];
  if (q.end_version == q.start_version) return 0;
  const Place end = Loc(q.end_version);
  const Place home = Home(p);
  if (end == home) return 0;
  ++*copies;
  return CopyMicros(end, home, q.bytes);
}

double AutoPlanner::UnitCost(const Unit& unit, int* copies) {
  double micros = 0;
  for (int i : unit.ops) micros += cost_[i][place_[i].is_host() ? 0 : 1].micros;
  for (int v : unit.versions) micros += VersionCost(v, copies);
  for (int p : unit.persistables) micros += WriteBackCost(p, copies);
  return micros;
}

double AutoPlanner::Flip(Unit* unit, bool keep, int* copies_delta) {
  int before_copies = 0, after_copies = 0;
  const double before = UnitCost(*unit, &before_copies);
  unit->on_device = !unit->on_device;
  Recompute(*unit);
  const double delta = UnitCost(*unit, &after_copies) - before;
  if (copies_delta != nullptr) *copies_delta = after_copies - before_copies;
  if (!keep) {
    unit->on_device = !unit->on_device;
    Recompute(*unit);
  }
  return delta;
}

// A unit leaves the device for time only when that removes copies as well:
// kernels alone are left where the device is (sim's serial kernels can be
// slower than the CPU's, a GPU's are not), transfers are what the pass
// saves. Units never return to the device over a budget.
void AutoPlanner::TimePass() {
  for (int sweep = 0; sweep < kMaxTimeSweeps; ++sweep) {
    bool improved = false;
    for (Unit& u : units_) {
      if (u.for_memory || (budget_ > 0 && !u.on_device)) continue;
      int copies = 0;
      const double delta = Flip(&u, false, &copies);
      if (delta < -1e-9 && (copies < 0 || !u.on_device)) {
        Flip(&u, true);
        improved = true;
      }
    }
    if (!improved) return;
  }
}

PlacerOptions AutoPlanner::OptionsNow() const {
  PlacerOptions o = base_;
  o.auto_places = fixed_choices_;
  for (const Unit& u : units_) o.auto_places[u.op] = {u.on_device ? device_ : CPUPlace(), ""};
  return o;
}

std::map<std::string, Place> AutoPlanner::InitialPlacesNow() {
  std::map<std::string, Place> initial = base_.initial_places;
  // Persistables start at their homes: the plan moves them there once.
  for (int p = 0; p < static_cast<int>(persistables_.size()); ++p) {
    initial[persistables_[p].var] = Home(p);
  }
  return initial;
}

absl::StatusOr<PlacedProgram> AutoPlanner::PlaceNow() {
  PlacerOptions o = OptionsNow();
  o.initial_places = InitialPlacesNow();
  return PlaceProgram(program_, o);
}

void AutoPlanner::FindOwners() {
  for (const Persistable& q : persistables_) {
    if (q.first_reader >= 0) owners_[q.var] = unit_of_[q.first_reader];
  }
  for (int i = 0; i < static_cast<int>(block_.ops().size()); ++i) {
    for (const std::string& v : ArgumentVars(block_.ops()[i].outputs))
      owners_.emplace(v, unit_of_[i]);
  }
}

int AutoPlanner::Owner(int var) const {
  const int consumer = memory_->Consumer(var);
  if (consumer >= 0) return unit_of_[consumer];
  auto it = owners_.find(memory_->Name(var));
  return it == owners_.end() ? -1 : it->second;
}

AutoPlanner::DevicePeak AutoPlanner::EstimateDevicePeak() {
  std::vector<const KernelRegistration*> kernels(place_.size());
  for (int i = 0; i < static_cast<int>(place_.size()); ++i) kernels[i] = Kernel(i, place_[i]);
  const MemoryWalkResult& walk = memory_->Estimate(place_, kernels, InitialPlacesNow());
  const int slot = memory_->Slot(device_);
  DevicePeak peak;
  if (slot < 0 || !walk.peak[slot].seen) return peak;
  peak.bytes = walk.peak[slot].bytes;
  int op = walk.peak[slot].op, other_op = -2;  // -2: no second run
  // Concurrent plans may pipeline (two runs in flight): their budget holds both.
  if (!walk.pipelined.empty() && walk.pipelined[slot].bytes > peak.bytes) {
    peak.bytes = walk.pipelined[slot].bytes;
    op = walk.pipelined[slot].op;
    other_op = walk.pipelined[slot].other_op;
  }
  for (const MemoryWalkResult::Value& v : walk.values) {
    if (v.place != slot) continue;
    if (v.live_at(op)) peak.live.emplace_back(v.var, v.bytes);
    if (other_op >= -1 && !SharedAcrossRuns(v.category) && v.live_at(other_op))
      peak.live.emplace_back(v.var, v.bytes);
  }
  std::stable_sort(peak.live.begin(), peak.live.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return peak;
}

// Each round estimates the current placement without placing it
// (PlacementMemory: the placer's copies and EstimateMemory's walk, exact).
absl::Status AutoPlanner::MemoryPass() {
  if (budget_ <= 0) return absl::OkStatus();
  for (int round = 0; round < kMaxMemoryRounds; ++round) {
    const DevicePeak peak = EstimateDevicePeak();
    device_peak_ = peak.bytes;
    if (peak.bytes <= budget_) return absl::OkStatus();
    std::map<int, int64_t> owned;
    std::map<int, LiveValue> largest;
    for (const auto& [var, bytes] : peak.live) {
      const int u = Owner(var);
      if (u < 0 || !units_[u].on_device) continue;
      owned[u] += bytes;
      if (bytes > largest[u].bytes) largest[u] = {memory_->Name(var), bytes};
    }
    if (owned.empty()) break;
    // Time added per byte saved, each move counted at least 1 us so that
    // no move is free: the biggest savings per cost first.
    std::vector<std::pair<double, int>> order;
    for (const auto& [u, bytes] : owned) {
      order.emplace_back((std::max(Flip(&units_[u], false), 0.0) + 1) / bytes, u);
    }
    std::sort(order.begin(), order.end());
    int64_t saved = 0;
    for (const auto& [ratio, u] : order) {
      if (saved >= peak.bytes - budget_) break;
      Flip(&units_[u], true);
      units_[u].for_memory = true;
      units_[u].memory_reason =
          absl::StrCat("'", largest[u].var, "' ", ShortBytes(largest[u].bytes),
                       " does not fit the ", ShortBytes(budget_), " budget of ", device_.ToString(),
                       " (est. peak ", ShortBytes(peak.bytes), " with it there)");
      saved += owned[u];
    }
  }
  return NoFit();
}

absl::Status AutoPlanner::NoFit() {
  for (Unit& u : units_) {
    if (u.on_device) Flip(&u, true);
  }
  const DevicePeak peak = EstimateDevicePeak();
  const int64_t least = peak.bytes;
  if (least <= budget_) {
    return absl::InternalError(absl::StrCat("auto placement on ", device_.ToString(),
                                            " did not converge within ", kMaxMemoryRounds,
                                            " rounds"));
  }
  std::vector<std::string> largest;
  for (const auto& [var, bytes] : peak.live) {
    const std::string name = memory_->Name(var);
    const VarDesc* d = block_.FindVar(name);
    if (d == nullptr || !d->persistable || largest.size() == 3) continue;
    largest.push_back(absl::StrCat("'", name, "' ", ShortBytes(bytes)));
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "auto placement: the plan does not fit the memory budget of ", device_.ToString(), ", ",
      budget_, " bytes (", ShortBytes(budget_),
      "): with every op that is not pinned on the cpu it still needs an estimated ", least,
      " bytes (", ShortBytes(least),
      ") there, the smallest budget that would fit (memory_budget_mb=",
      (least + (1 << 20) - 1) >> 20,
      "); largest persistables there: ", largest.empty() ? "none" : absl::StrJoin(largest, ", "),
      " (kept there by ops pinned to it with device_guard)"));
}

double AutoPlanner::StepMicros(const PlacedProgram& placed) {
  const std::vector<OpDesc>& ops = placed.program.block().ops();
  std::vector<OpCost> op_costs(ops.size());
  std::vector<int64_t> copy_bytes(ops.size(), 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::optional<CopyStep>& copy = placed.table[i].copy;
    const int consumer = copy.has_value() ? copy->consumer : static_cast<int>(i);
    const int src = consumer >= 0 ? placed.source_ops[consumer] : -1;
    if (copy.has_value()) {
      auto bytes = src >= 0 ? metas_[src].bytes.find(copy->var) : metas_[0].bytes.end();
      if (src >= 0 && bytes != metas_[src].bytes.end()) copy_bytes[i] = bytes->second;
      for (const Persistable& q : src < 0 ? persistables_ : std::vector<Persistable>{}) {
        if (q.var == copy->var) copy_bytes[i] = q.bytes;  // a write-back
      }
      continue;
    }
    if (unit_of_[src] >= 0) {
      op_costs[i] = cost_[src][placed.places[i].is_host() ? 0 : 1];
      continue;
    }
    const OpArgMetas m = CostMetas(ops[i], metas_[src]);
    absl::StatusOr<OpCost> cost = costs_->OpTime(ops[i], placed.places[i], m.inputs, m.outputs);
    if (cost.ok()) op_costs[i] = *cost;
  }
  return SimulateStep(placed, op_costs, copy_bytes, costs_, options_.in_order);
}

std::string AutoPlanner::Reason(Unit* unit) {
  int copies_now = 0, copies_other = 0;
  const double now = UnitCost(*unit, &copies_now);
  const double delta = Flip(unit, true);
  const double other = now + delta;
  UnitCost(*unit, &copies_other);
  Flip(unit, true);
  const double on_dev = unit->on_device ? now : other;
  const double on_cpu = unit->on_device ? other : now;
  const int copies_dev = unit->on_device ? copies_now : copies_other;
  const int copies_cpu = unit->on_device ? copies_other : copies_now;
  const std::string type = block_.ops()[unit->op].type;
  const std::string dev = absl::StrCat("on ", device_.ToString(), " est. ", Micros(on_dev), " (",
                                       copies_dev, " copies)");
  const std::string cpu =
      absl::StrCat("on cpu est. ", Micros(on_cpu), " (", copies_cpu, " copies)");
  if (unit->for_memory) return absl::StrCat(unit->memory_reason, "; '", type, "' ", cpu, ", ", dev);
  return unit->on_device ? absl::StrCat(dev, "; ", cpu) : absl::StrCat(cpu, "; ", dev);
}

std::string AutoPlanner::Summary(const PlacedProgram& placed, double step) {
  int on_cpu = 0, for_memory = 0;
  for (const Unit& u : units_) {
    on_cpu += !u.on_device;
    for_memory += u.for_memory;
  }
  return absl::StrCat(
      "auto placement on ", device_.ToString(), " (",
      budget_ > 0
          ? absl::StrCat("budget ", ShortBytes(budget_), ", est. peak ", ShortBytes(device_peak_))
          : std::string("no memory budget"),
      "): est. step ", Micros(step), "; ", placed.num_copies, " copies per step; ", on_cpu, " of ",
      units_.size(), " unpinned ops on cpu (", for_memory, " to fit the budget)");
}

absl::Status AutoPlanner::Init() {
  ASSIGN_OR_RETURN(budget_, ResolveMemoryBudget(device_, options_.budget_bytes, "auto placement"));
  metas_ = ResolveArgMetas(program_, options_.feed_shapes);
  // Initialisers run on the host whatever the units do; the ops whose
  // places derive from theirs (optimizer state) follow them.
  for (int i = 0; i < static_cast<int>(block_.ops().size()); ++i) {
    const OpDesc& op = block_.ops()[i];
    if (op.op_device.empty() && op.origin.kind == OpOrigin::Kind::kUser &&
        IsInitialiser(block_, op)) {
      fixed_choices_[i] = {CPUPlace(),
                           "initialiser: runs on the host; each plan moves what it writes to "
                           "where the plan keeps it"};
    }
  }
  PlacerOptions base = base_;
  base.auto_places = fixed_choices_;
  ASSIGN_OR_RETURN(PlacedProgram placed, PlaceProgram(program_, base));
  RETURN_IF_ERROR(FindUnits(placed));
  RETURN_IF_ERROR(ComputeOpCosts());
  BuildVersions();
  CollectAffected();
  for (int i = 0; i < static_cast<int>(read_list_.size()); ++i) {
    for (Read& r : read_list_[i]) {
      r.want = Want(i, r.arg);
      ++versions_[r.version].wants[r.want];
    }
  }
  for (const Unit& u : units_) Recompute(u);
  if (budget_ > 0) {
    std::set<Place> places(placed.places.begin(), placed.places.end());
    places.insert(device_);
    memory_ = std::make_unique<PlacementMemory>(
        program_,
        PlanMemoryOptions(places, options_.feeds, options_.fetches, options_.feed_shapes,
                          options_.in_order),
        metas_);
    FindOwners();
  }
  return absl::OkStatus();
}

absl::StatusOr<AutoPlacement> AutoPlanner::Run() {
  RETURN_IF_ERROR(Init());
  TimePass();
  RETURN_IF_ERROR(MemoryPass());
  AutoPlacement result;
  result.budget_bytes = budget_;
  result.choices = fixed_choices_;
  for (Unit& u : units_) result.choices[u.op] = {u.on_device ? device_ : CPUPlace(), Reason(&u)};
  ASSIGN_OR_RETURN(PlacedProgram placed, PlaceNow());
  for (const Persistable& q : persistables_) {
    auto home = placed.initial_places.find(q.var);
    if (home != placed.initial_places.end() && !(home->second == q.now)) {
      result.homes[q.var] = home->second;
    }
  }
  result.step_micros = StepMicros(placed);
  result.copies_per_step = placed.num_copies;
  result.summary = Summary(placed, result.step_micros);
  return result;
}

// The process's cost models, one per options (kept so that measurements
// are made once per process). Called under AutoPlacer::Plan's lock only.
CostModel* SharedCostModel(const std::string& cache_dir, bool measure) {
  static auto* models = new std::map<std::pair<std::string, bool>, std::unique_ptr<CostModel>>();
  std::unique_ptr<CostModel>& m = (*models)[{cache_dir, measure}];
  if (m == nullptr) {
    m = std::make_unique<CostModel>(CostModelOptions{
        .cache_dir = cache_dir, .measure = measure, .time_dispatch = TimeExecutorDispatch});
  }
  return m.get();
}

class AutoPlacer : public PlacementPlanner {
 public:
  explicit AutoPlacer(AutoPlacerOptions options) : options_(std::move(options)) {}

  absl::Status Plan(const PlacementRequest& request, PlacerOptions* placer) override {
    static std::mutex mu;  // one planner at a time: the cost models are not thread-safe
    std::lock_guard<std::mutex> lock(mu);
    CostModel* costs = SharedCostModel(options_.cost_cache_dir, options_.measure_costs);
    const AutoPlacementOptions auto_options{options_.budget_bytes, request.feeds,
                                            request.fetches,       request.feed_shapes,
                                            request.in_order,      options_.move_persistables};
    ASSIGN_OR_RETURN(AutoPlacement a, AutoPlace(request.program, *placer, auto_options, costs));
    placer->auto_places = a.choices;
    placer->homes = a.homes;
    for (const auto& [var, home] : a.homes) placer->initial_places[var] = home;
    placer->auto_summary = a.summary;
    placer->auto_step_micros = a.step_micros;
    if (absl::Status saved = costs->Save(); !saved.ok()) {
      LOG(WARNING) << "auto placement: the cost cache was not saved: " << saved;
    }
    return absl::OkStatus();
  }

 private:
  const AutoPlacerOptions options_;
};

}  // namespace

absl::StatusOr<AutoPlacement> AutoPlace(const Program& program, const PlacerOptions& base,
                                        const AutoPlacementOptions& options, CostModel* costs) {
  return AutoPlanner(program, base, options, costs).Run();
}

std::shared_ptr<PlacementPlanner> MakeAutoPlacer(AutoPlacerOptions options) {
  return std::make_shared<AutoPlacer>(std::move(options));
}

double EstimateStepMicros(const PlacedProgram& placed, const std::vector<OpArgMetas>& metas,
                          CostModel* costs, bool in_order) {
  const std::vector<OpDesc>& ops = placed.program.block().ops();
  std::vector<OpCost> op_costs(ops.size());
  std::vector<int64_t> copy_bytes(ops.size(), 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    if (placed.table[i].copy.has_value()) {
      auto bytes = metas[i].bytes.find(placed.table[i].copy->source);
      copy_bytes[i] = bytes == metas[i].bytes.end() ? 0 : bytes->second;
      continue;
    }
    const OpArgMetas m = CostMetas(ops[i], metas[i]);
    absl::StatusOr<OpCost> cost = costs->OpTime(ops[i], placed.places[i], m.inputs, m.outputs);
    if (cost.ok()) op_costs[i] = *cost;
  }
  return SimulateStep(placed, op_costs, copy_bytes, costs, in_order);
}

}  // namespace tandem
