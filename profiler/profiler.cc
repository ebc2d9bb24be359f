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

int64_t NowNs() {
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

// The first timing event of a run on a device, and the host time it was
// recorded at: device start times are estimated relative to it.
struct Anchor {
  DeviceTimers* timers = nullptr;
  Event* event = nullptr;
  int64_t host_ns = 0;  // absolute
};

// A timed op whose events are read once its run has ended.
struct PendingTiming {
  size_t event = 0;  // index into Collector::events_
  int thread = 0;
  DeviceTimers* timers = nullptr;
  Event* start = nullptr;
  Event* end = nullptr;
  Anchor anchor;
};

// What the executor's thread is in the middle of.
struct ThreadState {
  int thread = -1;          // ordinal; assigned on first use
  uint64_t generation = 0;  // of the session data `run` and `anchors` belong to
  int run = -1;             // index into Collector::runs_
  bool op_open = false;     // between OnOpBegin and OnOpEnd
  int64_t op_start_ns = 0;  // absolute
  DeviceTimers* op_timers = nullptr;
  Event* op_start_event = nullptr;
  Anchor op_anchor;
  std::vector<Anchor> anchors;  // this run's, one per timed device
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

// The process-wide profiling session; never destroyed, because an executor
// that loaded the observer before StopProfiler may still call it.
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
    ResolveLocked(/*thread=*/-1);
    last_ = SnapshotLocked();
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
    std::lock_guard<std::mutex> lock(mu_);
    return running_ ? SnapshotLocked() : last_;
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
    ResolveLocked(thread);  // left over by a run that failed
    ProfileRun run;
    run.thread = thread;
    run.start_ns = now - epoch_ns_;
    run.warmup = runs_seen_++ < options_.warmup_runs;
    runs_.push_back(std::move(run));
    ts.run = static_cast<int>(runs_.size()) - 1;
    ts.generation = generation_;
    ts.anchors.clear();
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
    }
    ResolveLocked(ThreadOrdinal());
    ts.run = -1;
    ts.anchors.clear();
  }

  void OnOpBegin(const OpEvent& event) override {
    if (!enabled()) return;
    ThreadState& ts = t_state;
    ts.op_start_event = nullptr;
    if (options_.state != ProfilerState::kCPU && event.device != nullptr &&
        event.stream != nullptr) {
      DeviceTimers* timers = TimersFor(event.device);
      if (timers->timed) StartTiming(event, timers);
    }
    ts.op_open = true;
    ts.op_start_ns = NowNs();
  }

  void OnOpEnd(const OpEvent& event) override {
    const int64_t end = NowNs();
    ThreadState& ts = t_state;
    if (!ts.op_open) return;  // began before the profiler started
    ts.op_open = false;
    Event* end_event = nullptr;
    if (ts.op_start_event != nullptr) end_event = RecordTimingEvent(ts.op_timers, event.stream);
    const int thread = ThreadOrdinal();
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_ || !enabled()) {
      ReleaseLocked(ts.op_timers, ts.op_start_event);
      ReleaseLocked(ts.op_timers, end_event);
      ts.op_start_event = nullptr;
      return;
    }
    ProfileEvent e;
    e.kind = event.is_copy ? EventKind::kCopy : EventKind::kOp;
    e.name = event.op != nullptr ? event.op->type : "?";
    e.run = CurrentRunLocked();
    e.op_index = event.index;
    e.place = event.place;
    e.thread = thread;
    e.stream = StreamIndexLocked(event);
    e.start_ns = ts.op_start_ns - epoch_ns_;
    e.end_ns = end - epoch_ns_;
    if (event.is_copy) {
      e.copy_kind = event.copy_kind;
      e.sync = event.sync;
      e.bytes = event.bytes;
      e.var = event.var;
      e.consumer = event.consumer;
    }
    events_.push_back(std::move(e));
    if (ts.op_start_event != nullptr) {
      if (end_event == nullptr || ts.generation != generation_) {
        ReleaseLocked(ts.op_timers, ts.op_start_event);
        ReleaseLocked(ts.op_timers, end_event);
      } else {
        pending_.push_back(
            {events_.size() - 1, thread, ts.op_timers, ts.op_start_event, end_event, ts.op_anchor});
      }
      ts.op_start_event = nullptr;
    }
  }

 private:
  Collector() = default;

  // Records a start event for `event` when it launches device work.
  void StartTiming(const OpEvent& event, DeviceTimers* timers) {
    ThreadState& ts = t_state;
    if (!event.is_copy && !LaunchesDeviceWork(*event.op, event.place)) return;
    const int64_t now = NowNs();
    Event* start = RecordTimingEvent(timers, event.stream);
    if (start == nullptr) return;
    ts.op_timers = timers;
    ts.op_start_event = start;
    std::lock_guard<std::mutex> lock(mu_);
    if (ts.generation != generation_ || ts.run < 0) ts.anchors.clear();
    for (const Anchor& a : ts.anchors) {
      if (a.timers == timers) {
        ts.op_anchor = a;
        return;
      }
    }
    ts.op_anchor = {timers, start, now};
    ts.anchors.push_back(ts.op_anchor);
  }

  // A timing event from the pool, recorded on `stream`; nullptr on error.
  Event* RecordTimingEvent(DeviceTimers* timers, Stream* stream) {
    Event* e = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
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
      e = timers->free.back();
      timers->free.pop_back();
    }
    const absl::Status s = timers->device->RecordEvent(e, stream);
    if (!s.ok()) {
      LOG_FIRST_N(WARNING, 1) << "profiler: recording a timing event failed: " << s;
      std::lock_guard<std::mutex> lock(mu_);
      ReleaseLocked(timers, e);
      return nullptr;
    }
    return e;
  }

  void ReleaseLocked(DeviceTimers* timers, Event* e) {
    if (timers != nullptr && e != nullptr) timers->free.push_back(e);
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
  bool LaunchesDeviceWork(const OpDesc& op, const Place& place) {
    std::lock_guard<std::mutex> lock(mu_);
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

  int CurrentRunLocked() const {
    const ThreadState& ts = t_state;
    if (ts.generation != generation_ || ts.run < 0 || ts.run >= static_cast<int>(runs_.size())) {
      return -1;
    }
    return ts.run;
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
    } else {
      r.info.name = absl::StrCat("stream ", streams_.size());
    }
    streams_.push_back(std::move(r));
    return static_cast<int>(streams_.size()) - 1;
  }

  // Reads the device time of the pending timings of `thread` (-1: all).
  void ResolveLocked(int thread) {
    std::vector<PendingTiming> keep, done;
    for (PendingTiming& p : pending_) (thread < 0 || p.thread == thread ? done : keep).push_back(p);
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
          p.anchor.host_ns - epoch_ns_ + static_cast<int64_t>((offset.ok() ? *offset : 0) * 1e6);
      e.device_start_ns = std::max(start, e.start_ns);
    }
    for (const PendingTiming& p : done) {
      ReleaseLocked(p.timers, p.start);
      ReleaseLocked(p.timers, p.end);
    }
  }

  // Drops collected data; pending timings go back to their pools.
  void ClearLocked() {
    for (const PendingTiming& p : pending_) {
      ReleaseLocked(p.timers, p.start);
      ReleaseLocked(p.timers, p.end);
    }
    pending_.clear();
    events_.clear();
    runs_.clear();
    ++generation_;
  }

  Profile SnapshotLocked() const {
    Profile p;
    p.state = options_.state;
    p.warmup_runs = options_.warmup_runs;
    p.steady_start_ns = steady_start_ns_;
    p.duration_ns = NowNs() - epoch_ns_;
    p.runs = runs_;
    p.events = events_;
    p.plan = plan_;
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

  struct StreamRecord {
    Stream* stream = nullptr;
    Device* device = nullptr;
    StreamInfo info;
  };

  std::atomic<bool> enabled_{false};
  std::mutex mu_;
  bool running_ = false;  // guarded by mu_ (and the rest below)
  ProfilerOptions options_;
  int64_t epoch_ns_ = 0;
  uint64_t generation_ = 1;
  int runs_seen_ = 0;
  int warmups_ended_ = 0;
  int64_t steady_start_ns_ = 0;
  std::vector<ProfileRun> runs_;
  std::vector<ProfileEvent> events_;
  std::vector<StreamRecord> streams_;
  std::vector<PendingTiming> pending_;
  std::optional<PlacedProgram> plan_;
  std::map<Device*, std::unique_ptr<DeviceTimers>> timers_;
  std::map<std::pair<std::string, int>, bool> launches_;
  Profile last_;
};

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
