// The concurrent mode of Executor::Run: steps start as soon as their
// predecessors allow (dependency_graph.h); device steps are enqueued on
// their streams, host steps run on the executor's host workers.
//
// Whichever thread makes steps ready handles them: it enqueues the ready
// device steps (under the run's lock) and goes on with the host steps.
// With one host worker (the default) the calling thread runs every host
// step itself, in the order they become ready, while the devices work
// through what was enqueued before; the worker only waits for events whose
// completion other steps need. With several workers, a worker that
// finishes a host step runs the next ready one itself (handing any others
// to idle workers), so a chain of host and device steps needs no round
// trip through the calling thread, and independent host steps run at once;
// the calling thread then only starts the run and waits for its end
// (except in plans without device work, where it runs a host step itself
// when nothing else is in flight). Kernels and event waits run outside the
// lock.

// A step waits for each predecessor as its EdgeKind says (plan_internal.h):
// device work after device work of the same device is ordered on the
// streams (stream order or an event wait), so it is enqueued as soon as its
// predecessors are; a host step is handed out once its predecessors were
// enqueued and its worker first waits for their events; anything that
// needs a predecessor's results on the host (kCompletion) starts once a
// worker saw the predecessor's event complete. No thread waits for a device
// while holding the lock.
#include <condition_variable>
#include <deque>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/runtime/plan_internal.h"

namespace tandem {

// One concurrent run of a plan (lives for the run, on the caller's stack;
// every task it hands out has reported before Run returns).
class ConcurrentRun {
 public:
  ConcurrentRun(Plan* plan, HostWorkerPool* pool, RunStats* stats, ExecutionObserver* observer)
      : plan_(plan),
        pool_(pool),
        stats_(stats),
        steps_(plan->steps_),
        caller_runs_host_(pool->size() == 1) {
    run_.in_order = false;
    run_.observer = observer;
    run_.keep_alive = plan->keep_alive_.get();
  }

  absl::Status Run();

 private:
  using Lock = std::unique_lock<std::mutex>;

  Plan::Step& step(int i) { return *steps_[i]; }
  int size() const { return static_cast<int>(steps_.size()); }
  // The rest hold mu_ unless they say otherwise.
  void Start();
  // Handles ready steps until none is left (see the file comment); `worker`
  // is the calling host worker, -1 for the thread that called Run.
  void Drain(Lock& lock, int worker);
  void Dispatch(int i, int worker);
  void HandOut(int i);
  void Watch(int i);
  // Runs host step `i`, first waiting for its device predecessors; without mu_.
  absl::Status RunHostStep(int i, int worker);
  void CompleteHost(int i, const absl::Status& s);
  // Marks the use of step i's slots done and releases the slots now unused.
  void ReleaseSlots(int i);
  // Satisfies the edges from step i that wait for `completed` (kCompletion
  // edges) or for its dispatch (the others).
  void Satisfy(int i, bool completed);
  void Finish(int i);
  void Fail(const absl::Status& s) {
    if (error_.ok()) error_ = s;
  }
  bool Quiet() const { return in_flight_ == 0; }
  // The calling thread has something to do or the run is over.
  bool CallerNeeded() const {
    return Quiet() || (caller_runs_host_ && error_.ok() && !ready_host_.empty());
  }
  // Wakes the calling thread if it is needed (after a worker's Drain).
  void NotifyCaller() {
    if (CallerNeeded()) caller_.notify_all();
  }

  Plan* plan_;
  HostWorkerPool* pool_;
  RunStats* stats_;
  std::vector<std::unique_ptr<Plan::Step>>& steps_;
  StepRunContext run_;
  // With one host worker, the calling thread runs every host step itself
  // (workers only wait for events), so CPU kernels keep one thread and its
  // CPU library's thread team, as in-order runs do.
  const bool caller_runs_host_;
  std::mutex mu_;
  std::condition_variable caller_;  // CallerNeeded() may have become true
  std::vector<int> pending_;        // unsatisfied predecessors per step
  std::vector<int> uses_left_;      // per slot: steps still to use it
  std::deque<int> ready_device_, ready_host_;
  int in_flight_ = 0;  // host steps running and events being waited for
  int finished_ = 0;
  absl::Status error_;
};

void ConcurrentRun::Start() {
  const int n = size();
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

void ConcurrentRun::Drain(Lock& lock, int worker) {
  while (error_.ok()) {
    if (!ready_device_.empty()) {
      const int i = ready_device_.front();
      ready_device_.pop_front();
      Dispatch(i, worker);
      continue;
    }
    if (ready_host_.empty()) return;
    if (caller_runs_host_ && worker >= 0) return;  // left for the calling thread
    const int i = ready_host_.front();
    ready_host_.pop_front();
    const bool here =
        worker >= 0 || caller_runs_host_ || (plan_->host_only_ && Quiet() && ready_host_.empty());
    if (!here) {
      HandOut(i);
      continue;
    }
    while (!caller_runs_host_ && !ready_host_.empty()) {  // the others go to idle workers
      HandOut(ready_host_.front());
      ready_host_.pop_front();
    }
    in_flight_++;
    lock.unlock();
    const absl::Status s = RunHostStep(i, worker);
    lock.lock();
    in_flight_--;
    CompleteHost(i, s);
  }
}

void ConcurrentRun::Dispatch(int i, int worker) {
  Plan::Step& s = step(i);
  Stream* stream = s.StreamFor(/*in_order=*/false);
  StepRunContext run = run_;
  run.worker = worker;
  absl::Status status;
  for (const auto& [pred, kind] : s.preds) {
    if (kind == EdgeKind::kEventWait && status.ok()) {
      status = s.device->StreamWaitEvent(stream, step(pred).done_event.get());
    }
  }
  if (status.ok()) {
    status = s.is_copy ? PlanRunner::RunCopyStep(plan_, &s, run, stats_)
                       : PlanRunner::RunKernelStep(plan_, &s, run);
  }
  if (status.ok() && s.done_event != nullptr) {
    status = s.device->RecordEvent(s.done_event.get(), stream);
  }
  if (!status.ok()) return Fail(AnnotateStepError(status, s));
  ReleaseSlots(i);
  Satisfy(i, /*completed=*/false);
  if (s.watched) {
    Watch(i);
  } else {
    Finish(i);
  }
}

void ConcurrentRun::HandOut(int i) {
  in_flight_++;
  pool_->Submit([this, i](int worker) {
    const absl::Status s = RunHostStep(i, worker);
    Lock lock(mu_);
    in_flight_--;
    CompleteHost(i, s);
    Drain(lock, worker);
    NotifyCaller();
  });
}

void ConcurrentRun::Watch(int i) {
  in_flight_++;
  pool_->Submit([this, i](int worker) {
    const absl::Status s = step(i).device->SynchronizeEvent(step(i).done_event.get());
    Lock lock(mu_);
    in_flight_--;
    if (s.ok()) {
      Finish(i);
      Satisfy(i, /*completed=*/true);
    } else {
      Fail(AnnotateStepError(s, step(i)));
    }
    Drain(lock, worker);
    NotifyCaller();
  });
}

void ConcurrentRun::CompleteHost(int i, const absl::Status& s) {
  if (!s.ok()) return Fail(s);
  ReleaseSlots(i);
  Finish(i);
  Satisfy(i, /*completed=*/true);
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

absl::Status ConcurrentRun::Run() {
  Lock lock(mu_);
  Start();
  do {
    Drain(lock, /*worker=*/-1);
    caller_.wait(lock, [this] { return CallerNeeded(); });
  } while (!Quiet() || (caller_runs_host_ && error_.ok() && !ready_host_.empty()));
  if (!error_.ok()) return error_;
  if (finished_ != size()) {
    return absl::InternalError(absl::StrCat("executor: ", size() - finished_,
                                            " steps can never start (a dependency cycle)"));
  }
  return absl::OkStatus();
}

absl::Status PlanRunner::RunConcurrently(Plan* plan, HostWorkerPool* pool, RunStats* stats,
                                         ExecutionObserver* observer) {
  ConcurrentRun run(plan, pool, stats, observer);
  return run.Run();
}

}  // namespace tandem
