#include "profiler/profiler.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/runtime/execution_observer.h"
#include "glog/logging.h"
#include "profiler/chrome_trace.h"

namespace tandem {
namespace profiler {
namespace {

std::atomic<int64_t (*)()> g_test_clock{nullptr};

int64_t NowNs() {
  if (int64_t(*clock)() = g_test_clock.load(std::memory_order_relaxed)) return clock();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Timing events of one device, reused across runs and sessions.
struct DeviceTimers {
  Device* device = nullptr;
  bool timed = false;  // CreateTimingEvent works on this device
  std::vector<std::unique_ptr<Event>> owned;
  std::vector<Event*> free;
};

// A run's reference event on a device, recorded before the run's first
// timed device work there (the previous run synchronised the device, so it
// completes at once), and the host time then: the run's device times are
// placed on the host clock relative to it.
struct Anchor {
  DeviceTimers* timers = nullptr;
  Event* event = nullptr;
  int64_t host_ns = 0;  // absolute
};

// A timed op whose events are read once its run has ended.
struct PendingTiming {
  size_t event = 0;  // index into Collector::events_
  int run = -1;
  DeviceTimers* timers = nullptr;
  Event* start = nullptr;
  Event* end = nullptr;
  Anchor anchor;
};

// An op, copy or wait a thread is inside of.
struct OpenSpan {
  EventKind kind = EventKind::kOp;
  const OpDesc* op = nullptr;
  int index = 0;
  int64_t start_ns = 0;  // absolute
  int64_t child_ns = 0;  // nested copies and waits that ended
  // Timing (start_event set): the span's events and its run's anchor, of
  // session data `generation` and run `run`.
  DeviceTimers* timers = nullptr;
  Event* start_event = nullptr;
  Event* end_event = nullptr;
  Anchor anchor;
  uint64_t generation = 0;
  int run = -1;
};

// Nesting deeper than this drops the outermost span (an op that failed
// before OnOpEnd leaves its span open).
constexpr int kMaxDepth = 8;

// What one host thread is in the middle of; only that thread touches it.
struct ThreadState {
  int thread = -1;             // ordinal; assigned on first use
  uint64_t generation = 0;     // of the session data `run` belongs to
  int run = -1;                // the run this thread called; index into Collector::runs_
  uint64_t noted_session = 0;  // the session its role (dispatcher, worker) was noted in
  OpenSpan open[kMaxDepth];
  int depth = 0;
  // Last device looked up, to skip the lock for untimed devices.
  Device* cached_device = nullptr;
  DeviceTimers* cached_timers = nullptr;
};

thread_local ThreadState t_state;
std::atomic<int> g_next_thread{0};

int ThreadOrdinal() {
  if (t_state.thread < 0) t_state.thread = g_next_thread.fetch_add(1);
  return t_state.thread;
}

bool Matches(const OpenSpan& span, EventKind kind, const OpEvent& event) {
  return span.kind == kind && span.op == event.op && span.index == event.index;
}

// The calling thread's innermost open span matching `event`; -1 when none
// does (it began before the profiler started).
int FindOpen(const OpEvent& event, EventKind kind) {
  const ThreadState& ts = t_state;
  int i = ts.depth - 1;
  while (i >= 0 && !Matches(ts.open[i], kind, event)) --i;
  return i;
}

// The process-wide profiling session; never destroyed, because an executor
// that loaded the observer before StopProfiler may still call it. Hooks
// come from several threads at once: per-thread nesting lives in t_state,
// everything shared is guarded by mu_.
class Collector final : public ExecutionObserver {
 public:
  static Collector& Get() {
    static Collector* collector = new Collector();
    return *collector;
  }

  bool enabled() const { return enabled_.load(std::memory_order_acquire); }

  absl::Status Start(const ProfilerOptions& options) {
    if (options.warmup_runs < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("warmup_runs must be >= 0, got ", options.warmup_runs));
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (running_) {
      return absl::FailedPreconditionError(
          "the profiler is already running; call StopProfiler first");
    }
    running_ = true;
    options_ = options;
    epoch_ns_ = NowNs();
    ClearLocked();
    streams_.clear();
    threads_.clear();
    ++session_;
    plan_.reset();
    runs_seen_ = 0;
    warmups_ended_ = 0;
    steady_start_ns_ = options.warmup_runs > 0 ? std::numeric_limits<int64_t>::max() : 0;
    enabled_.store(true);
    SetExecutionObserver(this);
    return absl::OkStatus();
  }

  absl::StatusOr<Profile> Stop() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_) return absl::FailedPreconditionError("the profiler is not running");
    running_ = false;
    enabled_.store(false);
    if (GetExecutionObserver() == this) SetExecutionObserver(nullptr);
    ResolveLocked(/*run=*/-1, /*all=*/true);
    last_ = SnapshotLocked();
    last_.concurrency = ComputeConcurrency(last_);
    ClearLocked();
    plan_.reset();
    return last_;
  }

  void Reset() {
    std::lock_guard<std::mutex> lock(mu_);
    ClearLocked();
  }

  absl::Status Attach(const Plan& plan) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_) {
      return absl::FailedPreconditionError(
          "AttachPlan: the profiler is not running; call StartProfiler first");
    }
    plan_ = plan.placed();
    return absl::OkStatus();
  }

  Profile Snapshot() {
    Profile p;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!running_) return last_;
      p = SnapshotLocked();
    }
    p.concurrency = ComputeConcurrency(p);
    return p;
  }

  void AddSpan(std::string name, int64_t start_ns, int64_t end_ns) {
    const int thread = ThreadOrdinal();
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_) return;
    ProfileEvent e;
    e.kind = EventKind::kUser;
    e.name = std::move(name);
    e.thread = thread;
    e.run = CurrentRunLocked();
    e.start_ns = start_ns - epoch_ns_;
    e.end_ns = end_ns - epoch_ns_;
    events_.push_back(std::move(e));
  }

  void OnRunBegin() override {
    if (!enabled()) return;
    ThreadState& ts = t_state;
    const int thread = ThreadOrdinal();
    const int64_t now = NowNs();
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_) return;
    // Left over by a run of this thread that failed: its spans and timings.
    while (ts.depth > 0) ReleaseSpanLocked(&ts.open[--ts.depth]);
    const int failed = CurrentRunLocked();
    if (failed >= 0) EndRunLocked(failed);
    ProfileRun run;
    run.thread = thread;
    run.start_ns = now - epoch_ns_;
    run.warmup = runs_seen_++ < options_.warmup_runs;
    runs_.push_back(std::move(run));
    ts.run = static_cast<int>(runs_.size()) - 1;
    ts.generation = generation_;
    active_runs_.push_back(ts.run);
    threads_[thread].dispatcher = true;
  }

  void OnRunEnd(const RunStats& stats) override {
    if (!enabled()) return;
    ThreadState& ts = t_state;
    const int64_t now = NowNs();
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_) return;
    const int run = CurrentRunLocked();
    if (run >= 0) {
      runs_[run].end_ns = now - epoch_ns_;
      runs_[run].stats = stats;
      if (runs_[run].warmup && ++warmups_ended_ == options_.warmup_runs) {
        steady_start_ns_ = now - epoch_ns_;
      }
      EndRunLocked(run);
    }
    ts.run = -1;
  }

  void OnOpBegin(const OpEvent& event) override {
    if (!enabled()) return;
    OpenSpan* span = Push(event, event.is_copy ? EventKind::kCopy : EventKind::kOp);
    if (options_.state != ProfilerState::kCPU && event.device != nullptr &&
        event.stream != nullptr) {
      DeviceTimers* timers = TimersFor(event.device);
      if (timers->timed) StartTiming(event, timers, span);
    }
    span->start_ns = NowNs();
  }

  void OnOpEnd(const OpEvent& event) override {
    const int64_t end = NowNs();
    EndSpan(event, event.is_copy ? EventKind::kCopy : EventKind::kOp, end);
  }

  void OnWaitBegin(const OpEvent& event) override {
    if (!enabled()) return;
    Push(event, EventKind::kWait)->start_ns = NowNs();
  }

  void OnWaitEnd(const OpEvent& event) override {
    const int64_t end = NowNs();
    EndSpan(event, EventKind::kWait, end);
  }

 private:
  Collector() = default;

  // Opens a span on the calling thread.
  OpenSpan* Push(const OpEvent& event, EventKind kind) {
    ThreadState& ts = t_state;
    if (ts.depth == kMaxDepth) {
      std::lock_guard<std::mutex> lock(mu_);
      ReleaseSpanLocked(&ts.open[0]);
      std::move(ts.open + 1, ts.open + kMaxDepth, ts.open);
      --ts.depth;
    }
    OpenSpan& span = ts.open[ts.depth++];
    span.kind = kind;
    span.op = event.op;
    span.index = event.index;
    span.child_ns = 0;
    span.timers = nullptr;
    span.start_event = span.end_event = nullptr;
    span.generation = 0;
    span.run = -1;
    return &span;
  }

  // Closes the span `event` ends into an event (a pending timing when it
  // was timed).
  void EndSpan(const OpEvent& event, EventKind kind, int64_t end) {
    ThreadState& ts = t_state;
    const int i = FindOpen(event, kind);
    if (i < 0) return;
    // Closed: spans i.. stay readable until this thread opens another.
    const int top = ts.depth;
    ts.depth = i;
    OpenSpan& span = ts.open[i];
    OpenSpan* parent = i > 0 ? &ts.open[i - 1] : nullptr;
    if (span.end_event != nullptr) {
      const absl::Status s = span.timers->device->RecordEvent(span.end_event, event.stream);
      if (!s.ok()) {
        LOG_FIRST_N(WARNING, 1) << "profiler: recording a timing event failed: " << s;
        span.generation = 0;  // not timed after all
      }
    }
    if (parent != nullptr) parent->child_ns += end - span.start_ns;
    const int thread = ThreadOrdinal();
    std::lock_guard<std::mutex> lock(mu_);
    // Opened inside it and never closed (their op failed).
    for (int k = i + 1; k < top; ++k) ReleaseSpanLocked(&ts.open[k]);
    if (!running_ || !enabled()) {
      ReleaseSpanLocked(&span);
      return;
    }
    NoteThreadLocked(thread, event.worker);
    // Timings are read when their run ends; one that ends later has lost its anchor.
    const bool timed =
        span.start_event != nullptr && span.generation == generation_ && IsActiveLocked(span.run);
    events_.push_back(MakeEventLocked(event, kind, span, parent, end));
    ProfileEvent& e = events_.back();
    e.thread = thread;
    e.run = timed ? span.run : RunForLocked(event.worker);
    if (timed) {
      pending_.push_back({events_.size() - 1, span.run, span.timers, span.start_event,
                          span.end_event, span.anchor});
      span.start_event = span.end_event = nullptr;
    } else {
      ReleaseSpanLocked(&span);
    }
  }

  ProfileEvent MakeEventLocked(const OpEvent& event, EventKind kind, const OpenSpan& span,
                               const OpenSpan* parent, int64_t end) {
    ProfileEvent e;
    e.kind = kind;
    if (event.op != nullptr) {
      e.name = event.op->type;
      e.op_index = event.index;
      e.dtype = event.dtype;
    } else {
      e.name = kind == EventKind::kWait ? "end of run" : "?";
    }
    e.place = event.place;
    e.worker = event.worker;
    e.stream = kind == EventKind::kWait ? -1 : StreamIndexLocked(event);
    e.start_ns = span.start_ns - epoch_ns_;
    e.end_ns = end - epoch_ns_;
    e.child_ns = span.child_ns;
    if (parent != nullptr && parent->kind == EventKind::kOp) e.parent_op_index = parent->index;
    if (event.collective != CollectiveKind::kNone) {
      e.collective = event.collective;
      e.ranks = event.ranks;
      e.bytes = event.bytes;
    }
    if (event.is_copy) {
      e.copy_kind = event.copy_kind;
      e.sync = event.sync;
      e.bytes = event.bytes;
      e.var = event.var;
      e.consumer = event.consumer;
      if (e.consumer.empty() && e.parent_op_index >= 0 && parent->op != nullptr) {
        e.consumer = parent->op->type;
      }
    }
    return e;
  }

  // Takes the span's two timing events and records the start one on the
  // op's stream (after the run's anchor on the device, when it has none).
  void StartTiming(const OpEvent& event, DeviceTimers* timers, OpenSpan* span) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!running_) return;
      if (!event.is_copy && !LaunchesDeviceWorkLocked(*event.op, event.place)) return;
      const int run = RunForLocked(event.worker);
      if (run < 0) return;  // outside runs (cut by ResetProfiler): no anchor
      const Anchor* anchor = AnchorLocked(run, timers, event.stream);
      if (anchor == nullptr) return;
      span->anchor = *anchor;
      span->run = run;
      span->generation = generation_;
      span->timers = timers;
      span->start_event = TakeEventLocked(timers);
      span->end_event = span->start_event != nullptr ? TakeEventLocked(timers) : nullptr;
      if (span->end_event == nullptr) {
        ReleaseSpanLocked(span);
        return;
      }
    }
    const absl::Status s = timers->device->RecordEvent(span->start_event, event.stream);
    if (!s.ok()) {
      LOG_FIRST_N(WARNING, 1) << "profiler: recording a timing event failed: " << s;
      std::lock_guard<std::mutex> lock(mu_);
      ReleaseSpanLocked(span);
    }
  }

  // The anchor of `run` on the device of `timers`, recorded on `stream`
  // now if there is none yet; nullptr when it cannot be recorded.
  const Anchor* AnchorLocked(int run, DeviceTimers* timers, Stream* stream) {
    for (const auto& [r, a] : anchors_) {
      if (r == run && a.timers == timers) return &a;
    }
    Event* e = TakeEventLocked(timers);
    if (e == nullptr) return nullptr;
    const int64_t now = NowNs();
    const absl::Status s = timers->device->RecordEvent(e, stream);
    if (!s.ok()) {
      LOG_FIRST_N(WARNING, 1) << "profiler: recording a timing event failed: " << s;
      ReleaseLocked(timers, e);
      return nullptr;
    }
    anchors_.push_back({run, {timers, e, now}});
    return &anchors_.back().second;
  }

  // A timing event from the pool; nullptr when none can be created.
  Event* TakeEventLocked(DeviceTimers* timers) {
    if (timers->free.empty()) {
      absl::StatusOr<std::unique_ptr<Event>> created = timers->device->CreateTimingEvent();
      if (!created.ok()) {
        LOG_FIRST_N(WARNING, 1) << "profiler: no timing event on " << timers->device->place()
                                << ": " << created.status();
        return nullptr;
      }
      timers->owned.push_back(*std::move(created));
      timers->free.push_back(timers->owned.back().get());
    }
    Event* e = timers->free.back();
    timers->free.pop_back();
    return e;
  }

  void ReleaseLocked(DeviceTimers* timers, Event* e) {
    if (timers != nullptr && e != nullptr) timers->free.push_back(e);
  }

  void ReleaseSpanLocked(OpenSpan* span) {
    ReleaseLocked(span->timers, span->start_event);
    ReleaseLocked(span->timers, span->end_event);
    span->start_event = span->end_event = nullptr;
  }

  DeviceTimers* TimersFor(Device* device) {
    ThreadState& ts = t_state;
    if (ts.cached_device == device) return ts.cached_timers;
    std::lock_guard<std::mutex> lock(mu_);
    std::unique_ptr<DeviceTimers>& timers = timers_[device];
    if (timers == nullptr) {
      timers = std::make_unique<DeviceTimers>();
      timers->device = device;
      absl::StatusOr<std::unique_ptr<Event>> probe = device->CreateTimingEvent();
      timers->timed = probe.ok();
      if (probe.ok()) {
        timers->owned.push_back(*std::move(probe));
        timers->free.push_back(timers->owned.back().get());
      }
    }
    ts.cached_device = device;
    ts.cached_timers = timers.get();
    return timers.get();
  }

  // False when every kernel of the op's type on `place`'s device type keeps
  // all the op's outputs in host memory (shape): such ops launch nothing.
  bool LaunchesDeviceWorkLocked(const OpDesc& op, const Place& place) {
    auto key = std::make_pair(op.type, place.type().id());
    auto it = launches_.find(key);
    if (it != launches_.end()) return it->second;
    bool found = false, launches = false;
    for (const KernelRegistration* k : KernelRegistry::Global().KernelsFor(op.type)) {
      if (k->def.device_type() != place.type()) continue;
      found = true;
      for (const auto& [arg, vars] : op.outputs) {
        if (!k->def.IsHostMemory(arg)) launches = true;
      }
    }
    return launches_[key] = launches || !found;
  }

  // The run the calling thread called, if any (and of this session data).
  int CurrentRunLocked() const {
    const ThreadState& ts = t_state;
    if (ts.generation != generation_ || ts.run < 0 || ts.run >= static_cast<int>(runs_.size())) {
      return -1;
    }
    return ts.run;
  }

  // The run an event of `worker` belongs to: the calling thread's own; for
  // host workers the latest run in progress (the only one, unless several
  // threads call Executor::Run at once).
  int RunForLocked(int worker) const {
    const int run = CurrentRunLocked();
    if (run >= 0 || worker < 0 || active_runs_.empty()) return run;
    return active_runs_.back();
  }

  bool IsActiveLocked(int run) const {
    return std::find(active_runs_.begin(), active_runs_.end(), run) != active_runs_.end();
  }

  // `run` has ended or failed: its timings are read and its anchors go
  // back to the pools.
  void EndRunLocked(int run) {
    active_runs_.erase(std::remove(active_runs_.begin(), active_runs_.end(), run),
                       active_runs_.end());
    ResolveLocked(run, /*all=*/false);
  }

  void NoteThreadLocked(int thread, int worker) {
    ThreadState& ts = t_state;
    if (ts.noted_session == session_) return;
    ts.noted_session = session_;
    ThreadRecord& r = threads_[thread];
    if (worker >= 0) {
      r.worker = worker;
    } else {
      r.dispatcher = true;
    }
  }

  int StreamIndexLocked(const OpEvent& event) {
    for (size_t i = 0; i < streams_.size(); ++i) {
      if (streams_[i].stream == event.stream && streams_[i].device == event.device) {
        return static_cast<int>(i);
      }
    }
    StreamRecord r;
    r.stream = event.stream;
    r.device = event.device;
    r.info.place = event.device != nullptr ? event.device->place() : event.place;
    if (event.device != nullptr && event.stream == event.device->compute_stream()) {
      r.info.name = "compute";
    } else if (event.device != nullptr && event.stream == event.device->copy_stream()) {
      r.info.name = "copy";
    } else if (event.collective != CollectiveKind::kNone) {
      r.info.name = "collective";
    } else {
      r.info.name = absl::StrCat("stream ", streams_.size());
    }
    streams_.push_back(std::move(r));
    return static_cast<int>(streams_.size()) - 1;
  }

  // Reads the device time of the pending timings of `run` (of every run
  // when `all`), then releases their events and the runs' anchors.
  void ResolveLocked(int run, bool all) {
    std::vector<PendingTiming> keep, done;
    for (PendingTiming& p : pending_) (all || p.run == run ? done : keep).push_back(p);
    pending_ = std::move(keep);
    for (const PendingTiming& p : done) {
      Device* device = p.timers->device;
      absl::StatusOr<double> ms = device->EventElapsedMs(p.start, p.end);
      if (!ms.ok()) {
        LOG_FIRST_N(WARNING, 1) << "profiler: reading a timing event failed: " << ms.status();
        continue;
      }
      ProfileEvent& e = events_[p.event];
      e.has_device_time = true;
      e.device_ms = *ms;
      absl::StatusOr<double> offset = device->EventElapsedMs(p.anchor.event, p.start);
      const int64_t start =
          p.anchor.host_ns - epoch_ns_ + std::llround((offset.ok() ? *offset : 0) * 1e6);
      e.device_start_ns = std::max(start, e.start_ns);
    }
    for (const PendingTiming& p : done) {
      ReleaseLocked(p.timers, p.start);
      ReleaseLocked(p.timers, p.end);
    }
    std::vector<std::pair<int, Anchor>> anchors;
    for (const auto& [r, a] : anchors_) {
      if (all || r == run) {
        ReleaseLocked(a.timers, a.event);
      } else {
        anchors.push_back({r, a});
      }
    }
    anchors_ = std::move(anchors);
  }

  // Drops collected data; pending timings and anchors go back to their pools.
  void ClearLocked() {
    for (const PendingTiming& p : pending_) {
      ReleaseLocked(p.timers, p.start);
      ReleaseLocked(p.timers, p.end);
    }
    for (const auto& [run, a] : anchors_) ReleaseLocked(a.timers, a.event);
    pending_.clear();
    anchors_.clear();
    active_runs_.clear();
    events_.clear();
    runs_.clear();
    ++generation_;
  }

  std::vector<ThreadInfo> ThreadsLocked() const;
  Profile SnapshotLocked() const;

  struct StreamRecord {
    Stream* stream = nullptr;
    Device* device = nullptr;
    StreamInfo info;
  };
  struct ThreadRecord {
    bool dispatcher = false;
    int worker = -1;
  };

  std::atomic<bool> enabled_{false};
  std::mutex mu_;
  bool running_ = false;  // guarded by mu_ (and the rest below)
  ProfilerOptions options_;
  int64_t epoch_ns_ = 0;
  uint64_t generation_ = 1;  // of events_ and runs_: bumped when they are cleared
  uint64_t session_ = 1;     // bumped by Start
  int runs_seen_ = 0;
  int warmups_ended_ = 0;
  int64_t steady_start_ns_ = 0;
  std::vector<ProfileRun> runs_;
  std::vector<int> active_runs_;  // begun, not ended, in order of OnRunBegin
  std::vector<ProfileEvent> events_;
  std::vector<StreamRecord> streams_;
  std::map<int, ThreadRecord> threads_;  // by ordinal, this session
  std::vector<PendingTiming> pending_;
  std::vector<std::pair<int, Anchor>> anchors_;  // (run, anchor), runs in progress
  std::optional<PlacedProgram> plan_;
  std::map<Device*, std::unique_ptr<DeviceTimers>> timers_;
  std::map<std::pair<std::string, int>, bool> launches_;
  Profile last_;
};

// Every thread of the runs and events, named by its role.
std::vector<ThreadInfo> Collector::ThreadsLocked() const {
  std::set<int> ordinals;
  for (const ProfileRun& r : runs_) ordinals.insert(r.thread);
  for (const ProfileEvent& e : events_) ordinals.insert(e.thread);
  for (const auto& [t, r] : threads_) ordinals.insert(t);
  std::vector<ThreadInfo> threads;
  std::map<std::string, int> uses;
  for (int t : ordinals) {
    ThreadInfo info;
    info.thread = t;
    auto it = threads_.find(t);
    if (it != threads_.end()) {
      info.dispatcher = it->second.dispatcher;
      info.worker = it->second.worker;
    }
    if (info.worker >= 0) {
      info.name = absl::StrCat("host worker ", info.worker);
    } else {
      info.name = info.dispatcher ? std::string("dispatcher") : absl::StrCat("thread ", t);
    }
    ++uses[info.name];
    threads.push_back(std::move(info));
  }
  for (ThreadInfo& info : threads) {
    if (uses[info.name] > 1) absl::StrAppend(&info.name, " (thread ", info.thread, ")");
  }
  return threads;
}

Profile Collector::SnapshotLocked() const {
  Profile p;
  p.state = options_.state;
  p.warmup_runs = options_.warmup_runs;
  p.steady_start_ns = steady_start_ns_;
  p.duration_ns = NowNs() - epoch_ns_;
  p.runs = runs_;
  p.events = events_;
  p.plan = plan_;
  p.threads = ThreadsLocked();
  std::vector<Device*> devices;
  for (const StreamRecord& s : streams_) {
    p.streams.push_back(s.info);
    if (s.device != nullptr &&
        std::find(devices.begin(), devices.end(), s.device) == devices.end()) {
      devices.push_back(s.device);
    }
  }
  // The host holds the host side of every copy, even when no op ran there.
  absl::StatusOr<Device*> host = DeviceRegistry::Global().GetDevice(CPUPlace());
  if (host.ok() && std::find(devices.begin(), devices.end(), *host) == devices.end()) {
    devices.push_back(*host);
  }
  for (Device* d : devices) {
    p.memory.push_back({d->place(), d->Description(), d->allocator()->GetStats()});
  }
  std::sort(p.memory.begin(), p.memory.end(),
            [](const PlaceMemory& a, const PlaceMemory& b) { return a.place < b.place; });
  return p;
}

}  // namespace

absl::Status StartProfiler(const ProfilerOptions& options) {
  return Collector::Get().Start(options);
}

absl::Status StartProfiler(absl::string_view state, int warmup_runs) {
  ProfilerOptions options;
  ASSIGN_OR_RETURN(options.state, ParseProfilerState(state));
  options.warmup_runs = warmup_runs;
  return StartProfiler(options);
}

absl::Status StopProfiler(absl::string_view sort_key, const std::string& trace_path) {
  ASSIGN_OR_RETURN(SortKey key, ParseSortKey(sort_key));
  return StopProfiler(key, trace_path);
}

absl::StatusOr<Profile> CollectProfile() { return Collector::Get().Stop(); }

absl::Status StopProfiler(SortKey sort_key, const std::string& trace_path) {
  ASSIGN_OR_RETURN(Profile profile, CollectProfile());
  const std::string report = FormatReport(profile, sort_key);
  std::fwrite(report.data(), 1, report.size(), stdout);
  std::fflush(stdout);
  if (trace_path.empty()) return absl::OkStatus();
  return WriteChromeTrace(profile, trace_path);
}

void ResetProfiler() { Collector::Get().Reset(); }

void SetClockForTesting(int64_t (*now_ns)()) { g_test_clock.store(now_ns); }

bool IsProfilerEnabled() { return Collector::Get().enabled(); }

absl::Status AttachPlan(const Plan& plan) { return Collector::Get().Attach(plan); }

Profile GetProfile() { return Collector::Get().Snapshot(); }

RecordEvent::RecordEvent(absl::string_view name) {
  if (!Collector::Get().enabled()) return;
  active_ = true;
  name_ = std::string(name);
  start_ns_ = NowNs();
}

RecordEvent::~RecordEvent() {
  if (active_) Collector::Get().AddSpan(std::move(name_), start_ns_, NowNs());
}

ScopedProfiler::ScopedProfiler(const ProfilerOptions& options, SortKey sort_key,
                               std::string trace_path)
    : start_status_(StartProfiler(options)),
      sort_key_(sort_key),
      trace_path_(std::move(trace_path)) {}

ScopedProfiler::~ScopedProfiler() {
  const absl::Status s = Stop();
  LOG_IF(ERROR, !s.ok()) << "profiler: " << s;
}

absl::Status ScopedProfiler::Stop() {
  if (stopped_ || !start_status_.ok()) return absl::OkStatus();
  stopped_ = true;
  return StopProfiler(sort_key_, trace_path_);
}

}  // namespace profiler
}  // namespace tandem
