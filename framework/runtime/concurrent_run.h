// The concurrent and pipelined runs of one plan (private to
// //framework/runtime:executor; see executor.h for the behaviour).
//
//   RunScheduler scheduler(plan, pool);
//   ConcurrentRun* a = scheduler.Start(frame0, &stats0, observer);  // returns at once
//   ConcurrentRun* b = scheduler.Start(frame1, &stats1, observer);  // overlaps a
//   absl::Status sa = scheduler.Wait(a);  // runs host steps until a is over
//   absl::Status sb = scheduler.Wait(b);
//
// A run's steps start as soon as their predecessors in the run (Step::preds)
// and in the run before it, while that one is in flight (Step::prev_preds),
// allow. Device steps are enqueued by whichever thread makes them ready;
// host steps run on the thread in Wait() when the pool has one worker, else
// on the workers. Thread-safe: one lock, never held while a kernel runs or
// a thread waits for a device.
#ifndef TANDEM_FRAMEWORK_RUNTIME_CONCURRENT_RUN_H_
#define TANDEM_FRAMEWORK_RUNTIME_CONCURRENT_RUN_H_

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/runtime/host_ready_queue.h"
#include "framework/runtime/step_runner.h"

namespace tandem {

class ConcurrentRun;

class RunScheduler {
 public:
  RunScheduler(PlanState* plan, std::shared_ptr<HostWorkerPool> pool);
  // The pool this scheduler's host steps run on.
  const HostWorkerPool* pool() const { return pool_.get(); }
  ~RunScheduler();
  RunScheduler(const RunScheduler&) = delete;
  RunScheduler& operator=(const RunScheduler&) = delete;

  // Starts a run over `frame` (bound and fed) after the runs in flight (at
  // most kPipelineFrames - 1): enqueues the device steps ready now, hands
  // host steps to workers when there are several, and returns. `stats`
  // and `observer` must outlive Wait(). `caller_waits`: the caller calls
  // Wait(run) next and starts no other run before; with no run in flight
  // the run is then solo (Step::waits.solo_on_compute) and its steps wait for
  // Wait() to start.
  ConcurrentRun* Start(PlanState::Frame* frame, RunStats* stats, ExecutionObserver* observer,
                       bool caller_waits);
  // Handles ready steps on the calling thread until `run` is over: OK once
  // all of its steps finished (device work possibly still queued); its
  // error, or Cancelled when the run before it failed, once none of its
  // steps is running (nor a task of the next run reading its frame). A
  // failed run's successor fails too.
  absl::Status Wait(ConcurrentRun* run);
  // Drops `run` after Wait(run) and once its device work is complete (the
  // caller synchronised it): the next run's host steps stop waiting for its
  // events, so its frame may be bound again. Waits for the next run's host
  // tasks that began while `run` was not forgotten.
  void Forget(ConcurrentRun* run);

 private:
  struct Task {
    ConcurrentRun* run = nullptr;
    int step = 0;
    bool patch = false;  // a refined lookup's second part (RowRefinement)
  };
  using Lock = std::unique_lock<std::mutex>;

  PlanState::Step& step(int i) { return *plan_->steps[i]; }
  // The rest hold mu_ unless they say otherwise.
  // Handles ready steps (host steps only if `run_host`) until none is
  // left, or until `until` is over.
  void Drain(Lock& lock, int worker, bool run_host, const ConcurrentRun* until = nullptr);
  // Handles the ready queues until they are empty (Drain's first part).
  void DrainQueues(Lock& lock, int worker, bool run_host, const ConcurrentRun* until);
  void Dispatch(const Task& t, int worker);
  // How a host task started (BeginHostTask).
  struct HostTaskStart {
    // A refined lookup's first part: the previous run's update of its
    // table is not over.
    bool early = false;
    // The run before's frame, which the task may read; while it runs, that
    // run counts it (ConcurrentRun::next_readers) and is not over.
    PlanState::Frame* prev_frame = nullptr;
  };
  // Whether host task `t` runs now (on this thread or a worker), and how.
  // False when a refined lookup waits for the previous run's update instead
  // (the update's ids are not final yet): it then runs whole once the
  // update finished. Every host task goes through it, whichever thread
  // runs it; AfterHostTask ends what it began.
  bool BeginHostTask(const Task& t, HostTaskStart* start);
  // Runs `t` on an idle worker (after BeginHostTask).
  void HandOut(const Task& t);
  // The waits for dispatched watched steps (Step::watched): the calling
  // thread waits itself when the wait is all that is left to do and it may
  // block (a worker, or the caller in Wait); otherwise each goes to a
  // worker. True when it waited (new steps may be ready).
  bool HandleWatches(Lock& lock, int worker, const ConcurrentRun* until);
  void Watch(const Task& t);  // on a worker
  // Back under mu_ after a watched step's completion event was waited for.
  void AfterWatch(const Task& t, const absl::Status& s);
  // Records the frame's end events on every stream of the plan's devices.
  absl::Status RecordRunEnd(ConcurrentRun* run);
  // Runs host task `t` (first waiting for its device predecessors); without mu_.
  absl::Status RunHostTask(const Task& t, int worker, PlanState::Frame* prev_frame, bool early);
  absl::Status WaitForDevicePreds(const Task& t, int worker, PlanState::Frame* prev_frame);
  // Back under mu_ after RunHostTask.
  void AfterHostTask(const Task& t, const HostTaskStart& start, const absl::Status& s);
  void Complete(ConcurrentRun* run, int i);
  void Finish(ConcurrentRun* run, int i);
  // Every step not held for the commit finished: allocates the fetches'
  // host buffers, then releases the held steps (Step::held_for_commit).
  void Commit(ConcurrentRun* run);
  void Satisfy(ConcurrentRun* run, int i, bool completed);
  // One wait of step i is over: queued (MakeReady) when none is left; a
  // held step left waiting for the commit alone joins held_in_order.
  void Release(ConcurrentRun* run, int i);
  void MakeReady(ConcurrentRun* run, int i);
  // Queues host task `t` (ready_host_: steps that feed a device first).
  void PushHost(const Task& t) { ready_host_.Push(t, step(t.step).feeds_device); }
  void ReleaseSlots(ConcurrentRun* run, int i);
  void Fail(ConcurrentRun* run, const absl::Status& s);
  bool Poisoned(const ConcurrentRun* run) const;
  bool Over(const ConcurrentRun* run) const;
  // A thread in Wait(run) has something to do, or the run is over.
  bool CallerNeeded(const ConcurrentRun* run) const;
  void NotifyCaller() { caller_.notify_all(); }
  // Whether the update ids a refined lookup of `run` needs are final.
  bool WriterIdsReady(const ConcurrentRun* run, const RowRefinement& rows) const;

  PlanState* plan_;
  // Shared with the executor that made it: a plan may outlive that
  // executor (its runs still need the workers).
  std::shared_ptr<HostWorkerPool> pool_;
  // With one host worker, the thread in Wait() runs every host step itself
  // (the worker only waits for events), so CPU kernels keep one thread and
  // its CPU library's thread team, as in-order runs do.
  const bool caller_runs_host_;
  std::mutex mu_;
  std::condition_variable caller_;  // CallerNeeded() may have become true
  std::deque<Task> ready_device_;
  HostReadyQueue<Task> ready_host_;  // steps that feed a device first
  std::vector<Task> watches_;  // dispatched watched steps not yet waited for (counted in flight)
  int tasks_in_flight_ = 0;    // of every run
  std::vector<std::unique_ptr<ConcurrentRun>> runs_;  // in flight, oldest first
};

// A run that Executor::RunAsync started: in flight on the plan's scheduler,
// or already over (its results kept for RunHandle::Wait).
struct PendingRun {
  ConcurrentRun* run = nullptr;  // while in flight
  int frame = 0;
  RunStats stats;
  bool over = false;
  absl::StatusOr<std::vector<Tensor>> result;
  bool waited = false;
  bool observed = false;  // the profiler saw OnRunBegin for it
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_RUNTIME_CONCURRENT_RUN_H_
