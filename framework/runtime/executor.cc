#include "framework/runtime/executor.h"

#include <atomic>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "framework/runtime/execution_observer.h"
#include "framework/runtime/host_worker_pool.h"
#include "framework/runtime/plan_internal.h"
#include "framework/runtime/program_validation.h"
#include "glog/logging.h"

namespace tandem {

absl::Status BuildPlan(Plan* plan, const std::vector<std::string>& feeds,
                       const std::vector<std::string>& fetches);  // plan_passes.cc

namespace {
std::atomic<ExecutionObserver*> g_observer{nullptr};
}  // namespace

void SetExecutionObserver(ExecutionObserver* observer) { g_observer.store(observer); }
ExecutionObserver* GetExecutionObserver() { return g_observer.load(std::memory_order_acquire); }

bool ExecutorVlogIsOn(int level) { return VLOG_IS_ON(level); }
void ExecutorLog(const std::string& line) { LOG(INFO) << line; }

Plan::Plan() : keep_alive_(std::make_unique<KeepAlive>()) {}
Plan::~Plan() = default;

std::string RunStats::DebugString() const {
  return absl::StrCat(ops, " ops, ", copies_h2d, " H2D (", bytes_h2d, " B), ", copies_d2h, " D2H (",
                      bytes_d2h, " B), ", sync_copies, " sync, ", async_copies, " async, ",
                      fetch_copies, " fetch", captured ? ", captured" : "",
                      replayed ? ", replayed" : "");
}

Executor::Executor(Place default_place, ExecutorOptions options)
    : default_place_(default_place), options_(options) {}
Executor::~Executor() = default;

absl::StatusOr<std::unique_ptr<Plan>> Executor::Prepare(const Program& program, const Scope& scope,
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
  RETURN_IF_ERROR(ValidateProgramForRun(program, scope, feeds));
  std::unique_ptr<Plan> plan(new Plan());
  ASSIGN_OR_RETURN(plan->placed_, PlaceProgram(program, popts));
  for (const std::string& f : fetches) {
    if (!plan->placed_.program.block().HasVar(f)) {
      return absl::InvalidArgumentError(absl::StrCat("fetch '", f, "' is not a program variable"));
    }
  }
  plan->feed_names_ = feeds;
  plan->fetch_names_ = fetches;
  RETURN_IF_ERROR(BuildPlan(plan.get(), feeds, fetches));
  return plan;
}

absl::Status Executor::BindAndFeed(Plan* plan, Scope* scope, const FeedMap& feeds) {
  if (plan->bound_scope_ != scope) {
    for (size_t id = 0; id < plan->slots_.size(); ++id) {
      plan->slots_[id] =
          plan->slot_persistable_[id] ? scope->Var(plan->slot_names_[id]) : &plan->locals_[id];
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
      return absl::InvalidArgumentError(
          absl::StrCat("feed '", name, "' is ", DataTypeName(t.dtype()), t.shape().ToString(),
                       ", the program declares ", DataTypeName(d->dtype), d->shape.ToString()));
    }
    plan->slots_[plan->feed_slots_[i]]->set(t);
  }

  return absl::OkStatus();
}

absl::Status Executor::RunEagerly(Plan* plan, RunStats* stats, ExecutionObserver* observer) {
  if (pool_ == nullptr && !options_.in_order && !options_.check_numerics) {
    pool_ = std::make_unique<HostWorkerPool>(
        options_.host_workers > 0 ? options_.host_workers : HostWorkerPool::DefaultSize());
  }
  // A host-only plan with one worker has nothing to overlap: program order
  // on this thread gives the same results without the hand-offs.
  if (options_.in_order || options_.check_numerics ||
      (plan->host_only_ && pool_->size() == 1)) {
    StepRunContext run;
    run.observer = observer;
    run.check_numerics = options_.check_numerics;
    run.keep_alive = plan->keep_alive_.get();
    return PlanRunner::RunInOrder(plan, stats, run);
  }
  return PlanRunner::RunConcurrently(plan, pool_.get(), stats, observer);
}

absl::StatusOr<std::vector<Tensor>> Executor::Run(Plan* plan, Scope* scope, const FeedMap& feeds,
                                                  RunStats* stats) {
  RunStats local_stats;
  if (stats == nullptr) stats = &local_stats;
  *stats = RunStats();
  ExecutionObserver* observer = GetExecutionObserver();
  if (observer != nullptr) observer->OnRunBegin();
  RETURN_IF_ERROR(BindAndFeed(plan, scope, feeds));
  absl::Status ran;
  if (plan->graph_ != nullptr) {
    const std::string stale = plan->graph_->StaleReason(plan->slots_, plan->slot_names_);
    if (stale.empty()) {
      ran = plan->graph_->Launch(plan->slots_, observer);
      *stats = plan->graph_->stats;
      stats->replayed = true;
    } else {
      VLOG(1) << "executor: capturing the plan again: " << stale;
      plan->graph_.reset();
    }
  }
  if (!stats->replayed) {
    if (options_.capture_graphs && plan->constants_ready_ && plan->graph_blocker_.empty()) {
      ran = CaptureAndLaunch(plan, stats, observer);
    } else {
      ran = RunEagerly(plan, stats, observer);
    }
  }
  if (!ran.ok()) {
    // Leave nothing running: the next run starts from a quiet device.
    for (Device* d : plan->devices_) d->Synchronize().IgnoreError();
    plan->keep_alive_->Clear();
    return ran;
  }
  return FinishRun(plan, stats);
}

absl::StatusOr<std::vector<Tensor>> Executor::FinishRun(Plan* plan, RunStats* stats) {
  ExecutionObserver* observer = GetExecutionObserver();
  OpEvent wait;
  if (observer != nullptr) observer->OnWaitBegin(wait);
  for (Device* d : plan->devices_) {
    RETURN_IF_ERROR(d->SynchronizeStream(d->compute_stream()));
    if (!options_.in_order) RETURN_IF_ERROR(d->SynchronizeStream(d->copy_stream()));
  }
  if (observer != nullptr) observer->OnWaitEnd(wait);
  plan->keep_alive_->Clear();
  plan->constants_ready_ = true;
  if (observer != nullptr) observer->OnRunEnd(*stats);
  std::vector<Tensor> fetched;
  for (size_t i = 0; i < plan->fetch_slots_.size(); ++i) {
    const Variable* v = plan->slots_[plan->fetch_slots_[i]];
    const Tensor* t = v->data_tensor();
    if (t == nullptr || !t->initialized()) {
      return absl::FailedPreconditionError(
          absl::StrCat("fetch '", plan->fetch_names_[i], "' was not computed by the program"));
    }
    if (t->place().is_host()) {
      fetched.push_back(*t);
      continue;
    }
    ASSIGN_OR_RETURN(Device * device, DeviceRegistry::Global().GetDevice(t->place()));
    ASSIGN_OR_RETURN(Tensor host,
                     Tensor::Allocate(device->host_allocator(), t->dtype(), t->shape()));
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
