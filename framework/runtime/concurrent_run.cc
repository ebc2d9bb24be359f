// The concurrent mode of Executor::Run: steps start as soon as their
// predecessors allow (dependency_graph.h), device steps are enqueued on
// their streams by the calling thread (the dispatcher), host steps run on
// the executor's host workers.
//
// A step waits for each predecessor as its EdgeKind says (plan_internal.h):
// device work after device work of the same device is ordered on the
// streams (stream order or an event wait), so it is enqueued as soon as its
// predecessors are; a host step is handed out once its predecessors were
// enqueued and its worker first waits for their events; anything that
// needs a predecessor's results on the host (kCompletion) starts once a
// worker saw the predecessor's event complete. The dispatcher itself never
// waits for a device, except when it runs a host step inline because
// nothing else can start until that step is done.
#include <condition_variable>
#include <deque>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/runtime/plan_internal.h"

namespace tandem {
namespace {

// A message from a worker: a host step finished, or a watched device step's
// work completed.
struct Completion {
  int step = 0;
  absl::Status status;
};

}  // namespace

// One concurrent run of a plan (lives for the run, on the dispatcher's stack).
class ConcurrentRun {
 public:
  ConcurrentRun(Plan* plan, HostWorkerPool* pool, RunStats* stats, ExecutionObserver* observer)
      : plan_(plan), pool_(pool), stats_(stats), steps_(plan->steps_) {
    run_.in_order = false;
    run_.observer = observer;
    run_.keep_alive = plan->keep_alive_.get();
  }

  absl::Status Run();

 private:
  Plan::Step& step(int i) { return *steps_[i]; }
  void Start();
  void Dispatch(int i);
  void StartHostSteps();
  // Runs host step `i` (waiting first for its device predecessors); called
  // on a worker or, inline, on the dispatcher.
  absl::Status RunHostStep(int i, int worker);
  void Watch(int i);
  void Post(Completion c);
  // Marks the use of step i's slots done and releases the slots now unused.
  void ReleaseSlots(int i);
  // Satisfies the edges from step i that wait for `completed` (kCompletion
  // edges) or for its dispatch (the others).
  void Satisfy(int i, bool completed);
  void Finish(int i);
  void Fail(const absl::Status& s) {
    if (error_.ok()) error_ = s;
  }
  void ProcessInbox(bool block);

  Plan* plan_;
  HostWorkerPool* pool_;
  RunStats* stats_;
  std::vector<std::unique_ptr<Plan::Step>>& steps_;
  StepRunContext run_;
  std::vector<int> pending_;    // unsatisfied predecessors per step
  std::vector<int> uses_left_;  // per slot: steps still to use it
  std::deque<int> ready_device_, ready_host_;
  int outstanding_ = 0;  // tasks handed to workers, not yet reported
  int finished_ = 0;
  absl::Status error_;
  std::mutex mu_;
  std::condition_variable posted_;
  std::vector<Completion> inbox_;  // guarded by mu_
};

void ConcurrentRun::Start() {
  const int n = static_cast<int>(steps_.size());
  pending_.resize(n);
  for (int i = 0; i < n; ++i) pending_[i] = static_cast<int>(step(i).preds.size());
  uses_left_.assign(plan_->slot_names_.size(), 0);
  for (int i = 0; i < n; ++i) {
    for (int id : step(i).slots_used) uses_left_[id]++;
  }
  for (int i = 0; i < n; ++i) {
    if (step(i).folded && plan_->constants_ready_) {
      Satisfy(i, /*completed=*/false);
      Satisfy(i, /*completed=*/true);
      ReleaseSlots(i);
      finished_++;
    }
  }
  for (int i = 0; i < n; ++i) {  // steps readied by the folded ones are queued already
    if (step(i).preds.empty() && !(step(i).folded && plan_->constants_ready_)) {
      (step(i).is_host() ? ready_host_ : ready_device_).push_back(i);
    }
  }
}

void ConcurrentRun::Satisfy(int i, bool completed) {
  for (const auto& [succ, kind] : step(i).succs) {
    if ((kind == EdgeKind::kCompletion) != completed) continue;
    if (--pending_[succ] == 0) {
      (step(succ).is_host() ? ready_host_ : ready_device_).push_back(succ);
    }
  }
}

void ConcurrentRun::ReleaseSlots(int i) {
  for (int id : step(i).slots_used) {
    if (--uses_left_[id] == 0 && plan_->slot_releasable_[id]) plan_->slots_[id]->clear();
  }
}

void ConcurrentRun::Finish(int i) {
  finished_++;
  if (!step(i).is_copy) stats_->ops++;
}

void ConcurrentRun::Dispatch(int i) {
  Plan::Step& s = step(i);
  Stream* stream = s.StreamFor(/*in_order=*/false);
  absl::Status status;
  for (const auto& [pred, kind] : s.preds) {
    if (kind == EdgeKind::kEventWait && status.ok()) {
      status = s.device->StreamWaitEvent(stream, step(pred).done_event.get());
    }
  }
  if (status.ok()) {
    status = s.is_copy ? PlanRunner::RunCopyStep(plan_, &s, run_, stats_)
                       : PlanRunner::RunKernelStep(plan_, &s, run_);
  }
  if (status.ok() && s.done_event != nullptr) {
    status = s.device->RecordEvent(s.done_event.get(), stream);
  }
  if (!status.ok()) {
    Fail(AnnotateStepError(status, s));
    return;
  }
  ReleaseSlots(i);
  Satisfy(i, /*completed=*/false);
  if (s.watched) {
    Watch(i);
  } else {
    Finish(i);
  }
}

void ConcurrentRun::Watch(int i) {
  outstanding_++;
  pool_->Submit([this, i](int worker) {
    absl::Status s = step(i).device->SynchronizeEvent(step(i).done_event.get());
    Post({i, AnnotateStepError(s, step(i))});
  });
}

absl::Status ConcurrentRun::RunHostStep(int i, int worker) {
  Plan::Step& s = step(i);
  StepRunContext run = run_;
  run.worker = worker;
  bool waiting = false;
  OpEvent wait_event;
  for (const auto& [pred, kind] : s.preds) {
    if (kind != EdgeKind::kHostWait) continue;
    if (!waiting && run.observer != nullptr) {
      wait_event.op = &s.op;
      wait_event.index = s.index;
      wait_event.place = s.place;
      wait_event.device = step(pred).device;
      wait_event.worker = worker;
      run.observer->OnWaitBegin(wait_event);
    }
    waiting = true;
    RETURN_IF_ERROR(AnnotateStepError(
        step(pred).device->SynchronizeEvent(step(pred).done_event.get()), step(pred)));
  }
  if (waiting && run.observer != nullptr) run.observer->OnWaitEnd(wait_event);
  return PlanRunner::RunKernelStep(plan_, &s, run);
}

void ConcurrentRun::Post(Completion c) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    inbox_.push_back(std::move(c));
  }
  posted_.notify_one();
}

void ConcurrentRun::StartHostSteps() {
  if (plan_->host_only_ && outstanding_ == 0 && ready_host_.size() == 1) {
    // Nothing else can start before this step is done: run it here. (In
    // plans with device work host kernels always go to the workers, so that
    // the threads a CPU library keeps per calling thread, e.g. an OpenMP
    // team, are those of the workers and not also the dispatcher's.)
    const int i = ready_host_.front();
    ready_host_.pop_front();
    absl::Status s = RunHostStep(i, /*worker=*/-1);
    if (!s.ok()) return Fail(s);
    ReleaseSlots(i);
    Finish(i);
    Satisfy(i, /*completed=*/true);
    return;
  }
  while (!ready_host_.empty()) {
    const int i = ready_host_.front();
    ready_host_.pop_front();
    outstanding_++;
    pool_->Submit([this, i](int worker) { Post({i, RunHostStep(i, worker)}); });
  }
}

void ConcurrentRun::ProcessInbox(bool block) {
  std::vector<Completion> done;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (block) posted_.wait(lock, [this] { return !inbox_.empty(); });
    done.swap(inbox_);
  }
  for (Completion& c : done) {
    outstanding_--;
    if (!c.status.ok()) {
      Fail(c.status);
      continue;
    }
    if (step(c.step).is_host()) ReleaseSlots(c.step);
    Finish(c.step);
    Satisfy(c.step, /*completed=*/true);
  }
}

absl::Status ConcurrentRun::Run() {
  Start();
  const int n = static_cast<int>(steps_.size());
  while (true) {
    if (outstanding_ > 0) ProcessInbox(/*block=*/false);
    if (error_.ok()) {
      while (!ready_device_.empty() && error_.ok()) {
        const int i = ready_device_.front();
        ready_device_.pop_front();
        Dispatch(i);
      }
      if (!ready_host_.empty() && error_.ok()) {
        StartHostSteps();
        continue;
      }
    }
    if (outstanding_ == 0) {
      if (!error_.ok()) return error_;
      if (finished_ == n) return absl::OkStatus();
      if (ready_device_.empty() && ready_host_.empty()) {
        return absl::InternalError(absl::StrCat("executor: ", n - finished_,
                                                " steps can never start (a dependency cycle)"));
      }
      continue;
    }
    ProcessInbox(/*block=*/true);
  }
}

absl::Status PlanRunner::RunConcurrently(Plan* plan, HostWorkerPool* pool, RunStats* stats,
                                         ExecutionObserver* observer) {
  ConcurrentRun run(plan, pool, stats, observer);
  return run.Run();
}

}  // namespace tandem
