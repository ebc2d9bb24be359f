// A prepared plan's data (PlanState, a plain struct): one Step per placed op
// or copy, the captured graph state and what one run binds. The executor's
// Prepare fills it through the plan passes (plan_passes.h), its runs read it
// (step_runner.h, concurrent_run.h, graph_capture.h); a Plan owns one.
// Private to //framework/runtime (not a public header).
//
// Threads: Prepare builds everything here; a run reads it. During a
// concurrent run a step's fields are touched only by the thread running
// that step (a host worker or the dispatcher), so steps need no lock.
#ifndef TANDEM_FRAMEWORK_RUNTIME_PLAN_INTERNAL_H_
#define TANDEM_FRAMEWORK_RUNTIME_PLAN_INTERNAL_H_

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "framework/device/device.h"
#include "framework/device/device_registry.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/runtime/execution_observer.h"
#include "framework/runtime/executor.h"
#include "framework/runtime/host_worker_pool.h"
#include "framework/runtime/schedule_trial.h"

namespace tandem {

using SlotArgs = std::vector<std::pair<std::string, std::vector<int>>>;

// Where a step's work goes in a concurrent run.
enum class Lane {
  kHost,     // a host kernel, on a host worker (or the dispatching thread)
  kCompute,  // a device kernel or host->device copy, on the device's compute
             // stream
  kCopy,     // a device->host copy, on the device's copy stream
  kComm,     // a collective's device kernel, on the plan's collective stream
             // of the device (Step::comm_stream)
};

// How a step waits for one of its predecessors in a concurrent run.
enum class EdgeKind {
  kStreamOrder,  // same stream: queued after it, nothing to do
  kEventWait,    // same device, other stream: the stream waits for its event
  kHostWait,     // a host step after device work: the worker waits for its event
  kCompletion,   // starts only once the predecessor's work has completed
};

// A host row gather of a pipelined run (a kernel declaring GathersRows, as
// lookup_table without a padding row) whose only wait for the previous
// run's update of its table is by rows: it runs while the update does,
// gathering every row the update does not write (read from the update's
// ids), and copies the others once the update finished (concurrent_run.cc).
// Only for a table with one writer, whose kernel declares UpdatesRowsOf
// (sgd, momentum, adam) with a Grad from a kernel declaring SparseRowsFrom
// (a sparse lookup_table_grad). The plan passes read these contracts from
// the kernels' registration lines, never op names.
struct RowRefinement {
  int writer = -1;               // the update step (of the previous run)
  int writer_ids_slot = -1;      // the ids its sparse Grad's rows come from: the rows it writes
  int writer_ids_producer = -1;  // the step writing them; -1: fed or persistable
  int ids_slot = -1, table_slot = -1, out_slot = -1;  // this lookup's
  // Scratch of the step (one run at a time: a step waits for itself in
  // the run before): a bitmap of hashed update rows, the positions of this
  // run's ids that may be among them, and what remains to do once the
  // update finished.
  std::vector<uint64_t> bitmap;
  std::vector<int64_t> conflicts;
  enum class Rest { kNothing, kCopyRows, kWholeKernel } rest = Rest::kNothing;
};

// Everything a prepared plan holds; see the top. Runs of one plan are
// serialised by the executor (at most kPipelineFrames in flight, each on
// its own Frame).
struct PlanState {
  struct Step;          // one op or copy
  struct GraphSegment;  // a run of device steps captured as one device graph
  struct GraphState;    // the plan's graph segments and eager steps
  struct Frame;         // what one run binds

  PlanState();
  ~PlanState();

  PlacedProgram placed;
  ::tandem::MemoryEstimate memory;
  std::vector<std::unique_ptr<Step>> steps;
  std::vector<std::string> slot_names;
  std::vector<bool> slot_persistable;
  std::vector<bool> slot_folded;               // outputs of folded constants
  std::vector<bool> slot_releasable;           // intermediates freed after their last use
  std::vector<std::unique_ptr<Frame>> frames;  // frame 0 by Prepare, frame 1 when pipelined
  std::vector<int> feed_slots, fetch_slots;
  std::vector<std::string> feed_names, fetch_names;
  std::vector<Device*> devices;  // every device the plan uses
  // Devices on whose copy stream the plan queues steps: a run waits for that
  // stream at its end only there (work others queue on it is theirs).
  std::set<Device*> copy_lane_devices;
  // Of those, the devices whose copies a solo run puts on the compute
  // stream (all of them: Step::waits.solo_on_compute).
  std::set<Device*> solo_compute_copy_devices;
  // Whether a run (solo or not) queues work on `device`'s copy stream.
  bool UsesCopyStream(Device* device, bool solo) const {
    return copy_lane_devices.count(device) > 0 &&
           !(solo && solo_compute_copy_devices.count(device) > 0);
  }
  bool host_only = false;  // every step runs on the host
  // No two steps can ever run at once: each step (constants folded away)
  // depends directly on the one before, or every step is device work queued
  // on the compute stream of one device. A run the caller waits for, with no
  // run of the plan in flight, then dispatches the steps in program order
  // on the calling thread: the concurrent mode's hand-offs would only add
  // time. `schedule` says which (plan_passes::BuildSchedule), for the
  // placement table.
  bool serial = false;
  std::string schedule;
  // ExecutorOptions::atomic_updates: BuildSchedule holds updates for the
  // commit (Step::held_for_commit) only when set.
  bool atomic_updates = true;
  // Times runs in order against concurrent ones and keeps the faster
  // (ExecutorOptions::schedule_trial; set at Prepare).
  ScheduleTrial schedule_trial;
  // What ExecutorOptions::fuse_patterns fused, for the placement table
  // ("" when it is off).
  std::string fusion_summary;
  bool constants_ready = false;  // folded steps have run
  // Pipelined runs in flight (oldest first) and who runs their steps.
  std::deque<std::shared_ptr<PendingRun>> in_flight;
  std::unique_ptr<RunScheduler> scheduler;
  std::string pipeline_blocker;            // why runs cannot overlap (empty: they can)
  bool pipeline_blocker_reported = false;  // logged at the first RunAsync
  // Per device: the stream fetched values are copied to the host on.
  std::map<Device*, std::unique_ptr<Stream>> fetch_streams;
  // Per device with collectives: the stream they run on (Lane::kComm).
  std::map<Device*, std::unique_ptr<Stream>> comm_streams;
  std::string graph_blocker;          // see Plan::graph_fallback_reason()
  std::unique_ptr<GraphState> graph;  // the plan's capture, once it ran with capture_graphs
};

struct PlanState::Step {
  OpDesc op;
  int index = 0;  // position in the placed program
  Place place;
  Device* device = nullptr;
  const KernelDef* def = nullptr;  // nullptr for copies
  std::unique_ptr<OpKernel> kernel;
  SlotArgs inputs, outputs;
  std::vector<int> release_after;  // in-order mode: slots whose last use is this step
  bool is_copy = false;
  Place copy_to;
  // A collective's device work (Lane::kComm): a stream of the plan's own per
  // device, so that collectives overlap the compute stream's kernels.
  Stream* comm_stream = nullptr;
  // Computed once and kept: an input-less, deterministic op whose output
  // nothing else writes (fill_constant).
  bool folded = false;
  // Host memory for this step's host-resident outputs: a device's pinned
  // allocator when the output is copied to that device next.
  Allocator* host_output_allocator = nullptr;
  // Concurrent runs (built by Prepare, see concurrent_run.cc).
  Lane lane = Lane::kHost;
  std::vector<int> slots_used;  // every slot read or written, once
  // Input slots the kernel may write although no output names them: a copy
  // of a variable that the step also writes, as an update in place reads it
  // once placed (sgd on sim:0 reads Param 'w1@sim:0', the placer's copy of
  // 'w1', and binds ParamOut 'w1' to that buffer, updating it). The
  // schedule counts them as writes (plan_passes::MarkInPlaceUpdates).
  std::vector<int> updated_inputs;
  std::vector<std::pair<int, EdgeKind>> preds, succs;
  // Pipelined runs: edges between this step of run n + 1 and steps of run
  // n (prev_preds: the steps of the run before that this step waits for;
  // next_succs: the steps of the run after that wait for this one). Every
  // step also waits for itself in the run before.
  std::vector<std::pair<int, EdgeKind>> prev_preds, next_succs;
  // Writes a persistable variable: in a pipelined run it starts only once
  // every step of the run before finished (a failed run leaves the scope
  // as that run left it).
  bool writes_persistable = false;
  // Writes a persistable and no step that writes none depends on it (an
  // optimizer update): a concurrent run holds it until every other step
  // finished and the fetches' host buffers were allocated, so a run that
  // fails before leaves the persistables as they were.
  bool held_for_commit = false;
  // The kernel (KernelDef::ForwardsInput) may bind its outputs to that
  // input's tensor: neither they nor the input is persistable, fed or
  // fetched, and each is written by one step only (plan_passes::
  // AllowForwardedInputs), so no write through one name reaches another.
  bool forwards_inputs = false;
  // A lookup of the next run that waits for this sparse update only by
  // rows (RowRefinement::writer == this step).
  std::vector<int> row_readers;
  std::unique_ptr<RowRefinement> rows;  // set on such lookups
  // Which of the step's device work is waited for, and how, in each kind
  // of run (set by the schedule passes, read by the runs).
  struct DeviceWaits {
    // A successor waits for the step's device work: the frame's done event
    // is recorded after it (pipelined: a successor in the next run does).
    bool event = false, event_pipelined = false;
    // `event` for a solo run (Executor::Run: no other run overlaps it, the
    // caller waits for it at once), less the waits its single stream makes
    // moot.
    bool event_solo = false;
    // A successor in the same run needs the step's device work completed
    // (kCompletion): a host worker (or the thread with nothing else to do:
    // HandleWatches) waits for the done event and reports it.
    bool watched = false;
    // A successor in the next run does (LinkConsecutiveRuns): watched only
    // in runs that a later run may overlap (not solo), whose frames have
    // the pipelined done events (AddEvents). A solo run has no next run.
    bool watched_pipelined = false;
    // In a solo run, this device->host copy goes on the compute stream:
    // every compute step of its device comes before or after it, so the
    // copy stream would only add event waits
    // (plan_passes::ChooseSoloCopyStreams).
    bool solo_on_compute = false;
  } waits;
  bool WatchedIn(bool solo) const { return waits.watched || (waits.watched_pipelined && !solo); }

  // A host step with a successor in its run on a device lane (a copy up, a
  // kernel): concurrent runs start it before ready host steps that feed
  // only the host (HostReadyQueue). Set by BuildSchedule.
  bool feeds_device = false;

  bool is_host() const { return lane == Lane::kHost; }
  // The stream this step's device work goes to in the given mode.
  Stream* StreamFor(bool in_order, bool solo) const {
    if (in_order || (solo && waits.solo_on_compute)) return device->compute_stream();
    if (lane == Lane::kComm) return comm_stream;
    return lane == Lane::kCopy ? device->copy_stream() : device->compute_stream();
  }
};

// Buffers a run's asynchronous device work may still read: released once
// the run's devices are synchronised. Thread-safe.
class KeepAlive {
 public:
  void Add(std::shared_ptr<Buffer> buffer) {
    std::lock_guard<std::mutex> lock(mu_);
    buffers_.push_back(std::move(buffer));
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    buffers_.clear();
  }

 private:
  std::mutex mu_;
  std::vector<std::shared_ptr<Buffer>> buffers_;
};

// What one run of a plan binds: the variables of non-persistable slots,
// the variable of every slot, each step's kernel arguments, staging
// buffers and done events, and the buffers its asynchronous copies read.
// A plan has one frame per run that can be in flight at once
// (kPipelineFrames); synchronous and captured runs use frame 0. Folded
// constants live in frame 0; the other frames point at them.
struct PlanState::Frame {
  std::vector<Variable> locals;            // non-persistable slots
  std::vector<Variable*> slots;            // resolved per scope
  std::vector<ArgVars> in_args, out_args;  // per step
  // Per step: host->device copies from pageable memory go through it.
  std::vector<std::shared_ptr<Buffer>> staging;
  std::vector<std::unique_ptr<Event>> done_events;  // per step; null unless Step::waits.event
  // Per step: the values its kernel reported in this frame's run
  // (KernelContext::Report), each written by the thread running the step;
  // moved into RunStats::reports when the run's fetches are collected (what
  // a failed run left is followed by the next run's values, which win).
  std::vector<std::vector<std::pair<std::string, double>>> reports;
  // Per plan device (PlanState::devices order): recorded on its compute and
  // copy streams right after a pipelined run's last device step was
  // enqueued, so that waiting for the run does not wait for the next one.
  std::vector<std::unique_ptr<Event>> compute_end, copy_end;
  bool ends_recorded = false;
  // The concurrent run bound to it is solo (Step::waits.solo_on_compute); only
  // read where `in_order` is false (in-order runs use the compute stream).
  bool solo = false;
  // The run bound to it (unique per run, KernelContext::run_id): the
  // executor takes the devices' asynchronous errors of a pipelined run by
  // it (Device::TakeRunErrors).
  uint64_t run_id = 0;
  KeepAlive keep_alive;
  // Per fetch: the host tensor a device value is copied into, allocated
  // before the run's updates (empty: allocated when fetched).
  std::vector<Tensor> fetch_host;
  const Scope* bound_scope = nullptr;  // the scope `slots` point into
  // The executor's cancel requests (Executor::Cancel) and their count when
  // this frame's run started: a later count cancels the run. Shared, so a
  // run in flight outlives its executor.
  std::shared_ptr<const std::atomic<uint64_t>> cancel_requests;
  uint64_t cancel_requests_seen = 0;
  bool CancelRequested() const {
    return cancel_requests != nullptr &&
           cancel_requests->load(std::memory_order_relaxed) != cancel_requests_seen;
  }
};

// Graph capture of a plan (ExecutorOptions::capture_graphs, graph_capture.h):
// its steps in program order split into segments, each a maximal run of
// device work of one device (kernels without host-memory outputs, and the
// copies to and from that device) between host steps, recorded as one
// device graph and replayed as one launch; the other steps (host kernels,
// device kernels writing host memory, kernels that cannot be captured) run
// eagerly between the launches.
struct PlanState::GraphSegment {
  // Host->device copies: the source slot's value goes into `staging` (whose
  // address the graph reads) before each launch.
  struct Upload {
    int src = 0;
    std::shared_ptr<Buffer> staging;  // nullptr for an empty value
    DataType dtype = DataType::kFloat32;
    Shape shape;
    int step = 0;  // the copy step
    // A SelectedRows' row list is host data the capture baked in.
    bool selected_rows = false;
    std::vector<int64_t> rows;
  };
  // A host value a kernel read at capture (a HostMemory input).
  struct HostValue {
    int slot = 0;
    std::string reader;  // op type, for the log
    DataType dtype = DataType::kFloat32;
    Shape shape;
    std::string bytes;
    int step = 0;  // the reading step
  };
  // A device value its steps read before any of them wrote it.
  struct Input {
    int slot = 0;
    // The buffer the graph reads, held: while the segment lives its memory
    // (and the Buffer's address, which the check compares) is no one
    // else's, so a slot given a new buffer is always seen as changed.
    std::shared_ptr<Buffer> buffer;
    const void* data = nullptr;  // the address the graph reads
    int step = 0;                // the first reading step
    // A SelectedRows' row list is host data its readers baked in.
    bool selected_rows = false;
    std::vector<int64_t> rows;
  };
  // Why a launch would not match an eager run of the current values.
  struct Stale {
    std::string reason;  // names the variable that changed; empty: not stale
    int step = -1;       // the step that baked it in
  };
  Stale StaleReason(const std::vector<Variable*>& slots,
                    const std::vector<std::string>& names) const;
  // Stages the uploads (unless `staged`: the capture just filled the
  // staging buffers with the values of its time, and the slots already
  // hold what the segment writes), enqueues the graph on the device's
  // compute stream (one observer span, "graph_launch"), binds the slots it
  // writes to the buffers it writes, and waits for it when the host reads
  // what it copied down.
  absl::Status Launch(const std::vector<Variable*>& slots, ExecutionObserver* observer,
                      bool staged = false) const;

  int first = 0, last = 0;  // its steps: plan step indices, inclusive
  Device* device = nullptr;
  std::unique_ptr<DeviceGraph> graph;  // null until captured
  std::vector<Upload> uploads;
  std::vector<HostValue> host_values;
  std::vector<Input> inputs;
  // Slots its steps write, bound as the capture left them (the graph
  // writes those buffers).
  std::vector<std::pair<int, Variable>> outputs;
  bool copies_to_host = false;  // holds device->host copies
  // Every buffer the captured steps used, kept so that no one else gets
  // their memory while the graph may write it.
  std::vector<std::shared_ptr<Buffer>> held;
  RunStats stats;  // the ops and copies of its steps (they run inside it)
  // Runs in a row that captured it again (a value it baked in changed).
  int captures_in_a_row = 0;
  OpDesc launch_op;  // type "graph_launch", for observers
};

struct PlanState::GraphState {
  // The segment whose first step is step `index`, or nullptr.
  GraphSegment* SegmentAt(int index) const {
    return segment_at[index] < 0 ? nullptr : segments[segment_at[index]].get();
  }
  // "2 graph segments (steps #0-#5 on gpu:0, #8-#12 on gpu:0); eager device
  // steps: #6 'adam' (writes its host-memory output 'Beta1PowOut')".
  std::string Summary(const PlanState& plan) const;

  std::vector<std::unique_ptr<GraphSegment>> segments;  // in program order
  std::vector<int> segment_at;  // per step: its segment's index if it starts one, else -1
  // Device steps that run eagerly, and why: they write host memory, failed
  // to be captured, or were captured again on too many runs in a row.
  std::map<int, std::string> eager;
  // Devices that cannot capture (Device::BeginCapture said so), and why.
  std::map<Device*, std::string> no_capture;
  // Whether a graph writes `buffer` (a fetched host value in it is
  // copied: the next launch writes it again, and so does a host step's
  // view of it, e.g. a reshape's output).
  bool Writes(const Buffer* buffer) const;
  // Segments replaced during the current run: their graphs may still be
  // running, so they are freed when the next run starts.
  std::vector<std::unique_ptr<GraphSegment>> retired;
};

inline constexpr int kPipelineFrames = 2;

// The executor's logging, under its documented name (--vmodule=executor=N):
// whether level N is on, and one line at that level.
bool ExecutorVlogIsOn(int level);
void ExecutorLog(const std::string& line);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_RUNTIME_PLAN_INTERNAL_H_
