// The concurrent and pipelined modes of Executor::Run (concurrent_run.h).
//
// Whichever thread makes steps ready handles them: it enqueues the ready
// device steps (under the lock) and goes on with the host steps. With one
// host worker (the default) the thread in Wait() runs every host step
// itself, in the order they become ready, while the devices work through
// what was enqueued before; the worker only waits for events whose
// completion other steps need. With several workers, a worker that
// finishes a host step runs the next ready one itself (handing any others
// to idle workers), and independent host steps run at once. Kernels and
// event waits run outside the lock.
//
// A step waits for each predecessor as its EdgeKind says (plan_state.h):
// device work after device work of the same device is ordered on the
// streams (stream order or an event wait), so it is enqueued as soon as its
// predecessors are; a host step is handed out once its predecessors were
// enqueued and its thread first waits for their events; anything that
// needs a predecessor's results on the host (kCompletion) starts once a
// worker saw the predecessor's event complete.
//
// Pipelining: a run started while the one before is in flight also waits
// for that run's steps (Step::prev_preds) with the same edge kinds, using
// that run's frame's events, and its steps that write persistables wait
// until every step of the run before finished. A lookup refined by rows
// (RowRefinement) does not wait for the previous run's update of its
// table: it gathers at once every row that the update does not write
// (found with a bitmap of the update's hashed ids; a false hit only costs
// a row copied twice), with those positions pointed at a row it gathers
// anyway, and copies the rows the update writes once it finished.
#include "framework/runtime/concurrent_run.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "glog/logging.h"

namespace tandem {

class ConcurrentRun {
 public:
  ConcurrentRun(PlanState* plan, PlanState::Frame* frame, RunStats* stats,
                ExecutionObserver* observer)
      : frame(frame), stats(stats), size(static_cast<int>(plan->steps.size())) {
    context.frame = frame;
    context.in_order = false;
    context.observer = observer;
    pending.assign(size, 0);
    dispatched.assign(size, 0);
    completed.assign(size, 0);
    rows_pending.assign(size, 0);
    patch_waiting.assign(size, 0);
  }

  bool all_finished() const { return finished == size; }

  PlanState::Frame* const frame;
  RunStats* const stats;
  const int size;
  StepRunContext context;
  std::vector<int> pending;    // unsatisfied predecessors per step
  std::vector<int> uses_left;  // per slot: steps still to use it
  // Per step: its non-completion / completion edges are satisfied.
  std::vector<uint8_t> dispatched, completed;
  // Per refined lookup: the previous run's update has not finished; the
  // lookup ran its first part and waits for it.
  std::vector<uint8_t> rows_pending, patch_waiting;
  std::vector<int> gated;  // persistable writers waiting for the run before to finish
  int finished = 0;
  int uncommitted = 0;  // steps not held for the commit, still to finish
  // held_for_commit steps, until then: `held` all of them, `held_in_order`
  // those left waiting for the commit alone, in the order they got there
  // (the commit queues them so: their inputs' producers' order, not the
  // program's; RunScheduler::Release).
  std::vector<int> held, held_in_order;
  bool committed = false;
  int device_steps_left = 0;  // to enqueue
  int in_flight = 0;          // tasks of this run running
  // Host tasks of the next run running that may read this run's frame (its
  // done events, a refined lookup's update ids): the run is not over, and
  // its frame not bound again, before they finished.
  int next_readers = 0;
  absl::Status error;
  ConcurrentRun* prev = nullptr;
  ConcurrentRun* next = nullptr;
};

namespace {

// Bit of a table row in a RowRefinement bitmap (2^20 bits).
constexpr int kRowBitmapBits = 20;
inline uint64_t RowBit(int64_t row) {
  return (static_cast<uint64_t>(row) * 0x9E3779B97F4A7C15ull) >> (64 - kRowBitmapBits);
}

// The first part of a refined lookup: the positions of `ids` whose rows the
// update may write go to rows.conflicts; the returned variable holds ids
// with those positions pointed at the row of a position that is not among
// them (nullopt: no such position, or an id out of range, which the
// kernel then reports, run whole after the update).
std::optional<Variable> MaskConflicts(const Tensor& ids, const Tensor& update_ids, int64_t height,
                                      RowRefinement* rows) {
  // Zero between calls: only the bits set here are cleared again.
  rows->bitmap.resize(size_t{1} << (kRowBitmapBits - 6), 0);
  const int64_t* written = update_ids.data<int64_t>();
  const int64_t written_count = update_ids.NumElements();
  for (int64_t k = 0; k < written_count; ++k) {
    const uint64_t b = RowBit(written[k]);
    rows->bitmap[b >> 6] |= uint64_t{1} << (b & 63);
  }
  const int64_t* in = ids.data<int64_t>();
  const int64_t n = ids.NumElements();
  rows->conflicts.clear();
  int64_t safe = -1;
  bool in_range = true;
  for (int64_t k = 0; k < n; ++k) {
    const uint64_t b = RowBit(in[k]);
    in_range &= in[k] >= 0 && in[k] < height;
    if (rows->bitmap[b >> 6] >> (b & 63) & 1) {
      rows->conflicts.push_back(k);
    } else if (safe < 0) {
      safe = in[k];
    }
  }
  for (int64_t k = 0; k < written_count; ++k) rows->bitmap[RowBit(written[k]) >> 6] = 0;
  if (!in_range || safe < 0) return std::nullopt;
  absl::StatusOr<Tensor> masked =
      Tensor::Allocate(CpuAllocator::Default(), DataType::kInt64, ids.shape());
  if (!masked.ok()) return std::nullopt;
  int64_t* out = masked->data<int64_t>();
  std::memcpy(out, in, n * sizeof(int64_t));
  for (int64_t k : rows->conflicts) out[k] = safe;
  return Variable(*std::move(masked));
}

// The second part: the conflicting rows, copied from the updated table.
void CopyConflictRows(const Tensor& ids, const Tensor& table, Tensor* out,
                      const RowRefinement& rows) {
  const int64_t height = table.shape().dim(0);
  const size_t row_bytes = height == 0 ? 0 : table.NumBytes() / height;
  const int64_t* in = ids.data<int64_t>();
  const char* src = static_cast<const char*>(table.raw_data());
  char* dst = static_cast<char*>(out->raw_data());
  for (int64_t k : rows.conflicts)
    std::memcpy(dst + k * row_bytes, src + in[k] * row_bytes, row_bytes);
}

}  // namespace

RunScheduler::RunScheduler(PlanState* plan, std::shared_ptr<HostWorkerPool> pool)
    : plan_(plan), pool_(std::move(pool)), caller_runs_host_(pool_->size() == 1) {}

RunScheduler::~RunScheduler() = default;

ConcurrentRun* RunScheduler::Start(PlanState::Frame* frame, RunStats* stats,
                                   ExecutionObserver* observer, bool caller_waits) {
  Lock lock(mu_);
  runs_.push_back(std::make_unique<ConcurrentRun>(plan_, frame, stats, observer));
  ConcurrentRun* run = runs_.back().get();
  ConcurrentRun* prev = runs_.size() > 1 ? runs_[runs_.size() - 2].get() : nullptr;
  run->prev = prev;
  if (prev != nullptr) prev->next = run;
  frame->solo = caller_waits && prev == nullptr;
  // A run that a later one may overlap has the pipelined events (design.md,
  // "Invariants between runs").
  DCHECK(frame->solo || !frame->compute_end.empty()) << "a pipelined run on a solo frame";
  const int n = run->size;
  run->uses_left.assign(plan_->slot_names.size(), 0);
  frame->ends_recorded = false;
  for (int i = 0; i < n; ++i) {
    const PlanState::Step& s = step(i);
    run->device_steps_left += !s.is_host() && !(s.folded && plan_->constants_ready);
    run->pending[i] = static_cast<int>(s.preds.size());
    for (int id : s.slots_used) run->uses_left[id]++;
    if (s.held_for_commit) {
      run->pending[i]++;
      run->held.push_back(i);
    } else if (!(s.folded && plan_->constants_ready)) {
      run->uncommitted++;
    }
    if (prev == nullptr) continue;
    for (const auto& [p, kind] : s.prev_preds) {
      run->pending[i] +=
          !(kind == EdgeKind::kCompletion ? prev->completed[p] : prev->dispatched[p]);
    }
    if (s.writes_persistable && !prev->all_finished()) {
      run->pending[i]++;
      run->gated.push_back(i);
    }
    if (s.rows != nullptr) run->rows_pending[i] = !prev->completed[s.rows->writer];
  }
  for (int i : run->held) {
    if (run->pending[i] == 1) run->held_in_order.push_back(i);
  }
  std::vector<int> ready;
  for (int i = 0; i < n; ++i) {
    const bool folded = step(i).folded && plan_->constants_ready;
    if (run->pending[i] == 0 && !folded) ready.push_back(i);
  }
  for (int i = 0; i < n; ++i) {  // what they make ready is queued by Satisfy
    if (step(i).folded && plan_->constants_ready) {
      Satisfy(run, i, /*completed=*/false);
      Satisfy(run, i, /*completed=*/true);
      ReleaseSlots(run, i);
      run->finished++;
    }
  }
  for (int i : ready) MakeReady(run, i);
  if (run->uncommitted == 0) Commit(run);
  // A solo run's caller drains in Wait(), where it may also wait for devices.
  if (!frame->solo) Drain(lock, /*worker=*/-1, /*run_host=*/false);
  return run;
}

void RunScheduler::MakeReady(ConcurrentRun* run, int i) {
  if (step(i).is_host()) {
    PushHost({run, i});
  } else {
    ready_device_.push_back({run, i});
  }
}

void RunScheduler::Release(ConcurrentRun* run, int i) {
  const int left = --run->pending[i];
  if (left == 0) return MakeReady(run, i);
  if (left == 1 && step(i).held_for_commit && !run->committed) {
    run->held_in_order.push_back(i);
  }
}

void RunScheduler::Satisfy(ConcurrentRun* run, int i, bool completed) {
  (completed ? run->completed : run->dispatched)[i] = 1;
  const PlanState::Step& s = step(i);
  for (const auto& [succ, kind] : s.succs) {
    if ((kind == EdgeKind::kCompletion) == completed) Release(run, succ);
  }
  ConcurrentRun* next = run->next;
  if (next == nullptr) return;
  for (const auto& [succ, kind] : s.next_succs) {
    if ((kind == EdgeKind::kCompletion) == completed) Release(next, succ);
  }
  if (!completed) return;
  for (int lookup : s.row_readers) {
    if (!next->rows_pending[lookup]) continue;
    next->rows_pending[lookup] = 0;
    if (next->patch_waiting[lookup]) {
      next->patch_waiting[lookup] = 0;
      PushHost({next, lookup, /*patch=*/true});
    }
  }
}

void RunScheduler::ReleaseSlots(ConcurrentRun* run, int i) {
  for (int id : step(i).slots_used) {
    if (--run->uses_left[id] == 0 && plan_->slot_releasable[id]) run->frame->slots[id]->clear();
  }
}

void RunScheduler::Commit(ConcurrentRun* run) {
  PlanState::Frame* frame = run->frame;
  frame->fetch_host.assign(plan_->fetch_slots.size(), Tensor());
  for (size_t f = 0; f < plan_->fetch_slots.size(); ++f) {
    const Tensor* t = frame->slots[plan_->fetch_slots[f]]->data_tensor();
    if (t == nullptr || !t->initialized() || t->place().is_host()) continue;
    absl::StatusOr<Device*> device = DeviceRegistry::Global().GetDevice(t->place());
    absl::StatusOr<Tensor> host =
        device.ok() ? Tensor::Allocate((*device)->host_allocator(), t->dtype(), t->shape())
                    : absl::StatusOr<Tensor>(device.status());
    if (!host.ok()) {
      return Fail(run,
                  absl::Status(host.status().code(),
                               absl::StrCat("fetching '", plan_->fetch_names[f], "' from ",
                                            t->place().ToString(), ": ", host.status().message())));
    }
    frame->fetch_host[f] = *std::move(host);
  }
  // Those waiting for the commit alone first, in the order they got there;
  // the others (still waiting for more) in any order.
  run->committed = true;
  for (int i : run->held_in_order) Release(run, i);
  for (int i : run->held) {
    if (run->pending[i] > 1) Release(run, i);
  }
}

void RunScheduler::Finish(ConcurrentRun* run, int i) {
  run->finished++;
  if (!step(i).is_copy) run->stats->ops++;
  if (!step(i).held_for_commit && --run->uncommitted == 0) Commit(run);
  if (!run->all_finished() || run->next == nullptr) return;
  for (int gated : run->next->gated) Release(run->next, gated);
}

void RunScheduler::Complete(ConcurrentRun* run, int i) {
  ReleaseSlots(run, i);
  Finish(run, i);
  Satisfy(run, i, /*completed=*/true);
}

void RunScheduler::Fail(ConcurrentRun* run, const absl::Status& s) {
  if (run->error.ok()) run->error = s;
}

bool RunScheduler::Poisoned(const ConcurrentRun* run) const {
  return !run->error.ok() || (run->prev != nullptr && !run->prev->error.ok());
}

bool RunScheduler::Over(const ConcurrentRun* run) const {
  if (run->in_flight > 0 || run->next_readers > 0) return false;
  if (!Poisoned(run)) return run->all_finished();
  return run->next == nullptr || run->next->in_flight == 0;
}

bool RunScheduler::CallerNeeded(const ConcurrentRun* run) const {
  return Over(run) || (caller_runs_host_ && !ready_host_.empty());
}

bool RunScheduler::WriterIdsReady(const ConcurrentRun* run, const RowRefinement& rows) const {
  const ConcurrentRun* prev = run->prev;
  if (prev == nullptr) return false;
  if (rows.writer_ids_producer >= 0 && !prev->completed[rows.writer_ids_producer]) return false;
  const Tensor* t = prev->frame->slots[rows.writer_ids_slot]->data_tensor();
  return t != nullptr && t->initialized() && t->place().is_host() && t->dtype() == DataType::kInt64;
}

void RunScheduler::Drain(Lock& lock, int worker, bool run_host, const ConcurrentRun* until) {
  do {
    DrainQueues(lock, worker, run_host, until);
  } while (HandleWatches(lock, worker, until));
}

bool RunScheduler::HandleWatches(Lock& lock, int worker, const ConcurrentRun* until) {
  if (watches_.empty()) return false;
  const Task t = watches_.front();
  // Only this wait is left: no step is ready or running anywhere else, and
  // no run can start meanwhile (a worker, or the caller blocked in Wait).
  const bool alone = watches_.size() == 1 && tasks_in_flight_ == 1 && ready_device_.empty() &&
                     ready_host_.empty() && (worker >= 0 || until != nullptr);
  if (!alone) {
    for (const Task& w : watches_) Watch(w);
    watches_.clear();
    return false;
  }
  watches_.clear();
  lock.unlock();
  const absl::Status s =
      step(t.step).device->SynchronizeEvent(t.run->frame->done_events[t.step].get());
  lock.lock();
  AfterWatch(t, s);
  return true;
}

void RunScheduler::DrainQueues(Lock& lock, int worker, bool run_host, const ConcurrentRun* until) {
  while (true) {
    if (!ready_device_.empty()) {
      const Task t = ready_device_.front();
      ready_device_.pop_front();
      if (!Poisoned(t.run)) Dispatch(t, worker);
      continue;
    }
    if (ready_host_.empty() || (until != nullptr && Over(until))) return;
    if (Poisoned(ready_host_.front().run)) {
      ready_host_.pop_front();
      continue;
    }
    if (caller_runs_host_ && (worker >= 0 || !run_host)) return;  // left for the thread in Wait()
    const Task t = ready_host_.front();
    ready_host_.pop_front();
    const bool here =
        worker >= 0 || caller_runs_host_ ||
        (plan_->host_only && run_host && ready_host_.empty() && tasks_in_flight_ == 0);
    if (!here) {
      HandOut(t);
      continue;
    }
    while (!caller_runs_host_ && !ready_host_.empty()) {  // the others go to idle workers
      if (!Poisoned(ready_host_.front().run)) HandOut(ready_host_.front());
      ready_host_.pop_front();
    }
    HostTaskStart start;
    if (!BeginHostTask(t, &start)) continue;
    t.run->in_flight++;
    tasks_in_flight_++;
    lock.unlock();
    const absl::Status s = RunHostTask(t, worker, start.prev_frame, start.early);
    lock.lock();
    AfterHostTask(t, start, s);
    t.run->in_flight--;
    tasks_in_flight_--;
  }
}

void RunScheduler::Dispatch(const Task& t, int worker) {
  ConcurrentRun* run = t.run;
  PlanState::Step& s = step(t.step);
  const bool solo = run->frame->solo;
  Stream* stream = s.StreamFor(/*in_order=*/false, solo);
  StepRunContext context = run->context;
  context.worker = worker;
  absl::Status status;
  for (const auto& [pred, kind] : s.preds) {
    if (kind == EdgeKind::kEventWait && status.ok() &&
        step(pred).StreamFor(/*in_order=*/false, solo) != stream) {
      DCHECK(run->frame->done_events[pred] != nullptr) << "step " << pred << " has no event";
      status = s.device->StreamWaitEvent(stream, run->frame->done_events[pred].get());
    }
  }
  if (run->prev != nullptr) {
    for (const auto& [pred, kind] : s.prev_preds) {
      if (kind == EdgeKind::kEventWait && status.ok()) {
        DCHECK(run->prev->frame->done_events[pred] != nullptr)
            << "step " << pred << " (run before)";
        status = s.device->StreamWaitEvent(stream, run->prev->frame->done_events[pred].get());
      }
    }
  }
  if (status.ok()) status = CancelledBefore(s, *run->frame);
  if (status.ok()) {
    status = s.is_copy ? PlanRunner::RunCopyStep(plan_, &s, context, run->stats)
                       : PlanRunner::RunKernelStep(plan_, &s, context);
  }
  Event* done = solo && !s.waits.event_solo ? nullptr : run->frame->done_events[t.step].get();
  DCHECK(done != nullptr || !s.WatchedIn(solo)) << "watched step " << t.step << " without an event";
  if (status.ok() && done != nullptr) status = s.device->RecordEvent(done, stream);
  if (status.ok() && --run->device_steps_left == 0) status = RecordRunEnd(run);
  if (!status.ok()) return Fail(run, AnnotateStepError(status, s));
  ReleaseSlots(run, t.step);
  Satisfy(run, t.step, /*completed=*/false);
  if (s.WatchedIn(solo)) {
    run->in_flight++;
    tasks_in_flight_++;
    watches_.push_back(t);  // HandleWatches, before this thread's Drain returns
  } else {
    Finish(run, t.step);
  }
}

absl::Status RunScheduler::RecordRunEnd(ConcurrentRun* run) {
  PlanState::Frame* frame = run->frame;
  if (frame->compute_end.empty()) return absl::OkStatus();  // not pipelined (frame 0 alone)
  for (size_t d = 0; d < plan_->devices.size(); ++d) {
    Device* device = plan_->devices[d];
    RETURN_IF_ERROR(device->RecordEvent(frame->compute_end[d].get(), device->compute_stream()));
    if (plan_->UsesCopyStream(device, frame->solo)) {
      RETURN_IF_ERROR(device->RecordEvent(frame->copy_end[d].get(), device->copy_stream()));
    }
  }
  frame->ends_recorded = true;
  return absl::OkStatus();
}

bool RunScheduler::BeginHostTask(const Task& t, HostTaskStart* start) {
  start->early = !t.patch && t.run->rows_pending[t.step];
  DCHECK(!start->early || step(t.step).rows != nullptr);
  if (start->early && !WriterIdsReady(t.run, *step(t.step).rows)) {
    step(t.step).rows->rest = RowRefinement::Rest::kWholeKernel;  // after the update
    t.run->patch_waiting[t.step] = 1;
    return false;
  }
  // The task may read the run before's frame (its events, the update's
  // ids): that run is not over, so its frame is not bound again, until
  // AfterHostTask.
  start->prev_frame = nullptr;
  if (t.run->prev != nullptr) {
    start->prev_frame = t.run->prev->frame;
    t.run->prev->next_readers++;
  }
  return true;
}

void RunScheduler::HandOut(const Task& t) {
  HostTaskStart start;
  if (!BeginHostTask(t, &start)) return;
  t.run->in_flight++;
  tasks_in_flight_++;
  pool_->Submit([this, t, start](int worker) {
    const absl::Status s = RunHostTask(t, worker, start.prev_frame, start.early);
    Lock lock(mu_);
    AfterHostTask(t, start, s);
    t.run->in_flight--;
    tasks_in_flight_--;
    Drain(lock, worker, /*run_host=*/true);
    NotifyCaller();
  });
}

void RunScheduler::Watch(const Task& t) {
  pool_->Submit([this, t](int worker) {
    const absl::Status s =
        step(t.step).device->SynchronizeEvent(t.run->frame->done_events[t.step].get());
    Lock lock(mu_);
    AfterWatch(t, s);
    Drain(lock, worker, /*run_host=*/true);
    NotifyCaller();
  });
}

void RunScheduler::AfterWatch(const Task& t, const absl::Status& s) {
  if (s.ok()) {
    Finish(t.run, t.step);
    Satisfy(t.run, t.step, /*completed=*/true);
  } else {
    Fail(t.run, AnnotateStepError(s, step(t.step)));
  }
  t.run->in_flight--;
  tasks_in_flight_--;
}

void RunScheduler::AfterHostTask(const Task& t, const HostTaskStart& start, const absl::Status& s) {
  if (start.prev_frame != nullptr) t.run->prev->next_readers--;
  if (!s.ok()) return Fail(t.run, s);
  const RowRefinement* rows = step(t.step).rows.get();
  const bool early = start.early;
  if (!early || rows->rest == RowRefinement::Rest::kNothing) return Complete(t.run, t.step);
  if (t.run->rows_pending[t.step]) {
    t.run->patch_waiting[t.step] = 1;
  } else {
    PushHost({t.run, t.step, /*patch=*/true});
  }
}

absl::Status RunScheduler::WaitForDevicePreds(const Task& t, int worker,
                                              PlanState::Frame* prev_frame) {
  const PlanState::Step& s = step(t.step);
  bool waiting = false;
  OpEvent wait_event;
  auto wait = [&](const PlanState::Step& pred, Event* event) -> absl::Status {
    if (!waiting && t.run->context.observer != nullptr) {
      wait_event.op = &s.op;
      wait_event.index = s.index;
      wait_event.place = s.place;
      wait_event.device = pred.device;
      wait_event.worker = worker;
      t.run->context.observer->OnWaitBegin(wait_event);
    }
    waiting = true;
    return AnnotateStepError(pred.device->SynchronizeEvent(event), pred);
  };
  for (const auto& [pred, kind] : s.preds) {
    if (kind == EdgeKind::kHostWait) {
      RETURN_IF_ERROR(wait(step(pred), t.run->frame->done_events[pred].get()));
    }
  }
  if (prev_frame != nullptr) {
    for (const auto& [pred, kind] : s.prev_preds) {
      if (kind == EdgeKind::kHostWait) {
        RETURN_IF_ERROR(wait(step(pred), prev_frame->done_events[pred].get()));
      }
    }
  }
  if (waiting && t.run->context.observer != nullptr) {
    t.run->context.observer->OnWaitEnd(wait_event);
  }
  return absl::OkStatus();
}

absl::Status RunScheduler::RunHostTask(const Task& t, int worker, PlanState::Frame* prev_frame,
                                       bool early) {
  PlanState::Step& s = step(t.step);
  StepRunContext context = t.run->context;
  context.worker = worker;
  RETURN_IF_ERROR(CancelledBefore(s, *t.run->frame));
  const std::vector<Variable*>& slots = t.run->frame->slots;
  RowRefinement* rows = s.rows.get();
  if (t.patch && rows->rest == RowRefinement::Rest::kWholeKernel) {
    RETURN_IF_ERROR(WaitForDevicePreds(t, worker, prev_frame));
    return PlanRunner::RunKernelStep(plan_, &s, context);
  }
  if (t.patch) {
    DCHECK(!t.run->rows_pending[t.step]) << "rows copied before the update completed";
    CopyConflictRows(*slots[rows->ids_slot]->data_tensor(), *slots[rows->table_slot]->data_tensor(),
                     slots[rows->out_slot]->mutable_tensor(), *rows);
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(WaitForDevicePreds(t, worker, prev_frame));
  if (!early) return PlanRunner::RunKernelStep(plan_, &s, context);
  const Tensor* table = slots[rows->table_slot]->data_tensor();
  std::optional<Variable> masked;
  if (table != nullptr && table->initialized() && table->shape().rank() == 2) {
    masked = MaskConflicts(*slots[rows->ids_slot]->data_tensor(),
                           *prev_frame->slots[rows->writer_ids_slot]->data_tensor(),
                           table->shape().dim(0), rows);
  }
  if (!masked.has_value()) {
    rows->rest = RowRefinement::Rest::kWholeKernel;  // nothing gathered yet
    return absl::OkStatus();
  }
  rows->rest =
      rows->conflicts.empty() ? RowRefinement::Rest::kNothing : RowRefinement::Rest::kCopyRows;
  if (rows->conflicts.empty()) return PlanRunner::RunKernelStep(plan_, &s, context);
  ArgVars in_args = t.run->frame->in_args[t.step];
  for (auto& [arg, vars] : in_args) {
    if (arg == "Ids") vars = {&*masked};
  }
  context.in_args = &in_args;
  return PlanRunner::RunKernelStep(plan_, &s, context);
}

absl::Status RunScheduler::Wait(ConcurrentRun* run) {
  Lock lock(mu_);
  while (true) {
    Drain(lock, /*worker=*/-1, /*run_host=*/true, /*until=*/run);
    if (Over(run)) break;
    caller_.wait(lock, [&] { return CallerNeeded(run); });
  }
  absl::Status status = run->error;
  if (status.ok() && Poisoned(run)) {
    status = absl::CancelledError(
        absl::StrCat("not run: the pipelined run before it failed: ", run->prev->error.message()));
  }
  if (status.ok() && !run->all_finished()) {
    status = absl::InternalError(absl::StrCat("executor: ", run->size - run->finished,
                                              " steps can never start (a dependency cycle)"));
  }
  if (run->next != nullptr && !status.ok()) {
    Fail(run->next, absl::CancelledError(absl::StrCat(
                        "not run: the pipelined run before it failed: ", status.message())));
  }
  // A failed run leaves steps it never started in the queues.
  const auto of_run = [run](const Task& t) { return t.run == run; };
  ready_device_.erase(std::remove_if(ready_device_.begin(), ready_device_.end(), of_run),
                      ready_device_.end());
  ready_host_.RemoveIf(of_run);
  return status;
}

void RunScheduler::Forget(ConcurrentRun* run) {
  Lock lock(mu_);
  // Host tasks of the next run that may still read this run's frame.
  caller_.wait(lock, [&] { return run->next_readers == 0; });
  if (run->next != nullptr) run->next->prev = nullptr;
  for (auto it = runs_.begin(); it != runs_.end(); ++it) {
    if (it->get() == run) {
      runs_.erase(it);
      break;
    }
  }
}

}  // namespace tandem
