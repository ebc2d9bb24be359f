#include "framework/runtime/executor.h"

#include <atomic>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "framework/fusion/fuse_patterns.h"
#include "framework/placement/program_validation.h"
#include "framework/runtime/concurrent_run.h"
#include "framework/runtime/execution_observer.h"
#include "framework/runtime/graph_capture.h"
#include "framework/runtime/host_worker_pool.h"
#include "framework/runtime/plan_passes.h"
#include "framework/runtime/step_runner.h"
#include "glog/logging.h"

namespace tandem {

// Here, so that --vmodule=executor=N turns them on (plan_state.h).
bool ExecutorVlogIsOn(int level) { return VLOG_IS_ON(level); }
void ExecutorLog(const std::string& line) { LOG(INFO) << line; }

Plan::Plan(std::unique_ptr<PlanState> state) : state_(std::move(state)) {}

Plan::~Plan() {
  // Runs still in flight (their handles were dropped) read this plan.
  PlanState& s = *state_;
  for (const std::shared_ptr<PendingRun>& p : s.in_flight) s.scheduler->Wait(p->run).IgnoreError();
  if (s.in_flight.empty()) return;
  for (Device* d : s.devices) d->Synchronize().IgnoreError();
  for (const std::shared_ptr<PendingRun>& p : s.in_flight) s.scheduler->Forget(p->run);
}

const PlacedProgram& Plan::placed() const { return state_->placed; }
std::string Plan::PlacementTable() const {
  const PlanState& s = *state_;
  std::string schedule =
      absl::StrCat("schedule: ", s.schedule, "; runs ",
                   s.pipeline_blocker.empty() ? "may overlap (RunAsync)" : "cannot overlap: ",
                   s.pipeline_blocker, "\n");
  if (s.schedule_trial.decided()) {
    absl::StrAppend(&schedule, "schedule chosen by timing runs: ", s.schedule_trial.Summary(),
                    "\n");
  }
  if (!s.fusion_summary.empty()) absl::StrAppend(&schedule, s.fusion_summary, "\n");
  return s.placed.TableString() + s.memory.ToString() + schedule;
}
const MemoryEstimate& Plan::MemoryEstimate() const { return state_->memory; }
const std::string& Plan::graph_fallback_reason() const { return state_->graph_blocker; }
std::string Plan::schedule_choice() const { return state_->schedule_trial.Summary(); }
std::string Plan::graph_summary() const {
  return state_->graph == nullptr ? "" : state_->graph->Summary(*state_);
}

RunHandle::RunHandle() = default;
RunHandle::~RunHandle() = default;
RunHandle::RunHandle(RunHandle&&) noexcept = default;
RunHandle& RunHandle::operator=(RunHandle&&) noexcept = default;
RunHandle::RunHandle(Plan* plan, std::shared_ptr<PendingRun> run)
    : plan_(plan), run_(std::move(run)) {}

absl::StatusOr<std::vector<Tensor>> RunHandle::Wait(RunStats* stats) {
  if (run_ == nullptr || run_->waited) {
    return absl::FailedPreconditionError(
        "RunHandle::Wait: no run to wait for (a default handle, or Wait was called already)");
  }
  return Executor::WaitFor(plan_, run_.get(), stats);
}

std::string RunStats::DebugString() const {
  return absl::StrCat(
      ops, " ops, ", copies_h2d, " H2D (", bytes_h2d, " B), ", copies_d2h, " D2H (", bytes_d2h,
      " B), ", sync_copies, " sync, ", async_copies, " async, ", fetch_copies, " fetch",
      captured ? ", captured" : "", replayed ? ", replayed" : "",
      graph_launches > 0 ? absl::StrCat(", ", graph_launches, " graph launches") : "",
      ungraphed_device_steps > 0 ? absl::StrCat(", ", ungraphed_device_steps, " device steps eager")
                                 : "");
}

Executor::Executor(Place default_place, ExecutorOptions options)
    : default_place_(default_place),
      options_(options),
      cancel_requests_(std::make_shared<std::atomic<uint64_t>>(0)) {}
Executor::~Executor() = default;

absl::StatusOr<std::unique_ptr<Plan>> Executor::Prepare(const Program& program, const Scope& scope,
                                                        const std::vector<std::string>& feeds,
                                                        const std::vector<std::string>& fetches) {
  return PrepareFor(program, scope, feeds, fetches, /*runs_once=*/false);
}

absl::StatusOr<Program> Executor::FusedProgram(const Program& program,
                                               const std::vector<std::string>& feeds,
                                               const std::vector<std::string>& fetches,
                                               std::string* summary) const {
  Program fused = program;
  FusionOptions fusion;
  fusion.keep.insert(feeds.begin(), feeds.end());
  fusion.keep.insert(fetches.begin(), fetches.end());
  fusion.has_kernels = [&](const std::string& op_device) {
    absl::StatusOr<Place> place = op_device.empty() ? default_place_ : ParsePlace(op_device);
    if (!place.ok()) return false;
    for (const char* type :
         {"l2_normalize_square_error_mean", "l2_normalize_square_error_mean_grad"}) {
      if (!KernelRegistry::Global().HasKernel(type, place->type())) return false;
    }
    return true;
  };
  ASSIGN_OR_RETURN(const int chains, FuseL2NormalizeSquareErrorMean(fusion, &fused));
  *summary =
      chains == 0
          ? "fused at Prepare (fuse_patterns): nothing (no chain whose intermediates only "
            "it reads, under one device_guard, on a place with the fused kernels)"
          : absl::StrCat("fused at Prepare (fuse_patterns): ", chains,
                         " l2_normalize -> square_error_cost -> mean chain", chains == 1 ? "" : "s",
                         " into l2_normalize_square_error_mean (with its gradient ops)");
  return fused;
}

absl::StatusOr<std::unique_ptr<Plan>> Executor::PrepareFor(const Program& given, const Scope& scope,
                                                           const std::vector<std::string>& feeds,
                                                           const std::vector<std::string>& fetches,
                                                           bool runs_once) {
  std::optional<Program> fused;
  std::string fusion_summary;
  if (options_.fuse_patterns) {
    ASSIGN_OR_RETURN(fused, FusedProgram(given, feeds, fetches, &fusion_summary));
  }
  const Program& program = fused.has_value() ? *fused : given;
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
  RETURN_IF_ERROR(ValidateProgramForRun(program, scope, feeds));
  auto plan = std::make_unique<Plan>(std::make_unique<PlanState>());
  if (options_.placement_planner != nullptr) {
    RETURN_IF_ERROR(options_.placement_planner->Plan(
        {program, feeds, fetches, options_.feed_shapes,
         options_.in_order || options_.check_numerics || runs_once},
        &popts));
  }
  ASSIGN_OR_RETURN(plan->state().placed, PlaceProgram(program, popts));
  for (const std::string& f : fetches) {
    if (!plan->state().placed.program.block().HasVar(f)) {
      return absl::InvalidArgumentError(absl::StrCat("fetch '", f, "' is not a program variable"));
    }
  }
  plan->state().feed_names = feeds;
  plan->state().fetch_names = fetches;
  ASSIGN_OR_RETURN(
      plan->state().memory,
      EstimateMemory(plan->state().placed,
                     PlanMemoryOptions(plan->state().placed, feeds, fetches, options_.feed_shapes,
                                       options_.in_order || options_.check_numerics)));
  RETURN_IF_ERROR(CheckMemoryFits(plan->state().placed, plan->state().memory,
                                  AvailableMemory(plan->state().memory)));
  plan->state().atomic_updates = options_.atomic_updates;
  RETURN_IF_ERROR(BuildPlan(&plan->state(), feeds, fetches));
  plan->state().schedule_trial = ScheduleTrial(options_.schedule_trial);
  plan->state().fusion_summary = std::move(fusion_summary);
  return plan;
}

absl::Status Executor::ValidateFeeds(const Plan& plan, const FeedMap& feeds) {
  const Block& block = plan.state().placed.program.block();
  for (const std::string& name : plan.state().feed_names) {
    auto it = feeds.find(name);
    if (it == feeds.end()) {
      return absl::InvalidArgumentError(absl::StrCat("feed '", name, "' was not given"));
    }
    const Tensor& t = it->second;
    const VarDesc* d = block.FindVar(name);
    if (!t.initialized()) {
      return absl::InvalidArgumentError(absl::StrCat("feed '", name, "' is an empty tensor"));
    }
    if (!t.place().is_host()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "feed '", name, "' is on ", t.place().ToString(), "; feeds are host tensors"));
    }
    bool shape_ok = d->shape.rank() == t.shape().rank();
    for (int k = 0; shape_ok && k < d->shape.rank(); ++k) {
      shape_ok = d->shape.dim(k) == -1 || d->shape.dim(k) == t.shape().dim(k);
    }
    if (t.dtype() != d->dtype || !shape_ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("feed '", name, "' is ", DataTypeName(t.dtype()), t.shape().ToString(),
                       ", the program declares ", DataTypeName(d->dtype), d->shape.ToString()));
    }
  }
  return absl::OkStatus();
}

namespace {

// A copy of host tensor `t` (variable `name`) in memory of its own: a run
// in flight must not see the caller refill a tensor it fed, nor a caller
// see later runs update a persistable it fetched.
absl::StatusOr<Tensor> CopyHostTensor(const std::string& name, const Tensor& t) {
  absl::StatusOr<Tensor> copy = CopyTensorTo(t, CPUPlace());
  if (!copy.ok()) {
    return absl::Status(copy.status().code(),
                        absl::StrCat("copying '", name, "': ", copy.status().message()));
  }
  return copy;
}

}  // namespace

namespace {

// InvalidArgument when a persistable of the scope holds another dtype than
// the program declares (a checkpoint saved in bfloat16 loaded for a
// float32 program, say): kernels would read its bytes as the wrong type.
absl::Status ValidatePersistableDtypes(const PlanState& state, const Scope& scope) {
  const Block& block = state.placed.program.block();
  for (size_t id = 0; id < state.slot_names.size(); ++id) {
    if (!state.slot_persistable[id]) continue;
    const Variable* v = scope.Find(state.slot_names[id]);
    const Tensor* t = v == nullptr ? nullptr : v->data_tensor();
    const VarDesc* d = block.FindVar(state.slot_names[id]);
    if (t == nullptr || !t->initialized() || d == nullptr || t->dtype() == d->dtype) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "persistable '", d->name, "' holds ", DataTypeName(t->dtype()), t->shape().ToString(),
        " but the program declares ", DataTypeName(d->dtype), d->shape.ToString(),
        "; cast it (or load a checkpoint of the declared dtype) before running"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MovePersistablesHome(const PlacedProgram& placed, Scope* scope) {
  for (const auto& [var, home] : placed.homes) {
    Variable* v = scope->Find(var);
    const Tensor* t = v == nullptr ? nullptr : v->data_tensor();
    if (t == nullptr || !t->initialized() || t->place() == home || v->is_selected_rows()) continue;
    absl::StatusOr<Tensor> moved = CopyTensorTo(*t, home);
    if (!moved.ok()) {
      return absl::Status(
          moved.status().code(),
          absl::StrCat("moving persistable '", var, "' from ", t->place().ToString(), " to ",
                       home.ToString(), ", where the plan keeps it: ", moved.status().message()));
    }
    v->set(*std::move(moved));
  }
  return absl::OkStatus();
}

void Executor::BindFrame(Plan* plan, int frame_index, Scope* scope, uint64_t cancel_requests) {
  PlanState::Frame& frame = *plan->state().frames[frame_index];
  static std::atomic<uint64_t> runs_bound{0};
  frame.run_id = runs_bound.fetch_add(1, std::memory_order_relaxed) + 1;
  frame.cancel_requests = cancel_requests_;
  frame.cancel_requests_seen = cancel_requests;
  if (frame.bound_scope == scope) return;
  for (size_t id = 0; id < frame.slots.size(); ++id) {
    Variable* local =
        plan->state().slot_folded[id] ? &plan->state().frames[0]->locals[id] : &frame.locals[id];
    frame.slots[id] =
        plan->state().slot_persistable[id] ? scope->Var(plan->state().slot_names[id]) : local;
  }
  for (size_t i = 0; i < plan->state().steps.size(); ++i) {
    const PlanState::Step& step = *plan->state().steps[i];
    frame.in_args[i].clear();
    frame.out_args[i].clear();
    for (const auto& [arg, ids] : step.inputs) {
      std::vector<Variable*> vars;
      for (int id : ids) vars.push_back(frame.slots[id]);
      frame.in_args[i].emplace_back(arg, std::move(vars));
    }
    for (const auto& [arg, ids] : step.outputs) {
      std::vector<Variable*> vars;
      for (int id : ids) vars.push_back(frame.slots[id]);
      frame.out_args[i].emplace_back(arg, std::move(vars));
    }
  }
  frame.bound_scope = scope;
  if (frame_index == 0) plan->state().graph.reset();  // it holds the other scope's buffers
}

absl::Status Executor::BindAndFeed(Plan* plan, int frame_index, Scope* scope, const FeedMap& feeds,
                                   uint64_t cancel_requests, bool copy_feeds) {
  BindFrame(plan, frame_index, scope, cancel_requests);
  PlanState::Frame& frame = *plan->state().frames[frame_index];
  for (size_t i = 0; i < plan->state().feed_names.size(); ++i) {
    const std::string& name = plan->state().feed_names[i];
    const Tensor& t = feeds.at(name);
    if (!copy_feeds) {
      frame.slots[plan->state().feed_slots[i]]->set(t);
      continue;
    }
    // The frame's previous copy goes first (its run is over): two runs in
    // flight hold two sets of feeds, as the memory estimate counts.
    Variable* slot = frame.slots[plan->state().feed_slots[i]];
    slot->clear();
    ASSIGN_OR_RETURN(Tensor copy, CopyHostTensor(name, t));
    slot->set(std::move(copy));
  }
  return absl::OkStatus();
}

const std::shared_ptr<HostWorkerPool>& Executor::Pool() {
  if (pool_ == nullptr) {
    pool_ = std::make_shared<HostWorkerPool>(
        options_.host_workers > 0 ? options_.host_workers : HostWorkerPool::DefaultSize());
  }
  return pool_;
}

void Executor::AdoptPlan(Plan* plan) {
  if (plan->state().scheduler != nullptr && plan->state().scheduler->pool() == Pool().get()) return;
  while (FinishOldest(plan)) {  // the runs of another executor's scheduler
  }
  plan->state().scheduler = std::make_unique<RunScheduler>(&plan->state(), Pool());
}

absl::Status Executor::RunEagerly(Plan* plan, RunStats* stats, ExecutionObserver* observer,
                                  bool in_order) {
  // A host-only plan with one worker, or whose steps form a chain, has
  // nothing to overlap: program order on this thread gives the same results
  // without the hand-offs.
  if (in_order || options_.in_order || options_.check_numerics || plan->state().serial ||
      (plan->state().host_only && Pool()->size() == 1)) {
    StepRunContext run;
    run.frame = plan->state().frames[0].get();
    run.observer = observer;
    run.check_numerics = options_.check_numerics;
    return PlanRunner::RunInOrder(&plan->state(), stats, run);
  }
  AdoptPlan(plan);
  ConcurrentRun* run = plan->state().scheduler->Start(plan->state().frames[0].get(), stats,
                                                      observer, /*caller_waits=*/true);
  const absl::Status ran = plan->state().scheduler->Wait(run);
  plan->state().scheduler->Forget(run);  // solo: no run after it
  return ran;
}

absl::StatusOr<std::vector<Tensor>> Executor::Run(Plan* plan, Scope* scope, const FeedMap& feeds,
                                                  RunStats* stats) {
  ASSIGN_OR_RETURN(RunHandle handle, StartRun(plan, scope, feeds, /*caller_waits=*/true));
  return handle.Wait(stats);
}

bool Executor::TrialRunsInOrder(Plan* plan) {
  PlanState& state = plan->state();
  if (options_.in_order || options_.check_numerics || options_.capture_graphs ||
      (state.host_only && Pool()->size() == 1)) {
    return false;  // in order already, or never in order
  }
  ScheduleTrial& trial = state.schedule_trial;
  if (trial.NextRunStartsPhase()) {
    while (FinishOldest(plan)) {  // their time belongs to the phase that started them
    }
  }
  const bool was_decided = trial.decided();
  const absl::Time now = trial.NeedsTime() ? absl::Now() : absl::InfinitePast();
  const bool in_order = trial.NextRun(now) == Schedule::kInOrder;
  if (trial.decided() && !was_decided) {
    LOG(INFO) << "executor: a plan of " << state.steps.size() << " steps runs " << trial.Summary();
  }
  return in_order;
}

bool Executor::CanPipeline(const Plan& plan) {
  return !options_.in_order && !options_.check_numerics && !options_.capture_graphs &&
         plan.state().constants_ready && plan.state().graph == nullptr &&
         plan.state().pipeline_blocker.empty() && !(plan.state().host_only && Pool()->size() == 1);
}

absl::StatusOr<RunHandle> Executor::RunAsync(Plan* plan, Scope* scope, const FeedMap& feeds) {
  return StartRun(plan, scope, feeds, /*caller_waits=*/false);
}

absl::StatusOr<RunHandle> Executor::StartRun(Plan* plan, Scope* scope, const FeedMap& feeds,
                                             bool caller_waits) {
  const uint64_t cancel_requests = cancel_requests_->load(std::memory_order_relaxed);
  if (plan == nullptr || scope == nullptr) {
    return absl::InvalidArgumentError("Executor::RunAsync: the plan and the scope must be given");
  }
  RETURN_IF_ERROR(ValidateFeeds(*plan, feeds));  // at once, whichever way the run goes
  PlanState& state = plan->state();
  const bool continues_in_flight =
      !state.in_flight.empty() && state.frames[state.in_flight.back()->frame]->bound_scope == scope;
  if (!continues_in_flight) {
    // Runs in flight over another scope end before this one starts anyway;
    // they end first so that nothing below reads a variable they write.
    while (FinishOldest(plan)) {
    }
    RETURN_IF_ERROR(ValidatePersistableDtypes(state, *scope));
    RETURN_IF_ERROR(MovePersistablesHome(state.placed, scope));  // the planner's homes
  }
  // Else the run in flight over this scope checked its persistables when it
  // started, and runs write them only in their declared dtype, at their homes.
  auto pending = std::make_shared<PendingRun>();
  const bool trial_in_order = TrialRunsInOrder(plan);
  auto run_now = [&]() {  // after the runs in flight, to the end
    while (FinishOldest(plan)) {
    }
    pending->result = RunNow(plan, scope, feeds, cancel_requests, &pending->stats, trial_in_order);
    pending->over = true;
    return RunHandle(plan, std::move(pending));
  };
  // A run the caller waits for, of a serial plan with no run in flight:
  // nothing could overlap it, so it runs in order (RunEagerly).
  const bool nothing_overlaps =
      caller_waits && plan->state().serial && plan->state().in_flight.empty();
  if (trial_in_order || nothing_overlaps || !CanPipeline(*plan)) {
    if (!caller_waits && !plan->state().pipeline_blocker.empty() &&
        !plan->state().pipeline_blocker_reported) {
      LOG(WARNING) << "executor: runs of this plan cannot overlap: "
                   << plan->state().pipeline_blocker;
      plan->state().pipeline_blocker_reported = true;
    }
    return run_now();
  }
  AdoptPlan(plan);
  while (plan->state().in_flight.size() >= kPipelineFrames ||
         (!plan->state().in_flight.empty() &&
          plan->state().frames[plan->state().in_flight.back()->frame]->bound_scope != scope)) {
    FinishOldest(plan);
  }
  pending->frame = plan->state().in_flight.empty()
                       ? 0
                       : (plan->state().in_flight.back()->frame + 1) % kPipelineFrames;
  // Every frame and event before the first pipelined run: none is in
  // flight yet, so no worker reads what is added.
  while (static_cast<int>(plan->state().frames.size()) < kPipelineFrames) {
    if (absl::Status made = MakeFrame(&plan->state()); !made.ok()) {
      // E.g. a device without events: this plan runs one run at a time.
      LOG(WARNING) << "executor: runs of this plan cannot overlap: " << made;
      plan->state().pipeline_blocker = std::string(made.message());
      return run_now();
    }
  }
  // The caller may refill its feed tensors while this run is in flight.
  RETURN_IF_ERROR(BindAndFeed(plan, pending->frame, scope, feeds, cancel_requests,
                              /*copy_feeds=*/!caller_waits));
  ExecutionObserver* observer = GetExecutionObserver();
  if (observer != nullptr && plan->state().in_flight.empty()) {
    observer->OnRunBegin();
    pending->observed = true;
  }
  pending->run = plan->state().scheduler->Start(plan->state().frames[pending->frame].get(),
                                                &pending->stats, observer, caller_waits);
  plan->state().in_flight.push_back(pending);
  return RunHandle(plan, std::move(pending));
}

bool Executor::FinishOldest(Plan* plan) {
  if (plan->state().in_flight.empty()) return false;
  std::shared_ptr<PendingRun> p = plan->state().in_flight.front();
  plan->state().in_flight.pop_front();
  const absl::Status ran = plan->state().scheduler->Wait(p->run);
  if (ran.ok()) {
    p->result = FinishPipelinedRun(plan, p.get());
  } else {
    p->result = ran;
  }
  if (!p->result.ok()) {
    // Leave nothing running: the next run starts from quiet devices.
    for (Device* d : plan->state().devices) d->Synchronize().IgnoreError();
    plan->state().frames[p->frame]->keep_alive.Clear();
  }
  // Only now, its device work complete, do the next run's host steps stop
  // waiting for its events (and its frame may be bound again).
  plan->state().scheduler->Forget(p->run);
  p->run = nullptr;
  p->over = true;
  ExecutionObserver* observer = GetExecutionObserver();
  if (observer != nullptr && p->observed) {
    observer->OnRunEnd(p->stats);
    if (!plan->state().in_flight.empty()) {
      observer->OnRunBegin();
      plan->state().in_flight.front()->observed = true;
    }
  }
  return true;
}

absl::StatusOr<std::vector<Tensor>> Executor::WaitFor(Plan* plan, PendingRun* run,
                                                      RunStats* stats) {
  while (!run->over && FinishOldest(plan)) {
  }
  run->waited = true;
  if (stats != nullptr) *stats = run->stats;
  return std::move(run->result);
}

absl::StatusOr<std::vector<Tensor>> Executor::FinishPipelinedRun(Plan* plan, PendingRun* run) {
  RETURN_IF_ERROR(WaitForDevices(plan, run->frame, /*end_events=*/true, /*in_order=*/false));
  // Its streams were not synchronised (the next run uses them): its
  // devices' asynchronous errors are taken by run.
  absl::Status checks;
  for (Device* d : plan->state().devices)
    checks.Update(d->TakeRunErrors(plan->state().frames[run->frame]->run_id));
  RETURN_IF_ERROR(checks);
  return CollectFetches(plan, run->frame, &run->stats);
}

absl::Status Executor::WaitForDevices(Plan* plan, int frame_index, bool end_events, bool in_order) {
  PlanState::Frame& frame = *plan->state().frames[frame_index];
  ExecutionObserver* observer = GetExecutionObserver();
  OpEvent wait;
  if (observer != nullptr) observer->OnWaitBegin(wait);
  for (size_t d = 0; d < plan->state().devices.size(); ++d) {
    Device* device = plan->state().devices[d];
    if (end_events && frame.ends_recorded) {  // the run's own work, not the next run's
      RETURN_IF_ERROR(device->SynchronizeEvent(frame.compute_end[d].get()));
      if (plan->state().UsesCopyStream(device, frame.solo)) {
        RETURN_IF_ERROR(device->SynchronizeEvent(frame.copy_end[d].get()));
      }
      continue;
    }
    RETURN_IF_ERROR(device->SynchronizeStream(device->compute_stream()));
    if (!in_order && plan->state().UsesCopyStream(device, frame.solo)) {
      RETURN_IF_ERROR(device->SynchronizeStream(device->copy_stream()));
    }
    auto comm = plan->state().comm_streams.find(device);
    if (!in_order && comm != plan->state().comm_streams.end()) {
      RETURN_IF_ERROR(device->SynchronizeStream(comm->second.get()));
    }
  }
  if (observer != nullptr) observer->OnWaitEnd(wait);
  frame.keep_alive.Clear();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> Executor::RunNow(Plan* plan, Scope* scope, const FeedMap& feeds,
                                                     uint64_t cancel_requests, RunStats* stats,
                                                     bool in_order) {
  *stats = RunStats();
  ExecutionObserver* observer = GetExecutionObserver();
  if (observer != nullptr) observer->OnRunBegin();
  RETURN_IF_ERROR(BindAndFeed(plan, 0, scope, feeds, cancel_requests, /*copy_feeds=*/false));
  PlanState::Frame& frame = *plan->state().frames[0];
  absl::Status ran;
  if (!plan->state().graph_blocker.empty()) plan->state().graph.reset();  // its runs ended
  if (options_.capture_graphs && plan->state().constants_ready &&
      plan->state().graph_blocker.empty()) {
    absl::StatusOr<bool> graphed = RunWithGraphs(&plan->state(), stats, observer);
    ran = !graphed.ok() ? graphed.status()
          : *graphed    ? absl::OkStatus()
                        : RunEagerly(plan, stats, observer, in_order);
  } else {
    ran = RunEagerly(plan, stats, observer, in_order);
  }
  if (!ran.ok()) {
    // Leave nothing running: the next run starts from a quiet device.
    for (Device* d : plan->state().devices) d->Synchronize().IgnoreError();
    frame.keep_alive.Clear();
    return ran;
  }
  return FinishRun(plan, stats, in_order);
}

absl::StatusOr<std::vector<Tensor>> Executor::FinishRun(Plan* plan, RunStats* stats,
                                                        bool in_order) {
  RETURN_IF_ERROR(WaitForDevices(plan, 0, /*end_events=*/false, in_order || options_.in_order));
  plan->state().constants_ready = true;
  ExecutionObserver* observer = GetExecutionObserver();
  absl::StatusOr<std::vector<Tensor>> fetched = CollectFetches(plan, 0, stats);
  if (observer != nullptr) observer->OnRunEnd(*stats);
  return fetched;
}

absl::StatusOr<Stream*> Executor::FetchStream(Plan* plan, Device* device) {
  auto it = plan->state().fetch_streams.find(device);
  if (it == plan->state().fetch_streams.end()) {
    ASSIGN_OR_RETURN(std::unique_ptr<Stream> stream, device->CreateStream());
    it = plan->state().fetch_streams.emplace(device, std::move(stream)).first;
  }
  return it->second.get();
}

absl::StatusOr<std::vector<Tensor>> Executor::CollectFetches(Plan* plan, int frame_index,
                                                             RunStats* stats) {
  PlanState::Frame& frame = *plan->state().frames[frame_index];
  for (auto& reported : frame.reports) {
    for (auto& [name, value] : reported) stats->reports[name] = value;
    reported.clear();
  }
  std::vector<Tensor> fetched;
  for (size_t i = 0; i < plan->state().fetch_slots.size(); ++i) {
    const Variable* v = frame.slots[plan->state().fetch_slots[i]];
    const Tensor* t = v->data_tensor();
    if (t == nullptr || !t->initialized()) {
      return absl::FailedPreconditionError(absl::StrCat("fetch '", plan->state().fetch_names[i],
                                                        "' was not computed by the program"));
    }
    const int slot = plan->state().fetch_slots[i];
    const bool graph_written =
        plan->state().graph != nullptr && plan->state().graph->Writes(t->buffer().get());
    if (t->place().is_host() && !plan->state().slot_persistable[slot] && !graph_written) {
      fetched.push_back(*t);  // this run's own value: the next run makes a new one
      continue;
    }
    if (t->place().is_host()) {  // a copy: later runs (or launches) write the buffer again
      ASSIGN_OR_RETURN(Tensor copy, CopyHostTensor(plan->state().fetch_names[i], *t));
      fetched.push_back(std::move(copy));
      stats->fetch_bytes += static_cast<int64_t>(t->NumBytes());
      continue;
    }
    ASSIGN_OR_RETURN(Device * device, DeviceRegistry::Global().GetDevice(t->place()));
    const bool ready = i < frame.fetch_host.size() && frame.fetch_host[i].initialized() &&
                       frame.fetch_host[i].dtype() == t->dtype() &&
                       frame.fetch_host[i].shape() == t->shape();
    absl::StatusOr<Tensor> host =
        ready ? std::move(frame.fetch_host[i])
              : Tensor::Allocate(device->host_allocator(), t->dtype(), t->shape());
    if (!host.ok()) {
      return absl::Status(host.status().code(),
                          absl::StrCat("fetching '", plan->state().fetch_names[i], "' from ",
                                       t->place().ToString(), ": ", host.status().message()));
    }
    if (t->NumBytes() > 0) {
      // The value is final (its run's device work completed). Pipelined:
      // copy it on a stream of its own, past the next run's queued work.
      Stream* stream = device->compute_stream();
      if (frame_index != 0 || plan->state().frames.size() > 1) {
        ASSIGN_OR_RETURN(stream, FetchStream(plan, device));
      }
      RETURN_IF_ERROR(device->CopyAsync(CopyKind::kDeviceToHost, host->raw_data(), t->raw_data(),
                                        t->NumBytes(), stream));
      RETURN_IF_ERROR(device->SynchronizeStream(stream));
    }
    stats->fetch_copies++;
    stats->fetch_bytes += static_cast<int64_t>(t->NumBytes());
    fetched.push_back(*std::move(host));
  }
  frame.fetch_host.clear();
  if (plan->state().graph == nullptr) {  // graphs write their buffers again on each launch
    for (int id : plan->state().fetch_slots) {
      if (!plan->state().slot_persistable[id] && !plan->state().slot_folded[id])
        frame.slots[id]->clear();
    }
  }
  return fetched;
}

absl::StatusOr<std::vector<Tensor>> Executor::Run(const Program& program, Scope* scope,
                                                  const FeedMap& feeds,
                                                  const std::vector<std::string>& fetches,
                                                  RunStats* stats) {
  std::vector<std::string> feed_names;
  for (const auto& [name, t] : feeds) feed_names.push_back(name);
  // Runs once: no second run can overlap it, so the automatic placement
  // budgets its one-run peak (a startup program writes each initialiser's
  // output once).
  ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan,
                   PrepareFor(program, *scope, feed_names, fetches, /*runs_once=*/true));
  return Run(plan.get(), scope, feeds, stats);
}

}  // namespace tandem
