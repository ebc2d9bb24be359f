#include "framework/runtime/executor.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/runtime/execution_observer.h"
#include "glog/logging.h"

namespace tandem {

namespace {
std::atomic<ExecutionObserver*> g_observer{nullptr};
}  // namespace

void SetExecutionObserver(ExecutionObserver* observer) { g_observer.store(observer); }
ExecutionObserver* GetExecutionObserver() { return g_observer.load(std::memory_order_acquire); }

using SlotArgs = std::vector<std::pair<std::string, std::vector<int>>>;

struct Plan::Step {
  OpDesc op;
  Place place;
  Device* device = nullptr;
  const KernelDef* def = nullptr;       // nullptr for copies
  std::unique_ptr<OpKernel> kernel;
  SlotArgs inputs, outputs;
  std::vector<int> release_after;       // slots whose last use is this step
  bool is_copy = false;
  Place copy_to;
  // Computed once and kept: an input-less, deterministic op whose output
  // nothing else writes (fill_constant).
  bool folded = false;
  // Host memory for this step's host-resident outputs: a device's pinned
  // allocator when the output is copied to that device next.
  Allocator* host_output_allocator = nullptr;
  // Switches the current device; nullptr for the host.
  DeviceFactory* device_factory = nullptr;
  // Variables bound to the kernel's arguments (rebuilt when the scope changes).
  ArgVars in_args, out_args;
  // H2D copies from pageable memory go through this pinned buffer.
  std::shared_ptr<Buffer> staging;
};

// A captured step: the device graph and everything it baked in.
struct Plan::GraphState {
  // Host->device copies: the source slot's value goes into `staging` (whose
  // address the graph reads) before each launch.
  struct Upload {
    int src = 0;
    std::shared_ptr<Buffer> staging;  // nullptr for an empty value
    DataType dtype = DataType::kFloat32;
    Shape shape;
  };
  // A host value a kernel read at capture (a HostMemory input).
  struct HostValue {
    int slot = 0;
    std::string reader;  // op type, for the log
    DataType dtype = DataType::kFloat32;
    Shape shape;
    std::string bytes;
  };

  // Why a replay would not match an eager run of the current values (empty
  // when it would): names the variable that changed.
  std::string StaleReason(const std::vector<Variable*>& slots,
                          const std::vector<std::string>& names) const;
  // Stages the uploads and enqueues the graph on the device's compute
  // stream, as one observer span ("graph_launch").
  absl::Status Launch(const std::vector<Variable*>& slots, ExecutionObserver* observer) const;

  Device* device = nullptr;
  std::unique_ptr<DeviceGraph> graph;
  std::vector<Upload> uploads;
  std::vector<HostValue> host_values;
  // Persistable slots before the capture (restored if it fails), then the
  // buffer of each that the graph reads and writes.
  std::vector<std::pair<int, Variable>> persistable_before;
  std::vector<std::pair<int, const Buffer*>> persistable_buffers;
  // Every buffer the captured steps used, kept so that no one else gets
  // their memory while the graph may write it.
  std::vector<std::shared_ptr<Buffer>> held;
  RunStats stats;     // of the captured run
  OpDesc launch_op;   // type "graph_launch", for observers
};

Plan::Plan() = default;
Plan::~Plan() = default;

namespace {

std::string Dims(const Shape& s) { return absl::StrJoin(s.dims(), ", "); }

// "Input[data2:float[1, 3, 5, 5]({})(Place(gpu:0))]" for the reference log format.
std::string ArgsForLog(const SlotArgs& args, const std::vector<Variable*>& slots,
                       const std::vector<std::string>& names) {
  std::vector<std::string> parts;
  for (const auto& [arg, ids] : args) {
    std::vector<std::string> vars;
    for (int id : ids) {
      const Tensor* t = slots[id]->data_tensor();
      if (t == nullptr || !t->initialized()) {
        vars.push_back(absl::StrCat(names[id], ":uninitialized"));
      } else {
        vars.push_back(absl::StrCat(names[id], ":", DataTypeLogName(t->dtype()), "[",
                                    Dims(t->shape()), "]({})(Place(", t->place().ToString(), "))"));
      }
    }
    parts.push_back(absl::StrCat(arg, "[", absl::StrJoin(vars, ", "), "]"));
  }
  return absl::StrJoin(parts, ", ");
}

std::string KernelTypeForLog(DataType dtype, const Place& place) {
  return absl::StrCat("data_type[", DataTypeLogName(dtype), "]:data_layout[NCHW]:place[",
                      place.LogName(), "]:library_type[PLAIN]");
}

absl::Status Annotate(const absl::Status& s, const Plan::Step& step, int index) {
  if (s.ok()) return s;
  const std::string prefix = absl::StrCat("op '", step.op.type, "' (#", index, ") on ",
                                          step.place.ToString());
  if (absl::string_view(s.message()).find(absl::StrCat("op '", step.op.type, "'")) !=
      absl::string_view::npos) {
    return absl::Status(s.code(), absl::StrCat(s.message(), " [#", index, " on ",
                                               step.place.ToString(), "]"));
  }
  return absl::Status(s.code(), absl::StrCat(prefix, ": ", s.message()));
}

// Keeps the buffer of every tensor bound to `args`.
void Hold(const SlotArgs& args, const std::vector<Variable*>& slots,
          std::vector<std::shared_ptr<Buffer>>* held) {
  for (const auto& [arg, ids] : args) {
    for (int id : ids) {
      const Tensor* t = slots[id]->data_tensor();
      if (t != nullptr && t->initialized()) held->push_back(t->buffer());
    }
  }
}

// The device whose work a graph of `steps` would hold, or why there is none
// (one step named with the reason).
absl::StatusOr<Device*> CaptureDevice(const std::vector<std::unique_ptr<Plan::Step>>& steps) {
  if (std::all_of(steps.begin(), steps.end(), [](const std::unique_ptr<Plan::Step>& step) {
        return step->folded || step->place.is_host();
      })) {
    return absl::FailedPreconditionError("the plan has no device work to capture");
  }
  Device* device = nullptr;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Plan::Step& step = *steps[i];
    if (step.folded) continue;
    const std::string where =
        absl::StrCat("step #", i, " '", step.op.type, "' on ", step.place.ToString());
    if (step.is_copy && step.copy_to.is_host()) {
      return absl::FailedPreconditionError(absl::StrCat(
          where, " copies '", step.op.inputs.at("X")[0],
          "' to the host synchronously in the middle of the step"));
    }
    if (!step.is_copy && step.place.is_host()) {
      return absl::FailedPreconditionError(
          absl::StrCat(where, " is a host kernel; only device work can be captured"));
    }
    if (!step.is_copy) {
      for (const auto& [arg, ids] : step.outputs) {
        if (step.def->IsHostMemory(arg)) {
          return absl::FailedPreconditionError(absl::StrCat(
              where, " writes its host-memory output '", arg,
              "' on the host, which a replay would not redo"));
        }
      }
    }
    if (device != nullptr && step.device != device) {
      return absl::FailedPreconditionError(absl::StrCat(
          where, " is not on ", device->place().ToString(),
          " like the earlier steps; a graph holds the work of one device"));
    }
    device = step.device;
  }
  return device;
}

}  // namespace

std::string Plan::GraphState::StaleReason(const std::vector<Variable*>& slots,
                                          const std::vector<std::string>& names) const {
  auto same = [&](int slot, DataType dtype, const Shape& shape) {
    const Tensor* t = slots[slot]->data_tensor();
    return t != nullptr && t->initialized() && t->dtype() == dtype && t->shape() == shape;
  };
  for (const Upload& u : uploads) {
    if (!same(u.src, u.dtype, u.shape)) {
      return absl::StrCat("'", names[u.src], "' is no longer ", DataTypeName(u.dtype),
                          u.shape.ToString());
    }
  }
  for (const HostValue& v : host_values) {
    if (!same(v.slot, v.dtype, v.shape) ||
        std::memcmp(slots[v.slot]->data_tensor()->raw_data(), v.bytes.data(), v.bytes.size()) !=
            0) {
      return absl::StrCat("the host value of '", names[v.slot], "' read by '", v.reader,
                          "' changed");
    }
  }
  for (const auto& [slot, buffer] : persistable_buffers) {
    const Tensor* t = slots[slot]->data_tensor();
    if ((t == nullptr ? nullptr : t->buffer().get()) != buffer) {
      return absl::StrCat("persistable '", names[slot], "' was given another buffer");
    }
  }
  return "";
}

absl::Status Plan::GraphState::Launch(const std::vector<Variable*>& slots,
                                      ExecutionObserver* observer) const {
  for (const Upload& u : uploads) {
    const Tensor* t = slots[u.src]->data_tensor();
    if (u.staging != nullptr) std::memcpy(u.staging->data(), t->raw_data(), t->NumBytes());
  }
  Stream* stream = device->compute_stream();
  OpEvent event;
  if (observer != nullptr) {
    event.op = &launch_op;
    event.index = -1;
    event.place = device->place();
    event.device = device;
    event.stream = stream;
    observer->OnOpBegin(event);
  }
  RETURN_IF_ERROR(graph->Launch(stream));
  if (observer != nullptr) observer->OnOpEnd(event);
  return absl::OkStatus();
}

std::string RunStats::DebugString() const {
  return absl::StrCat(ops, " ops, ", copies_h2d, " H2D (", bytes_h2d, " B), ", copies_d2h,
                      " D2H (", bytes_d2h, " B), ", sync_copies, " sync, ", async_copies,
                      " async, ", fetch_copies, " fetch", captured ? ", captured" : "",
                      replayed ? ", replayed" : "");
}

Executor::Executor(Place default_place, ExecutorOptions options)
    : default_place_(default_place), options_(options) {}
Executor::~Executor() = default;

absl::StatusOr<std::unique_ptr<Plan>> Executor::Prepare(const Program& program,
                                                        const Scope& scope,
                                                        const std::vector<std::string>& feeds,
                                                        const std::vector<std::string>& fetches) {
  PlacerOptions popts;
  popts.default_place = default_place_;
  popts.strict = options_.strict_placement;
  popts.policy = options_.transfer_policy;
  for (const VarDesc& v : program.block().vars()) {
    const Variable* var = scope.Find(v.name);
    const Tensor* t = var == nullptr ? nullptr : var->data_tensor();
    if (t != nullptr && t->initialized()) popts.initial_places[v.name] = t->place();
  }
  for (const std::string& f : feeds) {
    if (!program.block().HasVar(f)) {
      return absl::InvalidArgumentError(absl::StrCat("feed '", f, "' is not a program variable"));
    }
    popts.initial_places[f] = CPUPlace();
  }
  std::unique_ptr<Plan> plan(new Plan());
  ASSIGN_OR_RETURN(plan->placed_, PlaceProgram(program, popts));
  const Block& block = plan->placed_.program.block();

  std::map<std::string, int> slot_of;
  auto slot = [&](const std::string& name) {
    auto [it, inserted] = slot_of.emplace(name, static_cast<int>(plan->slot_names_.size()));
    if (inserted) {
      plan->slot_names_.push_back(name);
      const VarDesc* d = block.FindVar(name);
      plan->slot_persistable_.push_back(d != nullptr && d->persistable);
    }
    return it->second;
  };
  for (const std::string& f : feeds) plan->feed_slots_.push_back(slot(f));
  for (const std::string& f : fetches) {
    if (!block.HasVar(f)) {
      return absl::InvalidArgumentError(absl::StrCat("fetch '", f, "' is not a program variable"));
    }
  }
  plan->feed_names_ = feeds;
  plan->fetch_names_ = fetches;

  std::set<Device*> devices;
  const std::vector<OpDesc>& ops = block.ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    auto step = std::make_unique<Plan::Step>();
    step->op = ops[i];
    step->place = plan->placed_.places[i];
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
    if (!step->place.is_host()) {
      step->device_factory = DeviceRegistry::Global().FactoryFor(step->place.type());
    }
    const KernelRegistration* reg = plan->placed_.kernels[i];
    if (reg == nullptr) {
      step->is_copy = true;
      step->copy_to = step->op.type == "memcpy_d2h" ? CPUPlace() : step->place;
    } else {
      step->def = &reg->def;
      absl::StatusOr<std::unique_ptr<OpKernel>> k = reg->Create(step->op);
      if (!k.ok()) return Annotate(k.status(), *step, static_cast<int>(i));
      step->kernel = *std::move(k);
    }
    plan->steps_.push_back(std::move(step));
  }
  for (const std::string& f : fetches) plan->fetch_slots_.push_back(slot(f));

  // Writers per slot, for constant folding and pinned producers.
  std::vector<std::vector<int>> writers(plan->slot_names_.size());
  for (size_t i = 0; i < plan->steps_.size(); ++i) {
    for (const auto& [arg, ids] : plan->steps_[i]->outputs) {
      for (int id : ids) writers[id].push_back(static_cast<int>(i));
    }
  }
  std::set<int> folded_slots;
  for (size_t i = 0; i < plan->steps_.size(); ++i) {
    Plan::Step& step = *plan->steps_[i];
    if (step.is_copy || step.op.type != "fill_constant" || !step.inputs.empty()) continue;
    bool foldable = true;
    for (const auto& [arg, ids] : step.outputs) {
      for (int id : ids) foldable &= !plan->slot_persistable_[id] && writers[id].size() == 1;
    }
    if (!foldable) continue;
    step.folded = true;
    for (const auto& [arg, ids] : step.outputs) folded_slots.insert(ids.begin(), ids.end());
  }
  plan->slot_folded_.assign(plan->slot_names_.size(), false);
  for (int id : folded_slots) plan->slot_folded_[id] = true;
  // A host kernel whose output is copied to a device next allocates it in
  // that device's pinned memory, so the copy is asynchronous.
  for (size_t i = 0; i < plan->steps_.size(); ++i) {
    const Plan::Step& copy = *plan->steps_[i];
    if (!copy.is_copy || copy.copy_to.is_host()) continue;
    const int src = copy.inputs[0].second[0];
    int producer = -1;
    for (int w : writers[src]) {
      if (w < static_cast<int>(i)) producer = w;
    }
    if (producer < 0 || plan->steps_[producer]->is_copy) continue;
    Plan::Step& p = *plan->steps_[producer];
    Allocator* pinned = copy.device->host_allocator();
    if (p.host_output_allocator == nullptr) p.host_output_allocator = pinned;
  }

  // Free each intermediate right after its last use.
  std::vector<int> last_use(plan->slot_names_.size(), -1);
  for (size_t i = 0; i < plan->steps_.size(); ++i) {
    for (const SlotArgs* args : {&plan->steps_[i]->inputs, &plan->steps_[i]->outputs}) {
      for (const auto& [arg, ids] : *args) {
        for (int id : ids) last_use[id] = static_cast<int>(i);
      }
    }
  }
  std::set<int> keep(plan->fetch_slots_.begin(), plan->fetch_slots_.end());
  for (size_t id = 0; id < last_use.size(); ++id) {
    if (plan->slot_persistable_[id] || keep.count(id) || folded_slots.count(id) ||
        last_use[id] < 0) {
      continue;
    }
    plan->steps_[last_use[id]]->release_after.push_back(static_cast<int>(id));
  }
  plan->locals_.resize(plan->slot_names_.size());
  plan->slots_.resize(plan->slot_names_.size());
  plan->devices_.assign(devices.begin(), devices.end());
  return plan;
}

absl::StatusOr<std::vector<Tensor>> Executor::Run(Plan* plan, Scope* scope, const FeedMap& feeds,
                                                  RunStats* stats) {
  RunStats local_stats;
  if (stats == nullptr) stats = &local_stats;
  *stats = RunStats();
  ExecutionObserver* observer = GetExecutionObserver();
  if (observer != nullptr) observer->OnRunBegin();
  if (plan->bound_scope_ != scope) {
    for (size_t id = 0; id < plan->slots_.size(); ++id) {
      plan->slots_[id] = plan->slot_persistable_[id] ? scope->Var(plan->slot_names_[id])
                                                     : &plan->locals_[id];
    }
    for (auto& step : plan->steps_) {
      step->in_args.clear();
      step->out_args.clear();
      for (const auto& [arg, ids] : step->inputs) {
        std::vector<Variable*> vars;
        for (int id : ids) vars.push_back(plan->slots_[id]);
        step->in_args.emplace_back(arg, std::move(vars));
      }
      for (const auto& [arg, ids] : step->outputs) {
        std::vector<Variable*> vars;
        for (int id : ids) vars.push_back(plan->slots_[id]);
        step->out_args.emplace_back(arg, std::move(vars));
      }
    }
    plan->bound_scope_ = scope;
    plan->graph_.reset();  // it holds the other scope's buffers
  }
  const Block& block = plan->placed_.program.block();
  for (size_t i = 0; i < plan->feed_names_.size(); ++i) {
    const std::string& name = plan->feed_names_[i];
    auto it = feeds.find(name);
    if (it == feeds.end()) {
      return absl::InvalidArgumentError(absl::StrCat("feed '", name, "' was not given"));
    }
    const Tensor& t = it->second;
    const VarDesc* d = block.FindVar(name);
    if (!t.place().is_host()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "feed '", name, "' is on ", t.place().ToString(), "; feeds are host tensors"));
    }
    bool shape_ok = d->shape.rank() == t.shape().rank();
    for (int k = 0; shape_ok && k < d->shape.rank(); ++k) {
      shape_ok = d->shape.dim(k) == -1 || d->shape.dim(k) == t.shape().dim(k);
    }
    if (t.dtype() != d->dtype || !shape_ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "feed '", name, "' is ", DataTypeName(t.dtype()), t.shape().ToString(),
          ", the program declares ", DataTypeName(d->dtype), d->shape.ToString()));
    }
    plan->slots_[plan->feed_slots_[i]]->set(t);
  }

  if (plan->graph_ != nullptr) {
    const std::string stale = plan->graph_->StaleReason(plan->slots_, plan->slot_names_);
    if (stale.empty()) {
      RETURN_IF_ERROR(plan->graph_->Launch(plan->slots_, observer));
      *stats = plan->graph_->stats;
      stats->replayed = true;
    } else {
      VLOG(1) << "executor: capturing the plan again: " << stale;
      plan->graph_.reset();
    }
  }
  if (!stats->replayed) {
    if (options_.capture_graphs && plan->constants_ready_ && plan->graph_blocker_.empty()) {
      RETURN_IF_ERROR(CaptureAndLaunch(plan, stats, observer));
    } else {
      RETURN_IF_ERROR(RunSteps(plan, stats, observer, /*capturing=*/false));
    }
  }
  for (Device* d : plan->devices_) {
    RETURN_IF_ERROR(d->SynchronizeStream(d->compute_stream()));
  }
  plan->keep_alive_.clear();
  plan->constants_ready_ = true;
  if (observer != nullptr) observer->OnRunEnd(*stats);
  std::vector<Tensor> fetched;
  for (size_t i = 0; i < plan->fetch_slots_.size(); ++i) {
    const Variable* v = plan->slots_[plan->fetch_slots_[i]];
    const Tensor* t = v->data_tensor();
    if (t == nullptr || !t->initialized()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "fetch '", plan->fetch_names_[i], "' was not computed by the program"));
    }
    if (t->place().is_host()) {
      fetched.push_back(*t);
      continue;
    }
    ASSIGN_OR_RETURN(Device * device, DeviceRegistry::Global().GetDevice(t->place()));
    ASSIGN_OR_RETURN(Tensor host, Tensor::Allocate(device->host_allocator(), t->dtype(), t->shape()));
    if (t->NumBytes() > 0) {
      RETURN_IF_ERROR(device->CopyAsync(CopyKind::kDeviceToHost, host.raw_data(), t->raw_data(),
                                        t->NumBytes(), device->compute_stream()));
      RETURN_IF_ERROR(device->SynchronizeStream(device->compute_stream()));
    }
    stats->fetch_copies++;
    stats->fetch_bytes += static_cast<int64_t>(t->NumBytes());
    fetched.push_back(std::move(host));
  }
  if (plan->graph_ == nullptr) {  // a graph writes its fetches again on each launch
    for (int id : plan->fetch_slots_) {
      if (!plan->slot_persistable_[id] && !plan->slot_folded_[id]) plan->slots_[id]->clear();
    }
  }
  return fetched;
}

absl::Status Executor::CaptureAndLaunch(Plan* plan, RunStats* stats,
                                        ExecutionObserver* observer) {
  auto graph = std::make_unique<Plan::GraphState>();
  graph->launch_op.type = "graph_launch";
  for (size_t id = 0; id < plan->slots_.size(); ++id) {
    if (plan->slot_persistable_[id]) {
      graph->persistable_before.emplace_back(static_cast<int>(id), *plan->slots_[id]);
    }
  }
  absl::StatusOr<Device*> device = CaptureDevice(plan->steps_);
  absl::Status captured = device.status();
  Stream* stream = nullptr;
  if (captured.ok()) {
    graph->device = *device;
    stream = graph->device->compute_stream();
    captured = graph->device->BeginCapture(stream);
  }
  if (captured.ok()) {
    plan->graph_ = std::move(graph);
    captured = RunSteps(plan, stats, observer, /*capturing=*/true);
    absl::StatusOr<std::unique_ptr<DeviceGraph>> ended = plan->graph_->device->EndCapture(stream);
    if (captured.ok() && !ended.ok()) {
      captured = absl::Status(ended.status().code(),
                              absl::StrCat("ending the capture: ", ended.status().message()));
    }
    for (const auto& [slot, before] : plan->graph_->persistable_before) {
      const Tensor* was = before.data_tensor();
      const Tensor* now = plan->slots_[slot]->data_tensor();
      const Buffer* buffer = now == nullptr ? nullptr : now->buffer().get();
      if (captured.ok() && (was == nullptr ? nullptr : was->buffer().get()) != buffer) {
        captured = absl::FailedPreconditionError(
            absl::StrCat("persistable '", plan->slot_names_[slot],
                         "' is written into a new buffer on each run, which a replay would not "
                         "read back"));
      }
      plan->graph_->persistable_buffers.emplace_back(slot, buffer);
    }
    if (captured.ok()) plan->graph_->graph = *std::move(ended);
  }
  if (!captured.ok()) {
    plan->graph_blocker_ = std::string(captured.message());
    LOG(WARNING) << "executor: the plan runs eagerly, it cannot be captured as a device graph: "
                 << plan->graph_blocker_;
    // Nothing captured ran: restore what the capture bound, then run eagerly.
    Plan::GraphState* failed = plan->graph_ != nullptr ? plan->graph_.get() : graph.get();
    for (auto& [slot, before] : failed->persistable_before) *plan->slots_[slot] = before;
    plan->graph_.reset();
    *stats = RunStats();
    return RunSteps(plan, stats, observer, /*capturing=*/false);
  }
  plan->graph_->stats = *stats;
  stats->captured = stats->replayed = true;
  return plan->graph_->Launch(plan->slots_, observer);
}

absl::Status Executor::RunSteps(Plan* plan, RunStats* stats, ExecutionObserver* observer,
                                bool capturing) {
  const Block& block = plan->placed_.program.block();
  Plan::GraphState* graph = capturing ? plan->graph_.get() : nullptr;
  for (size_t i = 0; i < plan->steps_.size(); ++i) {
    Plan::Step& step = *plan->steps_[i];
    if (step.folded && plan->constants_ready_) continue;
    if (step.is_copy) {
      Variable* src = plan->slots_[step.inputs[0].second[0]];
      Variable* dst = plan->slots_[step.outputs[0].second[0]];
      const Tensor* from = src->data_tensor();
      const std::string& var = block.ops()[i].inputs.at("X")[0];
      if (from == nullptr || !from->initialized()) {
        return Annotate(absl::FailedPreconditionError(
                            absl::StrCat("variable '", var, "' is not initialised")),
                        step, static_cast<int>(i));
      }
      const CopyKind kind =
          step.copy_to.is_host() ? CopyKind::kDeviceToHost : CopyKind::kHostToDevice;
      // Host side in the device's pinned memory; device to host waits for
      // the data (sync), host to device is queued on the compute stream
      // (async): later kernels on that stream see the data.
      Allocator* alloc = step.copy_to.is_host() ? step.device->host_allocator()
                                                : step.device->allocator();
      absl::StatusOr<Tensor> to = Tensor::Allocate(alloc, from->dtype(), from->shape());
      if (!to.ok()) return Annotate(to.status(), step, static_cast<int>(i));
      const int64_t bytes = static_cast<int64_t>(from->NumBytes());
      const bool sync = kind == CopyKind::kDeviceToHost;
      Stream* stream = step.device->compute_stream();
      OpEvent event;
      if (observer != nullptr) {
        event.op = &step.op;
        event.index = static_cast<int>(i);
        event.place = step.place;
        event.device = step.device;
        event.stream = stream;
        event.is_copy = true;
        event.copy_kind = kind;
        event.sync = sync;
        event.bytes = bytes;
        event.var = var;
        auto consumer = step.op.attrs.find("consumer");
        if (consumer != step.op.attrs.end()) event.consumer = std::get<std::string>(consumer->second);
        observer->OnOpBegin(event);
      }
      VLOG(3) << "Transform Variable " << var << " from "
              << KernelTypeForLog(from->dtype(), from->place()) << " to "
              << KernelTypeForLog(from->dtype(), step.copy_to);
      if (bytes > 0) {
        absl::Status s;
        if (sync) {
          s = step.device->CopyAsync(kind, to->raw_data(), from->raw_data(), bytes, stream);
          if (s.ok()) s = step.device->SynchronizeStream(stream);
        } else {
          const void* source = from->raw_data();
          if (graph == nullptr && from->buffer()->allocator() == step.device->host_allocator()) {
            plan->keep_alive_.push_back(from->buffer());  // read until the run ends
          } else {
            if (step.staging == nullptr || step.staging->size() < static_cast<size_t>(bytes)) {
              absl::StatusOr<std::shared_ptr<Buffer>> staging =
                  Buffer::Allocate(step.device->host_allocator(), bytes);
              if (!staging.ok()) return Annotate(staging.status(), step, static_cast<int>(i));
              step.staging = *std::move(staging);
            }
            std::memcpy(step.staging->data(), source, bytes);
            source = step.staging->data();
          }
          s = step.device->CopyAsync(kind, to->raw_data(), source, bytes, stream);
        }
        RETURN_IF_ERROR(Annotate(s, step, static_cast<int>(i)));
      }
      if (graph != nullptr && !sync) {
        graph->uploads.push_back({step.inputs[0].second[0], bytes > 0 ? step.staging : nullptr,
                                  from->dtype(), from->shape()});
      }
      VLOG(3) << (sync ? "TensorCopySync " : "TensorCopyAsync ") << Dims(from->shape())
              << " from " << from->place().LogName() << " to " << step.copy_to.LogName();
      if (observer != nullptr) observer->OnOpEnd(event);
      (kind == CopyKind::kHostToDevice ? stats->copies_h2d : stats->copies_d2h)++;
      (kind == CopyKind::kHostToDevice ? stats->bytes_h2d : stats->bytes_d2h) += bytes;
      (sync ? stats->sync_copies : stats->async_copies)++;
      CopyRecord record{var, from->place(), step.copy_to, bytes, sync};
      if (auto it = step.op.attrs.find("consumer"); it != step.op.attrs.end()) {
        record.consumer = std::get<std::string>(it->second);
      }
      if (auto it = step.op.attrs.find("reason"); it != step.op.attrs.end()) {
        record.reason = std::get<std::string>(it->second);
      }
      stats->ledger.push_back(std::move(record));
      if (src->is_selected_rows()) {
        const SelectedRows& rows = src->selected_rows();
        dst->set(SelectedRows(rows.height(), rows.rows(), *std::move(to)));
      } else {
        dst->set(*std::move(to));
      }
    } else {
      KernelContext ctx(step.op, *step.def, step.device, step.device->compute_stream(),
                        step.in_args, step.out_args);
      ctx.set_host_output_allocator(step.host_output_allocator);
      RETURN_IF_ERROR(Annotate(ctx.CheckInputPlaces(), step, static_cast<int>(i)));
      if (graph != nullptr) {
        for (const auto& [arg, ids] : step.inputs) {
          if (!step.def->IsHostMemory(arg)) continue;
          for (int id : ids) {
            const Tensor& t = *plan->slots_[id]->data_tensor();  // CheckInputPlaces: present
            graph->host_values.push_back(
                {id, step.op.type, t.dtype(), t.shape(),
                 std::string(static_cast<const char*>(t.raw_data()), t.NumBytes())});
          }
        }
        Hold(step.inputs, plan->slots_, &graph->held);
        Hold(step.outputs, plan->slots_, &graph->held);  // e.g. g before g = g + partial
      }
      OpEvent event;
      if (observer != nullptr) {
        event.op = &step.op;
        event.index = static_cast<int>(i);
        event.place = step.place;
        event.device = step.device;
        event.stream = step.device->compute_stream();
        observer->OnOpBegin(event);
      }
      const int previous_device =
          step.device_factory ? step.device_factory->ExchangeCurrentDevice(step.place.index()) : 0;
      absl::Status computed = step.kernel->Compute(&ctx);
      if (step.device_factory != nullptr && previous_device != step.place.index()) {
        step.device_factory->ExchangeCurrentDevice(previous_device);
      }
      RETURN_IF_ERROR(Annotate(computed, step, static_cast<int>(i)));
      if (observer != nullptr) observer->OnOpEnd(event);
      stats->ops++;
      if (VLOG_IS_ON(3)) {
        VLOG(3) << step.place.LogName() << " Op(" << step.op.type << "), inputs:{"
                << ArgsForLog(step.inputs, plan->slots_, plan->slot_names_) << "}, outputs:{"
                << ArgsForLog(step.outputs, plan->slots_, plan->slot_names_) << "}";
      }
    }
    if (graph != nullptr) {
      Hold(step.outputs, plan->slots_, &graph->held);
    } else {
      for (int id : step.release_after) plan->slots_[id]->clear();
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> Executor::Run(const Program& program, Scope* scope,
                                                  const FeedMap& feeds,
                                                  const std::vector<std::string>& fetches,
                                                  RunStats* stats) {
  std::vector<std::string> feed_names;
  for (const auto& [name, t] : feeds) feed_names.push_back(name);
  ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan, Prepare(program, *scope, feed_names, fetches));
  return Run(plan.get(), scope, feeds, stats);
}

}  // namespace tandem
