// Profile: everything the profiler collected, as plain data, and the
// steady-state views the report, the trace and the advisor share.
//
//   profiler::Profile p = profiler::GetProfile();          // profiler.h
//   for (const profiler::ProfileEvent& e : p.events) {
//     if (!p.IsSteady(e)) continue;                         // warm-up excluded
//     ... e.name, e.host_ms(), e.has_device_time, e.device_ms ...
//   }
//   for (const profiler::LedgerEntry& c : profiler::CopyLedger(p)) {
//     ... c.var, c.from, c.to, c.bytes, c.consumer, c.per_step ...
//   }
//   const profiler::StepConcurrency& m = p.concurrency.median;  // per steady step
//   ... m.host_busy_ms, m.host_wait_ms, m.overlap_ms ...
//   const profiler::DeviceConcurrency* gpu = m.Find(GPUPlace(0));
//   ... gpu->timed, gpu->busy_ms, gpu->overlap_ms, gpu->idle_for_host_ms ...
//   for (const profiler::StepConcurrency& s : p.concurrency.steps) ...  // per run
//
// Times are nanoseconds of the host's steady clock since the profiler
// started. Device time comes from timing events recorded on the op's stream
// and is only present for ops that launched device work on a device with a
// timer (see profiler.h). Profile::concurrency sums the spans up per step:
// host and device busy time, their overlap, the device idle while the host
// is busy and the host waiting for devices (ComputeConcurrency). A Profile
// is a value; it is not shared with the profiler once returned, so any
// thread may read it.
#ifndef TANDEM_PROFILER_PROFILE_H_
#define TANDEM_PROFILER_PROFILE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "framework/device/device.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/memory/allocator.h"
#include "framework/place/place.h"
#include "framework/placement/placer.h"
#include "framework/runtime/executor.h"
#include "framework/types/data_type.h"

namespace tandem {
namespace profiler {

// What is timed: kCPU host spans only; kGPU and kAll host spans and device
// time (kAll is PaddlePaddle's name for it and prints "Place: All").
enum class ProfilerState { kCPU, kGPU, kAll };

// "CPU", "GPU", "All" (case-insensitive); InvalidArgument listing them
// otherwise.
absl::StatusOr<ProfilerState> ParseProfilerState(absl::string_view name);
absl::string_view ProfilerStateName(ProfilerState state);

enum class EventKind {
  kOp,    // a kernel run by the executor
  kCopy,  // a memcpy_h2d / memcpy_d2h step run by the executor
  kUser,  // a RecordEvent span
  kWait,  // a host thread waiting for device work (OnWaitBegin/OnWaitEnd)
};

struct ProfileEvent {
  EventKind kind = EventKind::kOp;
  // Op type, "memcpy_h2d" / "memcpy_d2h", the span's name; a wait: the type
  // of the step that waited, or "end of run" (the run waiting for its devices).
  std::string name;
  int run = -1;       // index into Profile::runs; -1 outside any run
  int op_index = -1;  // position in the placed program; -1 for spans and the end-of-run wait
  Place place;        // where it ran (a copy: its device side)
  int thread = 0;     // host thread ordinal, in order of first event (see Profile::threads)
  int worker = -1;    // OpEvent::worker: host worker ordinal; -1 the dispatcher (and spans)
  int stream = -1;    // index into Profile::streams; -1 for spans and waits
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  // A copy or wait inside an op's span on the same thread: that op's
  // op_index (-1: none). The op's child_ns is the time of such copies and
  // waits, which its self time leaves out.
  int parent_op_index = -1;
  int64_t child_ns = 0;
  // Device time between timing events recorded around the op on its stream.
  bool has_device_time = false;
  double device_ms = 0;
  int64_t device_start_ns = 0;  // its start, estimated on the host clock
  // Copies and collectives: bytes moved (a collective: its inputs').
  int64_t bytes = 0;
  // Collectives only (KernelDef::Collective): what it does, over how many ranks.
  CollectiveKind collective = CollectiveKind::kNone;
  int ranks = 0;
  // Copies only.
  CopyKind copy_kind = CopyKind::kHostToDevice;
  bool sync = true;
  std::string var;       // variable copied
  std::string consumer;  // type of the op that needed the copy
  // Ops: the dtype the kernel computed in (OpEvent::dtype); none for ops
  // without floating values.
  std::optional<DataType> dtype;

  // A collective's algorithm bandwidth (bytes over its device time, else
  // its host time) and bus bandwidth (CollectiveBusFactor times that), GB/s;
  // 0 when it took no measurable time.
  double AlgorithmGBps() const;
  double BusGBps() const { return AlgorithmGBps() * CollectiveBusFactor(collective, ranks); }

  double host_ms() const { return static_cast<double>(end_ns - start_ns) * 1e-6; }
  // Host time less the nested copies and waits (child_ns).
  double self_ms() const { return static_cast<double>(end_ns - start_ns - child_ns) * 1e-6; }
};

// A copy's name in the reference format: "GpuMemcpySync:CPU->GPU". The
// device side is the device type in capitals ("CPU->SIM" on the sim place).
std::string CopyEventName(const ProfileEvent& copy);

// One Executor::Run.
struct ProfileRun {
  int thread = 0;
  int64_t start_ns = 0;
  int64_t end_ns = -1;  // -1: did not finish (failed, or still running)
  bool warmup = false;  // among the first ProfilerOptions::warmup_runs runs
  RunStats stats;       // the executor's counters for the run

  double wall_ms() const { return static_cast<double>(end_ns - start_ns) * 1e-6; }
};

// A stream that events ran on: "gpu:0 compute", "sim:0 copy".
struct StreamInfo {
  Place place;
  std::string name;  // "compute", "copy", "collective" or "stream N"
};

// A host thread that events ran on.
struct ThreadInfo {
  int thread = 0;           // ProfileEvent::thread
  bool dispatcher = false;  // called Executor::Run, or reported worker -1 ops
  int worker = -1;          // host worker ordinal (OpEvent::worker) when >= 0
  // "host worker 0", "dispatcher" or "thread 3"; a name that would repeat
  // (several dispatchers, two pools) gets " (thread N)".
  std::string name;
};

// Concurrency of one step: where the host and the devices were busy.
// Intervals are clipped to the run; busy time is the length of a union.
struct DeviceConcurrency {
  Place place;
  bool timed = false;           // device time was measured on it (in the profile)
  double busy_ms = 0;           // union of its device intervals over all its streams
  double overlap_ms = 0;        // it and the host both busy
  double idle_for_host_ms = 0;  // the host busy and it idle: the device waiting for the host
};

struct StepConcurrency {
  int run = -1;  // index into Profile::runs; -1 for Concurrency::median
  bool steady = false;
  double step_ms = 0;  // the run's wall time
  // Union over host threads of host-kernel spans (ops on the host place),
  // less each thread's own copy and wait spans.
  double host_busy_ms = 0;
  double host_wait_ms = 0;  // union of the wait spans (kWait): the host waiting for devices
  double overlap_ms = 0;    // the host and at least one device busy
  // Every device place of the profile's streams (host excluded), in place
  // order, in every step (zeros where unused or untimed).
  std::vector<DeviceConcurrency> devices;

  // The entry of `place`; nullptr when it is not a device of the profile.
  const DeviceConcurrency* Find(const Place& place) const;
};

// The host op a device waited on most: summed over the steady steps, the
// time the device was idle while that op ran, counting only idle time
// before the device's last work of the step (idle time at the end of a
// step waits for nothing).
struct HostBlocker {
  Place device;
  std::string op;     // the host op's type
  int op_index = -1;  // its position in the placed program
  double idle_ms_per_step = 0;
};

// "gpu:0 idled 120 us per step waiting for host op lookup_table (#3)"
// (# is the position in the placed program, as in the Copy Ledger).
std::string DescribeHostBlocker(const HostBlocker& blocker);

struct Concurrency {
  std::vector<StepConcurrency> steps;  // every finished run, warm-up included, in run order
  int steady_steps = 0;
  // Each figure's own median (Percentile 0.5) over the steady steps.
  StepConcurrency median;
  // Per timed device, in place order, where some idle time falls on a host op.
  std::vector<HostBlocker> blockers;
};

// Memory of one place when profiling stopped (or the profile was taken).
struct PlaceMemory {
  Place place;
  std::string device;  // Device::Description()
  AllocatorStats stats;
};

struct Profile {
  ProfilerState state = ProfilerState::kAll;
  int warmup_runs = 0;
  // When the last warm-up run ended (0 without warm-up; INT64_MAX while the
  // warm-up runs have not all finished).
  int64_t steady_start_ns = 0;
  int64_t duration_ns = 0;  // from start to when the profile was taken
  std::vector<ProfileRun> runs;
  std::vector<ProfileEvent> events;  // in the order they ended, per thread
  std::vector<StreamInfo> streams;
  std::vector<ThreadInfo> threads;  // by ProfileEvent::thread, ascending
  std::vector<PlaceMemory> memory;
  // ComputeConcurrency(*this) when the profiler made the profile; call it
  // again after changing events or runs.
  Concurrency concurrency;
  std::optional<PlacedProgram> plan;  // see AttachPlan (profiler.h)

  // Steady state: runs that are not warm-up runs and finished; events that
  // belong to such a run, and RecordEvent spans outside runs that started at
  // or after steady_start_ns.
  bool IsSteady(const ProfileEvent& event) const;
  bool IsSteady(const ProfileRun& run) const { return !run.warmup && run.end_ns >= 0; }
  int SteadyRuns() const;
  // Wall time of each steady run, in ms, in run order.
  std::vector<double> SteadyStepMs() const;
};

// The median (p = 0.5), p90 (p = 0.9) etc. of `values` (nearest rank on
// the sorted values); 0 for none.
double Percentile(std::vector<double> values, double p);

// One placed copy, over the steady-state runs.
struct LedgerEntry {
  int op_index = -1;  // the copy's position in the placed program
  std::string var;
  Place from, to;
  int64_t bytes = 0;  // per copy (the last one seen)
  bool sync = true;
  std::string consumer;     // type of the op that read the copy
  int consumer_index = -1;  // its position in the placed program; -1 unknown
  int calls = 0;
  double per_step = 0;  // calls / steady runs
  double total_ms = 0;  // host wall time, all calls
  bool has_device_time = false;
  double device_ms = 0;  // all calls
};

// Busy, overlap and wait figures per finished run and their steady-state
// medians, from the events' host spans and device intervals (see
// StepConcurrency). Device intervals exist only where device time was
// measured; a device without a timer has timed == false and no busy time.
Concurrency ComputeConcurrency(const Profile& profile);

// The per-copy ledger, in program order. The consumer's position comes from
// the attached plan (the first non-copy op after the copy).
std::vector<LedgerEntry> CopyLedger(const Profile& profile);

// The optimizer's host side over the steady runs: what running updates on
// the host (optimizer offload, host-resident tables) costs the device and
// how much of it hides behind device work. Host optimizer work is, in the
// attached plan, the host ops of role optimize (updates, the clip norm)
// and the host casts of parameters and of their gradients (the 16-bit
// copies an offloaded parameter sends up and receives down). Times are
// lengths of unions of spans over the steady window (from the first steady
// run's start to the last one's end; pipelined runs overlap in it) divided
// by the steady runs: per step, mean.
struct HostOptimizer {
  Place device;          // the timed device the host work is measured against
  int optimize_ops = 0;  // optimize-role ops (updates, clip norms) it runs on the host
  int cast_ops = 0;      // casts of parameters and of their gradients it runs on the host
  int steady_steps = 0;
  double step_ms = 0;             // the steady window over the steady runs
  double busy_ms = 0;             // the host optimizer work
  double optimize_ms = 0;         // its optimize-role part
  double hidden_ms = 0;           // of busy_ms, while the device computed
  double hidden_backward_ms = 0;  // of busy_ms, while the device computed backward ops
  // The device computing nothing while host optimizer work ran (it waits
  // for the host's updates and casts), and while only transfers of it were
  // in flight (it waits for the bytes).
  double device_wait_ms = 0;
  double transfer_wait_ms = 0;
  // Bytes copied per step each way; of them, weights sent up (persistables
  // and the host casts of them) and gradients sent down to host optimizer ops.
  int64_t bytes_up = 0, bytes_down = 0;
  int64_t weights_up = 0, gradients_down = 0;
};

// nullopt without an attached plan, a timed device, steady runs, or host
// optimizer ops in the plan.
std::optional<HostOptimizer> ComputeHostOptimizer(const Profile& profile);

// What activation recomputation (framework/backward/recompute.h) costs: the
// attached plan's ops of origin recompute_of, per steady step (mean). Their
// time is the device time where an op has it, else its host self time.
struct Recomputation {
  int ops = 0;  // recomputed ops in the plan
  int steady_steps = 0;
  double step_ms = 0;  // the steady window (first steady run's start to the last's end) per step
  double ms = 0;       // the recomputed ops' time per step
};

// nullopt without an attached plan, steady runs or recomputed ops in it.
std::optional<Recomputation> ComputeRecomputation(const Profile& profile);

}  // namespace profiler
}  // namespace tandem

#endif  // TANDEM_PROFILER_PROFILE_H_
