// The profiler: spans per op, per copy and per user region, device time,
// the reference-format report and a Chrome trace.
//
//   RETURN_IF_ERROR(profiler::StartProfiler("All"));  // or ProfilerOptions
//   RETURN_IF_ERROR(profiler::AttachPlan(*plan));      // placement table, advisor
//   for (int step = 0; step < 11; ++step) {           // the first run is warm-up
//     profiler::RecordEvent span("train_step");
//     RETURN_IF_ERROR(exe.Run(plan.get(), &scope).status());
//   }
//   // Prints the report sorted by total time and writes a Chrome trace.
//   RETURN_IF_ERROR(profiler::StopProfiler("total", "/tmp/trace.json"));
//   profiler::Profile p = profiler::GetProfile();      // the data behind it
//
// or, scoped:
//
//   {
//     profiler::ScopedProfiler prof({profiler::ProfilerState::kAll}, profiler::SortKey::kTotal);
//     ... runs ...
//   }  // prints the report
//
// While profiling, the profiler is the executor's ExecutionObserver
// (framework/runtime/execution_observer.h): each op and each copy the
// executor runs becomes one event with its host wall time. With state GPU
// or All, ops that launch device work are bracketed by timing events on
// their stream, read after the run ends (the run already synchronised its
// devices, so this adds no host synchronisation). Devices without a timer
// (cpu, sim) and ops whose outputs all live in host memory (`shape`) get no
// device time. The first `warmup_runs` runs (default 1) are recorded but
// left out of the report's numbers.
//
// Cost: nothing is installed while the profiler is off (RecordEvent checks
// one atomic flag). When on, about 0.1 us of host time per op or copy
// (profiler_benchmark.cc, development machine), plus recording two timing
// events per op on devices with a timer.
//
// Concurrency: the executor calls the hooks from the thread that called
// Executor::Run (the dispatcher) and from its host workers at once. Each
// thread's ops, copies and waits nest on that thread (a copy or wait inside
// an op's span is its child: ProfileEvent::parent_op_index; the op's self
// time leaves it out). A host worker's events belong to the run in
// progress (the latest begun, when several threads run at once); a run is
// counted once, by the thread that called it. Waits (OnWaitBegin/OnWaitEnd)
// are kWait events. Device intervals on the host clock: the first timed op
// of a run on a device records a reference timing event (the anchor) on
// its stream just before its own, pinned to the host time then; the
// previous run synchronised the device, so the anchor completes at once.
// An op's device start is the anchor's host time plus the device time from
// the anchor to the op's start event, whichever stream of the device it
// ran on. Profile::concurrency sums them up (busy time per place, overlap,
// device idle while the host is busy, host waiting; profile.h).
//
// Thread safety: every function here is thread-safe. One profiling session
// at a time per process.
#ifndef TANDEM_PROFILER_PROFILER_H_
#define TANDEM_PROFILER_PROFILER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "framework/runtime/executor.h"
#include "profiler/profile.h"
#include "profiler/report.h"

namespace tandem {
namespace profiler {

struct ProfilerOptions {
  ProfilerState state = ProfilerState::kAll;
  // Runs at the start that the report leaves out (first-run allocations and
  // lazy initialisation would otherwise dominate it).
  int warmup_runs = 1;
};

// Starts a session. InvalidArgument for a negative warmup_runs or an unknown
// state (ParseProfilerState); FailedPrecondition when already running.
absl::Status StartProfiler(const ProfilerOptions& options);
absl::Status StartProfiler(absl::string_view state, int warmup_runs = 1);

// Stops the session, prints the report sorted by `sort_key` ("default",
// "calls", "total", "max", "min", "ave"; see ParseSortKey) to stdout and,
// when `trace_path` is not empty, writes the Chrome trace there. An unknown
// key is InvalidArgument and leaves the profiler running. A trace that
// cannot be written is an error naming the path and the reason, after the
// session stopped and the report was printed; the profile stays available
// from GetProfile(). FailedPrecondition when not running.
absl::Status StopProfiler(absl::string_view sort_key = "default",
                          const std::string& trace_path = "");
absl::Status StopProfiler(SortKey sort_key, const std::string& trace_path = "");

// Stops the session and returns its profile without printing anything (for
// FormatReport, WriteChromeTrace and Advise). FailedPrecondition when not
// running.
absl::StatusOr<Profile> CollectProfile();

// Discards what was collected so far (the session keeps running; runs
// already counted as warm-up are not repeated).
void ResetProfiler();

// Testing only: replaces the profiler's clock (nanoseconds, monotonic per
// thread, any epoch; it may differ per thread) by `now_ns`; nullptr
// restores the steady clock. Set it while no session runs.
void SetClockForTesting(int64_t (*now_ns)());

// True between StartProfiler and StopProfiler.
bool IsProfilerEnabled();

// Gives the running session the plan being profiled: the report prints its
// placement table, the ledger names each copy's consumer and the advisor
// (advisor.h) reads it. A later call replaces it. FailedPrecondition when
// the profiler is not running.
absl::Status AttachPlan(const Plan& plan);

// The running session's data so far (device time of a run in progress is
// missing), or, when stopped, the last session's. Empty before any session.
Profile GetProfile();

// A span on the calling thread, from construction to destruction. Does
// nothing when the profiler is off. Not copyable.
class RecordEvent {
 public:
  explicit RecordEvent(absl::string_view name);
  ~RecordEvent();
  RecordEvent(const RecordEvent&) = delete;
  RecordEvent& operator=(const RecordEvent&) = delete;

 private:
  bool active_ = false;
  int64_t start_ns_ = 0;
  std::string name_;
};

// Starts a session on construction and stops it (printing the report) on
// destruction or at Stop(). Not copyable.
class ScopedProfiler {
 public:
  explicit ScopedProfiler(const ProfilerOptions& options, SortKey sort_key = SortKey::kDefault,
                          std::string trace_path = "");
  // Logs Stop()'s error, if any.
  ~ScopedProfiler();
  ScopedProfiler(const ScopedProfiler&) = delete;
  ScopedProfiler& operator=(const ScopedProfiler&) = delete;

  // StartProfiler's status.
  const absl::Status& status() const { return start_status_; }
  // Stops now; StopProfiler's status (OK again on a second call).
  absl::Status Stop();

 private:
  absl::Status start_status_;
  bool stopped_ = false;
  SortKey sort_key_;
  std::string trace_path_;
};

}  // namespace profiler
}  // namespace tandem

#endif  // TANDEM_PROFILER_PROFILER_H_
