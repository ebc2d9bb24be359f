#include "framework/runtime/plan_passes.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/estimate/memory_policy.h"
#include "framework/runtime/dependency_graph.h"
#include "framework/runtime/step_runner.h"

namespace tandem {
namespace plan_passes {

namespace {

absl::Status AddCommStream(PlanState* plan, PlanState::Step* step) {
  std::unique_ptr<Stream>& stream = plan->comm_streams[step->device];
  if (stream == nullptr) {
    absl::StatusOr<std::unique_ptr<Stream>> made = step->device->CreateStream();
    if (!made.ok()) return AnnotateStepError(made.status(), *step);
    stream = *std::move(made);
  }
  step->comm_stream = stream.get();
  return absl::OkStatus();
}

int Slot(PlanState* plan, const std::string& name) {
  plan->slot_names.push_back(name);
  const VarDesc* d = plan->placed.program.block().FindVar(name);
  plan->slot_persistable.push_back(d != nullptr && d->persistable);
  return static_cast<int>(plan->slot_names.size()) - 1;
}

// The slots a step reads and those it writes (its outputs and the inputs
// it updates in place), each slot mapped through `rename`.
template <typename Rename>
StepAccess AccessOf(const PlanState::Step& step, Rename rename) {
  StepAccess a;
  for (const auto& [arg, ids] : step.inputs) {
    for (int id : ids) a.reads.push_back(rename(id));
  }
  for (const auto& [arg, ids] : step.outputs) {
    for (int id : ids) a.writes.push_back(rename(id));
  }
  for (int id : step.updated_inputs) a.writes.push_back(rename(id));
  return a;
}

StepAccess AccessOf(const PlanState::Step& step) {
  return AccessOf(step, [](int id) { return id; });
}

std::vector<std::vector<int>> WritersPerSlot(const PlanState& plan) {
  std::vector<std::vector<int>> writers(plan.slot_names.size());
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    for (int id : AccessOf(*plan.steps[i]).writes) writers[id].push_back(static_cast<int>(i));
  }
  return writers;
}

bool IsCollective(const PlanState::Step& step) {
  return step.def != nullptr && step.def->collective() != CollectiveKind::kNone;
}

}  // namespace

absl::Status CreateSteps(PlanState* plan, const std::vector<std::string>& feeds,
                         const std::vector<std::string>& fetches) {
  const Block& block = plan->placed.program.block();
  std::map<std::string, int> slot_of;
  auto slot = [&](const std::string& name) {
    auto it = slot_of.find(name);
    if (it == slot_of.end()) it = slot_of.emplace(name, Slot(plan, name)).first;
    return it->second;
  };
  for (const std::string& f : feeds) plan->feed_slots.push_back(slot(f));
  std::set<Device*> devices;
  const std::vector<OpDesc>& ops = block.ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    auto step = std::make_unique<PlanState::Step>();
    step->op = ops[i];
    step->index = static_cast<int>(i);
    step->place = plan->placed.places[i];
    ASSIGN_OR_RETURN(step->device, DeviceRegistry::Global().GetDevice(step->place));
    devices.insert(step->device);
    for (const auto& [arg, vars] : step->op.inputs) {
      std::vector<int> ids;
      for (const std::string& v : vars) ids.push_back(slot(v));
      step->inputs.emplace_back(arg, std::move(ids));
    }
    for (const auto& [arg, vars] : step->op.outputs) {
      std::vector<int> ids;
      for (const std::string& v : vars) ids.push_back(slot(v));
      step->outputs.emplace_back(arg, std::move(ids));
    }
    const KernelRegistration* reg = plan->placed.kernels[i];
    if (reg == nullptr) {
      step->is_copy = true;
      step->copy_to = step->op.type == "memcpy_d2h" ? CPUPlace() : step->place;
    } else {
      step->def = &reg->def;
      absl::StatusOr<std::unique_ptr<OpKernel>> k = reg->Create(step->op);
      if (!k.ok()) return AnnotateStepError(k.status(), *step);
      step->kernel = *std::move(k);
      if (reg->def.collective() != CollectiveKind::kNone) {
        // Runs of the plan one at a time: a run's collectives meet the other
        // ranks' of the same run, and a pipelined run's end events cover the
        // compute and copy streams only.
        plan->pipeline_blocker = absl::StrCat("collective '", step->op.type, "' (#", step->index,
                                              ") meets other ranks once per run");
        if (!step->place.is_host()) RETURN_IF_ERROR(AddCommStream(plan, step.get()));
      }
    }
    plan->steps.push_back(std::move(step));
  }
  for (const std::string& f : fetches) plan->fetch_slots.push_back(slot(f));
  plan->devices.assign(devices.begin(), devices.end());
  return absl::OkStatus();
}

void FoldConstants(PlanState* plan) {
  // The estimate's rule (memory_policy.h), on the placed program's names.
  const std::set<std::string> folded = FoldedConstants(plan->placed.program.block());
  plan->slot_folded.assign(plan->slot_names.size(), false);
  for (auto& owned : plan->steps) {
    PlanState::Step& step = *owned;
    if (step.is_copy || step.outputs.empty()) continue;
    bool all_folded = true;
    for (const auto& [arg, ids] : step.outputs) {
      for (int id : ids) all_folded &= folded.count(plan->slot_names[id]) > 0;
    }
    if (!all_folded) continue;
    step.folded = true;
    for (const auto& [arg, ids] : step.outputs) {
      for (int id : ids) plan->slot_folded[id] = true;
    }
  }
}

void MarkInPlaceUpdates(PlanState* plan) {
  // The variable each slot holds a copy of (itself when no copy step made
  // it; a write-back into a persistable keeps its own name).
  std::vector<int> origin(plan->slot_names.size());
  for (size_t id = 0; id < origin.size(); ++id) origin[id] = static_cast<int>(id);
  for (const auto& owned : plan->steps) {
    const PlanState::Step& step = *owned;
    if (!step.is_copy) continue;
    const int from = step.inputs[0].second[0], to = step.outputs[0].second[0];
    if (!plan->slot_persistable[to]) origin[to] = origin[from];
  }
  for (auto& owned : plan->steps) {
    PlanState::Step& step = *owned;
    if (step.is_copy) continue;
    std::set<int> written;
    for (const auto& [arg, ids] : step.outputs) written.insert(ids.begin(), ids.end());
    step.updated_inputs.clear();
    for (const auto& [arg, ids] : step.inputs) {
      for (int id : ids) {
        if (origin[id] != id && written.count(origin[id]) > 0) step.updated_inputs.push_back(id);
      }
    }
  }
}

void AllowForwardedInputs(PlanState* plan) {
  // Kernels allocate their outputs, so a later writer of a variable binds a
  // buffer of its own; only in-place writers write into the buffer a name
  // holds: updates of persistables (and of their copies, updated_inputs)
  // and collectives (an all-reduce writes its input). A plan with a
  // collective forwards nothing (a reshape's view could carry the buffer to
  // it under another name).
  const bool collectives = std::any_of(plan->steps.begin(), plan->steps.end(),
                                       [](const auto& step) { return IsCollective(*step); });
  std::vector<bool> kept(plan->slot_names.size(), false);  // persistable, fed, fetched, updated
  for (size_t id = 0; id < kept.size(); ++id) kept[id] = plan->slot_persistable[id];
  for (int id : plan->feed_slots) kept[id] = true;
  for (int id : plan->fetch_slots) kept[id] = true;
  for (const auto& step : plan->steps) {
    for (int id : step->updated_inputs) kept[id] = true;
  }
  for (auto& owned : plan->steps) {
    PlanState::Step& step = *owned;
    step.forwards_inputs = false;
    if (collectives || step.def == nullptr || step.def->forwarded_input().empty() || step.folded) {
      continue;
    }
    bool shareable = true;
    for (const auto& [arg, ids] : step.outputs) {
      for (int id : ids) shareable = shareable && !kept[id];
    }
    for (const auto& [arg, ids] : step.inputs) {
      if (arg != step.def->forwarded_input()) continue;
      for (int id : ids) shareable = shareable && !kept[id];
    }
    step.forwards_inputs = shareable;
  }
}

void BlockPipelineOnFetchedUpdates(PlanState* plan) {
  const std::vector<std::vector<int>> writers = WritersPerSlot(*plan);
  for (size_t f = 0; f < plan->fetch_slots.size() && plan->pipeline_blocker.empty(); ++f) {
    const int id = plan->fetch_slots[f];
    if (!plan->slot_persistable[id] || writers[id].empty()) continue;
    const PlanState::Step& writer = *plan->steps[writers[id].back()];
    plan->pipeline_blocker = absl::StrCat(
        "fetch '", plan->fetch_names[f], "' is a persistable that op '", writer.op.type, "' (#",
        writer.index, ") updates: the next run would change it before this run's fetch reads it");
  }
}

void PinCopySources(PlanState* plan) {
  // The estimate's rule (memory_policy.h); step i is placed op i.
  for (const auto& [producer, device_place] : PinnedCopySources(plan->placed)) {
    absl::StatusOr<Device*> device = DeviceRegistry::Global().GetDevice(device_place);
    if (!device.ok()) continue;  // CreateSteps found every place's device
    plan->steps[producer]->host_output_allocator = (*device)->host_allocator();
  }
}

void PlanReleases(PlanState* plan) {
  const size_t n = plan->slot_names.size();
  std::vector<int> last_use(n, -1);
  for (size_t i = 0; i < plan->steps.size(); ++i) {
    for (const SlotArgs* args : {&plan->steps[i]->inputs, &plan->steps[i]->outputs}) {
      for (const auto& [arg, ids] : *args) {
        for (int id : ids) last_use[id] = static_cast<int>(i);
      }
    }
  }
  const std::set<int> fetched(plan->fetch_slots.begin(), plan->fetch_slots.end());
  plan->slot_releasable.assign(n, false);
  for (size_t id = 0; id < n; ++id) {
    const VarKeep keep = {plan->slot_persistable[id], fetched.count(id) > 0,
                          static_cast<bool>(plan->slot_folded[id])};
    if (last_use[id] < 0 || !ReleasedAfterLastUse(keep)) continue;
    plan->slot_releasable[id] = true;
    plan->steps[last_use[id]]->release_after.push_back(static_cast<int>(id));
  }
}

namespace {

Lane LaneOf(const PlanState::Step& step) {
  if (step.place.is_host()) return Lane::kHost;
  if (step.comm_stream != nullptr) return Lane::kComm;
  return step.is_copy && step.copy_to.is_host() ? Lane::kCopy : Lane::kCompute;
}

bool Reads(const PlanState::Step& step, int slot) {
  for (const auto& [arg, ids] : step.inputs) {
    for (int id : ids) {
      if (id == slot) return true;
    }
  }
  return false;
}

// How `succ` waits for `pred` (both placed, pred earlier).
EdgeKind Classify(const PlanState::Step& pred, const PlanState::Step& succ) {
  if (pred.is_host()) return EdgeKind::kCompletion;
  if (succ.is_host()) return EdgeKind::kHostWait;
  if (succ.device != pred.device) return EdgeKind::kCompletion;
  if (pred.lane == Lane::kCopy && Reads(succ, pred.outputs[0].second[0])) {
    return EdgeKind::kCompletion;  // device work reading a host value still
                                   // being copied
  }
  return succ.lane == pred.lane ? EdgeKind::kStreamOrder : EdgeKind::kEventWait;
}

// Whether each step not folded away depends directly on the previous such
// step, so that no two of them can run at once (a sufficient test: a path
// through other steps is not looked for).
bool IsChain(const std::vector<std::unique_ptr<PlanState::Step>>& steps) {
  int previous = -1;
  for (int i = 0; i < static_cast<int>(steps.size()); ++i) {
    const PlanState::Step& step = *steps[i];
    if (step.folded) continue;
    const bool follows =
        previous < 0 || std::any_of(step.preds.begin(), step.preds.end(),
                                    [&](const auto& pred) { return pred.first == previous; });
    if (!follows) return false;
    previous = i;
  }
  return true;
}

// Adds the edge i -> j (i < j) unless the graph has it.
void AddEdge(int i, int j, DependencyGraph* graph) {
  std::vector<int>& preds = graph->preds[j];
  auto at = std::lower_bound(preds.begin(), preds.end(), i);
  if (at != preds.end() && *at == i) return;
  preds.insert(at, i);
  std::vector<int>& succs = graph->succs[i];
  succs.insert(std::lower_bound(succs.begin(), succs.end(), j), j);
}

// Each collective also waits for the collective before it: every rank runs
// them in program order, as the ranks of one NCCL communicator must, and
// ranks that block in a host collective never wait for each other in two
// orders (collective_kernels.h).
void OrderCollectives(const std::vector<std::unique_ptr<PlanState::Step>>& steps,
                      DependencyGraph* graph) {
  int previous = -1;
  for (size_t j = 0; j < steps.size(); ++j) {
    if (!IsCollective(*steps[j])) continue;
    if (previous >= 0) AddEdge(previous, static_cast<int>(j), graph);
    previous = static_cast<int>(j);
  }
}

// A recomputed forward op (origin kRecomputeOf, framework/backward/
// recompute.h) reads only values the forward made, so nothing would keep
// it from running right after them, holding its output through the whole
// backward: the memory the rewrite was made to save. It follows the last
// op before it in program order that is neither a copy, nor recomputed,
// nor a folded constant (which runs once, before any run).
void HoldRecomputes(const std::vector<std::unique_ptr<PlanState::Step>>& steps,
                    DependencyGraph* graph) {
  int last_op = -1;
  for (size_t j = 0; j < steps.size(); ++j) {
    const PlanState::Step& step = *steps[j];
    if (step.op.origin.kind == OpOrigin::Kind::kRecomputeOf) {
      if (last_op >= 0) AddEdge(last_op, static_cast<int>(j), graph);
    } else if (!step.is_copy && !step.folded) {
      last_op = static_cast<int>(j);
    }
  }
}

// The device whose compute stream every step not folded away is queued on,
// or nullptr (a host step, a copy to the host, a collective's stream, two
// devices). `solo`: in a solo run, where copies that no kernel of their
// device can overlap are queued on the compute stream too
// (Step::waits.solo_on_compute).
Device* SingleComputeStream(const std::vector<std::unique_ptr<PlanState::Step>>& steps, bool solo) {
  Device* device = nullptr;
  for (const auto& step : steps) {
    if (step->folded) continue;
    const bool on_compute = step->lane == Lane::kCompute ||
                            (solo && step->lane == Lane::kCopy && step->waits.solo_on_compute);
    if (!on_compute || (device != nullptr && step->device != device)) {
      return nullptr;
    }
    device = step->device;
  }
  return device;
}

// Sets plan->serial and plan->schedule (lanes and preds set).
void ChooseSerialDispatch(PlanState* plan) {
  const Device* stream_device = SingleComputeStream(plan->steps, /*solo=*/false);
  if (IsChain(plan->steps)) {
    plan->serial = true;
    plan->schedule = "in program order on the calling thread (each step depends on the one before)";
  } else if (stream_device != nullptr) {
    plan->serial = true;
    plan->schedule =
        absl::StrCat("in program order on the calling thread (every step is queued on ",
                     stream_device->place().ToString(), "'s compute stream)");
  } else {
    plan->serial = false;
    plan->schedule = "concurrent: host steps on workers, device steps on their streams";
  }
}

}  // namespace

void BuildSchedule(PlanState* plan) {
  plan->copy_lane_devices.clear();
  std::vector<StepAccess> access;
  for (auto& owned : plan->steps) {
    PlanState::Step& step = *owned;
    step.lane = LaneOf(step);
    if (step.lane == Lane::kCopy) plan->copy_lane_devices.insert(step.device);
    StepAccess a = AccessOf(step);
    std::set<int> used(a.reads.begin(), a.reads.end());
    used.insert(a.writes.begin(), a.writes.end());
    step.slots_used.assign(used.begin(), used.end());
    access.push_back(std::move(a));
  }
  plan->host_only = std::all_of(plan->steps.begin(), plan->steps.end(),
                                [](const auto& step) { return step->is_host(); });
  DependencyGraph graph = BuildDependencyGraph(access);
  OrderCollectives(plan->steps, &graph);
  HoldRecomputes(plan->steps, &graph);
  for (size_t j = 0; j < plan->steps.size(); ++j) {
    PlanState::Step& succ = *plan->steps[j];
    for (int i : graph.preds[j]) {
      PlanState::Step& pred = *plan->steps[i];
      const EdgeKind kind = Classify(pred, succ);
      succ.preds.emplace_back(i, kind);
      pred.succs.emplace_back(static_cast<int>(j), kind);
      pred.feeds_device |= pred.is_host() && !succ.is_host();
      if (pred.is_host() || kind == EdgeKind::kStreamOrder) continue;
      pred.waits.event = true;
      pred.waits.watched |= kind == EdgeKind::kCompletion;
    }
  }
  ChooseSerialDispatch(plan);
  // Program order is a topological order: successors come later.
  std::vector<bool> feeds_others(plan->steps.size(), false);
  for (int i = static_cast<int>(plan->steps.size()) - 1; i >= 0; --i) {
    PlanState::Step& step = *plan->steps[i];
    bool writes = false;
    for (const auto& [arg, ids] : step.outputs) {
      for (int id : ids) writes |= plan->slot_persistable[id];
    }
    for (const auto& [succ, kind] : step.succs) {
      feeds_others[i] = feeds_others[i] || !plan->steps[succ]->held_for_commit;
    }
    step.held_for_commit = plan->atomic_updates && writes && !feeds_others[i] && !step.folded;
  }
}

void LinkConsecutiveRuns(PlanState* plan) {
  // Two runs back to back: the second's non-persistable slots are its own
  // (numbered after the first's), its persistables the same variables.
  const int n = static_cast<int>(plan->steps.size());
  const int slots = static_cast<int>(plan->slot_names.size());
  std::vector<StepAccess> access(2 * n);
  for (int run = 0; run < 2; ++run) {
    auto rename = [&](int id) { return plan->slot_persistable[id] ? id : id + run * slots; };
    for (int i = 0; i < n; ++i) {
      const PlanState::Step& step = *plan->steps[i];
      if (step.folded) continue;  // runs once, before any pipelined run
      access[run * n + i] = AccessOf(step, rename);
    }
  }
  const DependencyGraph graph = BuildDependencyGraph(access);
  for (int j = 0; j < n; ++j) {
    PlanState::Step& succ = *plan->steps[j];
    std::vector<int> preds;
    for (int i : graph.preds[n + j]) {
      if (i < n) preds.push_back(i);
    }
    if (std::find(preds.begin(), preds.end(), j) == preds.end()) preds.push_back(j);
    for (int i : preds) {
      PlanState::Step& pred = *plan->steps[i];
      const EdgeKind kind = i == j
                                ? (pred.is_host() ? EdgeKind::kCompletion : EdgeKind::kStreamOrder)
                                : Classify(pred, succ);
      succ.prev_preds.emplace_back(i, kind);
      pred.next_succs.emplace_back(j, kind);
      if (pred.is_host() || kind == EdgeKind::kStreamOrder) continue;
      pred.waits.event_pipelined = true;
      pred.waits.watched_pipelined |= kind == EdgeKind::kCompletion;
    }
    for (const auto& [arg, ids] : succ.outputs) {
      for (int id : ids) succ.writes_persistable |= plan->slot_persistable[id];
    }
  }
}

namespace {

// The one slot of argument `arg` of `step`, or -1.
int OnlySlot(const SlotArgs& args, const std::string& arg) {
  for (const auto& [name, ids] : args) {
    if (name == arg && ids.size() == 1) return ids[0];
  }
  return -1;
}

// The kernel contract of a host kernel step, whose row contracts
// (KernelDef: GathersRows, SparseRowsFrom, UpdatesRowsOf) the scheduler may
// use; nullptr for copies and device steps.
const KernelDef* HostKernel(const PlanState::Step& step) {
  return step.is_copy || !step.is_host() ? nullptr : step.def;
}

}  // namespace

void RefineRowConflicts(PlanState* plan) {
  const std::vector<std::vector<int>> writers = WritersPerSlot(*plan);
  for (auto& owned : plan->steps) {
    PlanState::Step& lookup = *owned;
    const KernelDef* lookup_def = HostKernel(lookup);
    const RowGatherContract* gather =
        lookup_def == nullptr ? nullptr : lookup_def->RowGather(lookup.op);
    if (gather == nullptr) continue;
    const int table = OnlySlot(lookup.inputs, gather->table);
    const int ids = OnlySlot(lookup.inputs, gather->ids);
    const int out = OnlySlot(lookup.outputs, gather->out);
    if (table < 0 || ids < 0 || out < 0 || !plan->slot_persistable[table] ||
        writers[table].size() != 1) {
      continue;
    }
    const int update = writers[table][0];
    PlanState::Step& u = *plan->steps[update];
    const RowUpdateContract* rows_updated =
        HostKernel(u) == nullptr ? nullptr : HostKernel(u)->RowUpdate();
    const int grad = rows_updated == nullptr ? -1 : OnlySlot(u.inputs, rows_updated->grad);
    if (grad < 0 || OnlySlot(u.inputs, rows_updated->param) != table || writers[grad].size() != 1) {
      continue;
    }
    const PlanState::Step& g = *plan->steps[writers[grad][0]];
    const SparseRowsContract* sparse =
        HostKernel(g) == nullptr ? nullptr : HostKernel(g)->SparseRows(g.op);
    const int grad_ids = sparse == nullptr ? -1 : OnlySlot(g.inputs, sparse->ids);
    if (grad_ids < 0 || OnlySlot(g.outputs, sparse->out) != grad || writers[grad_ids].size() > 1) {
      continue;
    }
    auto edge = std::find_if(lookup.prev_preds.begin(), lookup.prev_preds.end(),
                             [&](const auto& e) { return e.first == update; });
    if (edge == lookup.prev_preds.end()) continue;
    lookup.prev_preds.erase(edge);
    u.next_succs.erase(std::find_if(u.next_succs.begin(), u.next_succs.end(),
                                    [&](const auto& e) { return e.first == lookup.index; }));
    u.row_readers.push_back(lookup.index);
    lookup.rows = std::make_unique<RowRefinement>();
    lookup.rows->writer = update;
    lookup.rows->writer_ids_slot = grad_ids;
    lookup.rows->writer_ids_producer = writers[grad_ids].empty() ? -1 : writers[grad_ids][0];
    lookup.rows->ids_slot = ids;
    lookup.rows->table_slot = table;
    lookup.rows->out_slot = out;
    plan->slot_releasable[grad_ids] = false;  // read by the next run's lookup
  }
}

namespace {

int ComputeStepsOrderedWith(const PlanState& plan, int copy, int stamp, std::vector<int>* seen) {
  const Device* device = plan.steps[copy]->device;
  int ordered = 0;
  std::vector<int> stack;
  for (const bool forward : {false, true}) {  // a DAG: no step is both
    stack.assign(1, copy);
    while (!stack.empty()) {
      const PlanState::Step& at = *plan.steps[stack.back()];
      stack.pop_back();
      for (const auto& [next, kind] : forward ? at.succs : at.preds) {
        if ((*seen)[next] == stamp) continue;
        (*seen)[next] = stamp;
        const PlanState::Step& s = *plan.steps[next];
        ordered += s.lane == Lane::kCompute && s.device == device && !s.folded;
        stack.push_back(next);
      }
    }
  }
  return ordered;
}

}  // namespace

void ChooseSoloCopyStreams(PlanState* plan) {
  // Past this many step visits the search would slow planning: copies stay.
  constexpr int64_t kMaxVisits = int64_t{50} << 20;
  const int n = static_cast<int>(plan->steps.size());
  std::map<Device*, int> compute_steps;
  std::map<Device*, std::vector<int>> copies;
  for (int i = 0; i < n; ++i) {
    const PlanState::Step& s = *plan->steps[i];
    if (s.lane == Lane::kCompute && !s.folded) compute_steps[s.device]++;
    if (s.lane == Lane::kCopy) copies[s.device].push_back(i);
  }
  plan->solo_compute_copy_devices.clear();
  std::vector<int> seen(n, 0);
  int stamp = 0;
  for (const auto& [device, list] : copies) {
    bool all = static_cast<int64_t>(list.size()) * n <= kMaxVisits;
    for (size_t c = 0; all && c < list.size(); ++c) {
      all = ComputeStepsOrderedWith(*plan, list[c], ++stamp, &seen) == compute_steps[device];
    }
    if (!all) continue;
    plan->solo_compute_copy_devices.insert(device);
    for (int c : list) plan->steps[c]->waits.solo_on_compute = true;
  }
  // A solo run of a plan whose steps are now all queued on one compute
  // stream has nothing to overlap either.
  if (const Device* device = SingleComputeStream(plan->steps, /*solo=*/true);
      device != nullptr && !plan->serial) {
    plan->serial = true;
    plan->schedule =
        absl::StrCat("in program order on the calling thread (every step is queued on ",
                     device->place().ToString(),
                     "'s compute stream, its copies too: no kernel could overlap them)");
  }
  for (auto& owned : plan->steps) {
    PlanState::Step& pred = *owned;
    for (const auto& [succ, kind] : pred.succs) {
      const PlanState::Step& s = *plan->steps[succ];
      pred.waits.event_solo |=
          kind == EdgeKind::kHostWait || kind == EdgeKind::kCompletion ||
          (kind == EdgeKind::kEventWait && pred.StreamFor(false, true) != s.StreamFor(false, true));
    }
    pred.waits.event_solo &= pred.waits.event;
  }
}

absl::Status AddFrame(PlanState* plan) {
  auto frame = std::make_unique<PlanState::Frame>();
  const size_t slots = plan->slot_names.size(), steps = plan->steps.size();
  frame->locals.resize(slots);
  frame->slots.resize(slots);
  frame->in_args.resize(steps);
  frame->out_args.resize(steps);
  frame->staging.resize(steps);
  frame->done_events.resize(steps);
  frame->reports.resize(steps);
  RETURN_IF_ERROR(AddEvents(plan, frame.get(), /*pipelined=*/!plan->frames.empty()));
  plan->frames.push_back(std::move(frame));
  return absl::OkStatus();
}

absl::Status AddPipelinedFrame(PlanState* plan) {
  if (plan->frames.size() == 1) {  // frame 0 now takes part in pipelined runs too
    PlanState::Frame* first = plan->frames[0].get();
    if (absl::Status added = AddEvents(plan, first, /*pipelined=*/true); !added.ok()) {
      // Frame 0 stays as it was: in-order runs only, no half-made end events.
      for (size_t i = 0; i < plan->steps.size(); ++i) {
        if (!plan->steps[i]->waits.event) first->done_events[i].reset();
      }
      return added;
    }
  }
  return AddFrame(plan);
}

absl::Status AddEvents(PlanState* plan, PlanState::Frame* frame, bool pipelined) {
  for (size_t i = 0; i < plan->steps.size(); ++i) {
    const PlanState::Step& step = *plan->steps[i];
    if (frame->done_events[i] != nullptr ||
        !(step.waits.event || (pipelined && step.waits.event_pipelined))) {
      continue;
    }
    absl::StatusOr<std::unique_ptr<Event>> event = step.device->CreateEvent();
    if (!event.ok()) return AnnotateStepError(event.status(), step);
    frame->done_events[i] = *std::move(event);
  }
  if (!pipelined || !frame->compute_end.empty()) return absl::OkStatus();
  // All or nothing: RecordRunEnd takes a non-empty list for one event per device.
  std::vector<std::unique_ptr<Event>> compute_end, copy_end;
  for (Device* device : plan->devices) {
    for (auto* ends : {&compute_end, &copy_end}) {
      absl::StatusOr<std::unique_ptr<Event>> event = device->CreateEvent();
      if (!event.ok()) return event.status();
      ends->push_back(*std::move(event));
    }
  }
  frame->compute_end = std::move(compute_end);
  frame->copy_end = std::move(copy_end);
  return absl::OkStatus();
}

}  // namespace plan_passes

absl::Status MakeFrame(PlanState* plan) { return plan_passes::AddPipelinedFrame(plan); }

// Runs the passes in order (called by Executor::Prepare).
absl::Status BuildPlan(PlanState* plan, const std::vector<std::string>& feeds,
                       const std::vector<std::string>& fetches) {
  RETURN_IF_ERROR(plan_passes::CreateSteps(plan, feeds, fetches));
  plan_passes::FoldConstants(plan);
  plan_passes::MarkInPlaceUpdates(plan);
  plan_passes::AllowForwardedInputs(plan);
  plan_passes::BlockPipelineOnFetchedUpdates(plan);
  plan_passes::PinCopySources(plan);
  plan_passes::PlanReleases(plan);
  plan_passes::BuildSchedule(plan);
  plan_passes::LinkConsecutiveRuns(plan);
  plan_passes::RefineRowConflicts(plan);
  plan_passes::ChooseSoloCopyStreams(plan);
  return plan_passes::AddFrame(plan);
}

}  // namespace tandem
