// Executor: runs placed programs over a Scope.
//
//   Executor exe(GPUPlace(0));
//   Scope scope;
//   RETURN_IF_ERROR(exe.Run(builder.startup_program(), &scope));      // once
//   ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan,
//                    exe.Prepare(builder.main_program(), scope, /*feeds=*/{},
//                    {"loss"}));
//   for (int step = 0; step < n; ++step) {
//     RunStats stats;
//     ASSIGN_OR_RETURN(std::vector<Tensor> out, exe.Run(plan.get(), &scope, {},
//     &stats));
//     // out[0]: the loss, on the host; stats: copies and bytes per direction
//   }
//
// Prepare places the program (placer.h), creates every kernel once,
// resolves variables to slots and builds the plan's dependency graph
// (dependency_graph.h: read-after-write, write-after-read and
// write-after-write on every variable, persistables and in-place updates
// included), so a run does no placement, hashing or kernel lookup.
//
// Concurrent mode (the default): a run starts every step whose
// predecessors allow it. Device kernels and host->device copies go to the
// device's compute stream, device->host copies to its copy stream, ordered
// across streams by events; enqueueing never waits for a device. Host
// kernels run on the calling thread when the executor has one host worker
// (ExecutorOptions::host_workers; one is the default, see
// HostWorkerPool::DefaultSize): it enqueues device steps as they become
// ready and runs host steps in between, waiting for the event of the copy
// that brings a host step its device data only when that step is next;
// the worker waits for events whose completion device steps need. With
// several workers, host steps run on the workers instead: a worker that
// finishes a step runs the next ready host step itself and enqueues ready
// device steps, and independent host steps run at once. Either way a CPU
// branch runs while the GPU works through the device steps queued before
// it. Results are bitwise identical to in-order execution (each kernel
// sees exactly the values it would see in program order).
//
// Pipelined runs (RunAsync, then RunHandle::Wait; a training loop starts
// step n + 1 before it waits for step n): each run in flight has its own
// non-persistable variables (a frame, two per plan), a step of the later
// run starts once the steps of the earlier one whose results it needs are
// done, and steps that write persistables wait until the earlier run
// finished. A host lookup_table of a sparse table updated by the earlier
// run waits only for the rows that update writes (it gathers the others
// during the update and copies those rows after it). Results stay bitwise
// identical to running the steps one after another. A failed run cancels
// the run after it; the plan runs again normally.
//
// In-order mode (ExecutorOptions::in_order, the examples' --in_order):
// steps run one after another in program order on the calling thread,
// each device's work on its compute stream, every device->host copy
// waited for at once. For debugging, and the reference every result test
// compares the concurrent mode against.
//
// Copies: a host->device copy reads pinned memory (host kernels whose
// output is copied next allocate it there, other sources go through a
// pinned staging buffer) and is asynchronous; a device->host copy is
// "sync" in the stats and the profiler (the host waits for its data; in
// concurrent mode the wait happens on the reading step's worker, not on
// the dispatching thread). Memory stays safe across streams: buffers read
// by a copy stream or by a host->device copy are kept until the run's
// streams are synchronised; every other intermediate is freed once all of
// its users in the run were dispatched (device) or finished (host), and
// device memory freed that way is next used by the same compute stream.
// Input-less fill_constant ops whose output nothing else writes run once
// and are kept (constant folding). A run ends with every stream it used
// synchronised, so its results are final; a run that fails returns the
// failing step's status (naming op, position and place) after the steps
// already started finished and the devices were synchronised, and the plan
// can run again. Persistable variables live in the Scope. An Executor and
// a Plan are not thread-safe: one run at a time per executor.

// Graph capture (ExecutorOptions::capture_graphs, the examples' and
// benchmarks' --cuda_graph): a plan's first run is eager (warm-up:
// allocations, folded constants); from its second run on, its steps run in
// program order on the calling thread, and each segment of device work, a
// maximal run of one device's kernels and copies between host steps, is
// captured once with Device::BeginCapture and then replayed as one launch,
// while the host steps (host kernels, device kernels that write host
// memory) run eagerly between the launches. A plan all on one device is one
// segment: its step is one launch. Feeds and host values a segment copies
// up go into the same pinned staging buffers before its launch; values it
// copies down land in the same pinned buffers, and the host waits for the
// segment before the steps after it read them. Every buffer a captured
// segment used is kept (its intermediates are not freed) and its graph
// writes the same buffers on every replay. A segment is captured again when
// a value it baked in changed: the host value of a kernel's HostMemory
// argument, the shape of a value it copies up, the buffer of a device value
// it reads (a persistable given a new tensor), or the scope; when a segment
// is captured on three runs in a row, the step that baked in the changing
// value runs eagerly from then on (its segment split around it). A kernel that
// fails while being captured (e.g. one that reads device values on the
// host) runs eagerly from then on, its segment split around it; a device
// without capture runs its steps eagerly. Plan::graph_summary() lists the
// segments and the device steps run eagerly and why; RunStats counts the
// launches. Plans with nothing to capture (host-only plans, devices without
// capture) run as without capture_graphs, with one LOG(WARNING) naming why
// (Plan::graph_fallback_reason). Temporaries that kernels free while
// capturing are the device's to keep for the graph (the CUDA device holds
// them from its allocator's cache).
//
// Logging: --vmodule=executor=3 prints one line per op and per copy in the
// PaddlePaddle's format; --vmodule=executor=1 says when a plan is
// captured again and why.
#ifndef TANDEM_FRAMEWORK_RUNTIME_EXECUTOR_H_
#define TANDEM_FRAMEWORK_RUNTIME_EXECUTOR_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/device/device.h"
#include "framework/estimate/memory_estimate.h"
#include "framework/kernel/kernel_context.h"
#include "framework/placement/placement_planner.h"
#include "framework/placement/placer.h"
#include "framework/program/program.h"
#include "framework/runtime/schedule_trial.h"
#include "framework/tensor/scope.h"

namespace tandem {

struct ExecutorOptions {
  bool strict_placement = false;  // see PlacerOptions::strict
  TransferPolicy transfer_policy = TransferPolicy::kAllow;
  // Capture each plan's steady-state step once and replay it (see above).
  bool capture_graphs = false;
  // Run steps one at a time in program order on the calling thread, every
  // device->host copy synchronous (the debugging mode; see above). Off:
  // steps run as soon as their inputs are ready, host steps on a pool of
  // host workers and device steps on their streams, concurrently.
  bool in_order = false;
  // Stop at the first op whose output holds a NaN or an infinity (the
  // PaddlePaddle's FLAGS_check_nan_inf): the run returns
  // InvalidArgument naming the op, its position and place, the output
  // variable, the first bad index and value. Checks every floating-point
  // output after its op, copying device outputs to the host, so it runs
  // the plan in order (ExecutorOptions::in_order) and is slow; off by
  // default.
  bool check_numerics = false;
  // Fuse known op patterns at Prepare (framework/fusion/fuse_patterns.h:
  // l2_normalize -> square_error_cost -> mean and its backward, one op each
  // way) where the place has the fused kernels and no feed or fetch is an
  // intermediate. Off by default until the fused kernels are measured on
  // every place.
  bool fuse_patterns = false;
  // The concurrent mode's schedule trial (schedule_trial.h): after a few
  // warm-up runs of a plan, alternating phases of its runs go in program
  // order and concurrently, timed, and the faster schedule takes the rest
  // of the plan's runs (logged, and in Plan::PlacementTable). Results are
  // the same either way. Not used with in_order, check_numerics or
  // capture_graphs. `enabled = false`: always concurrent.
  ScheduleTrialOptions schedule_trial;
  // Concurrent mode: a run applies its updates (steps that write
  // persistables and feed nothing else of the run: optimizer updates) only
  // once every other step of it finished (device work: was queued), so a
  // run that fails leaves every parameter as it was (Step::held_for_commit);
  // an offloaded optimizer's host updates still overlap the backward's
  // device work. false: each update starts as soon as its inputs are ready;
  // results are the same, but a run that fails after some updates leaves
  // those parameters updated and the others not (restore a checkpoint to
  // retry the step). In-order runs apply updates in program order either way.
  bool atomic_updates = true;
  // Host workers of the concurrent mode (0: $TANDEM_HOST_WORKERS if set,
  // else HostWorkerPool::DefaultSize()).
  int host_workers = 0;
  // Shapes the fed variables will have, for the memory estimate of each
  // plan (memory_estimate.h; -1 dims left unknown count as 1) and for the
  // placement planner.
  std::map<std::string, Shape> feed_shapes;
  // Chooses places before the placer's rules at every Prepare
  // (placement_planner.h); null: the rules alone. The automatic placement
  // (framework/autoplace/auto_placement.h: MakeAutoPlacer) places every op
  // without device_guard for the smallest estimated step time within a
  // memory budget; initialisers then run on the host and each plan moves
  // the persistables to where it keeps them (PlacedProgram::homes) before
  // every run.
  std::shared_ptr<PlacementPlanner> placement_planner;
};

// One copy made during a run (a per-copy ledger entry).
struct CopyRecord {
  std::string var;  // variable copied
  Place from, to;
  int64_t bytes = 0;
  bool sync = true;
  std::string consumer;  // type of the op whose read caused it
  std::string reason;    // the placer's explanation
};

// What one run did.
struct RunStats {
  int ops = 0;  // kernels run (copies excluded)
  int copies_h2d = 0, copies_d2h = 0;
  int64_t bytes_h2d = 0, bytes_d2h = 0;
  int sync_copies = 0, async_copies = 0;
  int fetch_copies = 0;  // device->host copies made to return fetched values
  int64_t fetch_bytes = 0;
  std::vector<CopyRecord> ledger;  // placed copies (fetches excluded)
  // Graph capture: `captured` when this run recorded a device graph,
  // `replayed` when device work of it ran as graph launches (the capturing
  // run's too). The ops, copies and ledger of a captured segment are those
  // of its capture: they still happen, inside the graph.
  bool captured = false, replayed = false;
  // Graph capture: device graphs launched in this run (one per segment),
  // and device steps (kernels, copies) run outside any graph.
  int graph_launches = 0, ungraphed_device_steps = 0;
  // Values kernels reported during the run (KernelContext::Report), by
  // name, the last in program order wins: dynamic loss scaling's
  // update_loss_scaling reports "loss_scaling" (the scale after the step)
  // and "step_skipped" (1 when the step found an infinity or a NaN in its
  // gradients and left the parameters as they were, else 0). A replayed
  // graph reports nothing: no kernel's host code runs in a replay.
  std::map<std::string, double> reports;

  int copies() const { return copies_h2d + copies_d2h; }
  std::string DebugString() const;  // "3 ops, 1 H2D (4 B), 1 D2H (4 B), 2 sync"
};

using FeedMap = std::map<std::string, Tensor>;

class ExecutionObserver;
class HostWorkerPool;
class Plan;
struct PlanState;
class Executor;
struct PendingRun;
class RunScheduler;

// A run started by Executor::RunAsync. Movable; Wait() once. It needs its
// plan (not the executor): Wait() before the plan is destroyed; a handle
// dropped without Wait() leaves its run to finish with the plan's next run
// (or the plan's destructor), its results unread.
class RunHandle {
 public:
  RunHandle();
  ~RunHandle();
  RunHandle(RunHandle&&) noexcept;
  RunHandle& operator=(RunHandle&&) noexcept;

  // Blocks until the run is over (and every run of its plan started
  // before it); its fetches, on the host, and its stats. The run's error
  // if it failed; Cancelled, naming the first error, if a run of the
  // same plan started before it failed. FailedPrecondition when called
  // twice or on a default-constructed handle.
  absl::StatusOr<std::vector<Tensor>> Wait(RunStats* stats = nullptr);

 private:
  friend class Executor;
  RunHandle(Plan* plan, std::shared_ptr<PendingRun> run);
  Plan* plan_ = nullptr;
  std::shared_ptr<PendingRun> run_;
};

class Executor {
 public:
  explicit Executor(Place default_place, ExecutorOptions options = {});
  ~Executor();

  const Place& default_place() const { return default_place_; }

  // Places and prepares `program` for repeated runs. Variables already in
  // `scope` keep their places; feeds arrive on the host. `fetches` are
  // returned by every run, on the host, as values of their own (a fetched
  // persistable is copied: later runs do not change what a run returned).
  //
  // Lifetimes: the plan is the caller's and may outlive this executor; any
  // executor may run it (one at a time: runs of another executor still in
  // flight are finished first; a plan's host steps run on the workers of
  // the executor running it, which the plan keeps while it needs them). A
  // plan may run over different scopes in turn (runs in flight over the
  // previous scope are finished first). Destroying a plan waits for its
  // runs in flight.
  absl::StatusOr<std::unique_ptr<Plan>> Prepare(const Program& program, const Scope& scope,
                                                const std::vector<std::string>& feeds,
                                                const std::vector<std::string>& fetches);
  // Runs a prepared plan once (RunAsync, then Wait).
  absl::StatusOr<std::vector<Tensor>> Run(Plan* plan, Scope* scope, const FeedMap& feeds = {},
                                          RunStats* stats = nullptr);
  // Starts a run of `plan` and returns while it is in flight (pipelined
  // steps, see above): copies `feeds` in, enqueues its host->device copies
  // and every device step whose inputs are ready, and leaves the rest to
  // the run's Wait() (or to the host workers). While the run before it is
  // still in flight, a step starts once the steps of that run whose
  // results it needs are done; at most two runs of a plan are in flight
  // (a third RunAsync first finishes the oldest, keeping its results for
  // its handle). Falls back to a complete, synchronous run (the handle
  // holds its results) in in-order mode, with check_numerics, graph
  // capture, for a plan's first run, for host-only plans with one host
  // worker, for plans with collectives and for plans that fetch a
  // persistable they update (the next run would change it before the fetch;
  // logged once). Errors in `feeds` (a feed missing, empty, not on the host, of
  // another dtype or shape than the program declares) are returned at
  // once, before anything runs. The feeds are copied in: the caller may
  // refill or free its tensors as soon as RunAsync returns. The plan and
  // the scope must outlive the handle's Wait().
  absl::StatusOr<RunHandle> RunAsync(Plan* plan, Scope* scope, const FeedMap& feeds = {});
  // Asks every run of this executor that started before the call to stop
  // before its next step: each returns Cancelled naming that step, with
  // the scope as it was before the run (a run whose commit, its held
  // persistable writes, has begun completes instead; device work already
  // enqueued finishes first). Runs started afterwards are not affected.
  // Thread-safe and async-signal-safe (one atomic increment), so a SIGINT
  // handler may call it; returns at once.
  void Cancel() { cancel_requests_->fetch_add(1, std::memory_order_relaxed); }
  // Prepares and runs once (e.g. a startup program). With auto placement,
  // the plan's budget holds its one-run peak: no run overlaps this one.
  absl::StatusOr<std::vector<Tensor>> Run(const Program& program, Scope* scope,
                                          const FeedMap& feeds = {},
                                          const std::vector<std::string>& fetches = {},
                                          RunStats* stats = nullptr);

 private:
  friend class RunHandle;
  // Runs the plan's steps in the configured mode (no graph); `in_order`:
  // in program order on this thread whatever the mode (the schedule trial's
  // choice).
  absl::Status RunEagerly(Plan* plan, RunStats* stats, ExecutionObserver* observer, bool in_order);
  // Waits for every stream the run used; the fetches, on the host.
  absl::StatusOr<std::vector<Tensor>> FinishRun(Plan* plan, RunStats* stats, bool in_order);
  // `program` with fuse_patterns' fusions made (a copy); *summary says what
  // was fused, for the placement table.
  absl::StatusOr<Program> FusedProgram(const Program& program,
                                       const std::vector<std::string>& feeds,
                                       const std::vector<std::string>& fetches,
                                       std::string* summary) const;
  // Prepare; `runs_once`: the plan is run once (Run(program)), so the
  // automatic placement budgets the one-run peak, not two runs in flight.
  absl::StatusOr<std::unique_ptr<Plan>> PrepareFor(const Program& program, const Scope& scope,
                                                   const std::vector<std::string>& feeds,
                                                   const std::vector<std::string>& fetches,
                                                   bool runs_once);
  // Checks `feeds` against the plan's feeds (see RunAsync).
  static absl::Status ValidateFeeds(const Plan& plan, const FeedMap& feeds);
  // A complete run on frame 0 (after the runs in flight finished).
  // `cancel_requests` is Cancel()'s count when the run was asked for.
  absl::StatusOr<std::vector<Tensor>> RunNow(Plan* plan, Scope* scope, const FeedMap& feeds,
                                             uint64_t cancel_requests, RunStats* stats,
                                             bool in_order);
  // Whether the next run of `plan` goes in program order by the plan's
  // schedule trial (ExecutorOptions::schedule_trial); finishes the runs in
  // flight first when the run starts a timed phase.
  bool TrialRunsInOrder(Plan* plan);
  // RunAsync; with `caller_waits` (Run) the caller waits for the run at
  // once, so a run that starts with none in flight is solo.
  absl::StatusOr<RunHandle> StartRun(Plan* plan, Scope* scope, const FeedMap& feeds,
                                     bool caller_waits);
  // Whether a run of `plan` can overlap the run before it.
  bool CanPipeline(const Plan& plan);
  // Finishes the oldest run of `plan` in flight (its results go to its
  // handle); false when none is. Static, like the rest of a pipelined
  // run's end: a handle's Wait() needs no executor.
  static bool FinishOldest(Plan* plan);
  // The results of `run`, finishing the runs before it first.
  static absl::StatusOr<std::vector<Tensor>> WaitFor(Plan* plan, PendingRun* run, RunStats* stats);
  // Frame `frame` of `plan` bound to `scope` (variables and kernel
  // arguments, when the scope changed), cancelled by a Cancel() count above
  // `cancel_requests`.
  void BindFrame(Plan* plan, int frame, Scope* scope, uint64_t cancel_requests);
  // BindFrame, then the feeds set (copied with `copy_feeds`); StartRun
  // checked them (ValidateFeeds) before anything else.
  absl::Status BindAndFeed(Plan* plan, int frame, Scope* scope, const FeedMap& feeds,
                           uint64_t cancel_requests, bool copy_feeds);
  // Waits for the device work of the run on frame `frame` (with
  // `end_events`, the events recorded after its last device step where it
  // recorded them, else every stream it used; in-order runs use only the
  // compute streams), as one observer wait, then releases the buffers its
  // asynchronous copies read.
  static absl::Status WaitForDevices(Plan* plan, int frame, bool end_events, bool in_order);
  // After the steps of a pipelined run finished: its device work, then
  // its fetches.
  static absl::StatusOr<std::vector<Tensor>> FinishPipelinedRun(Plan* plan, PendingRun* run);
  // The fetches of frame `frame`, on the host (device values copied on
  // the device's copy stream); the values its kernels reported go to
  // `stats->reports`.
  static absl::StatusOr<std::vector<Tensor>> CollectFetches(Plan* plan, int frame, RunStats* stats);
  const std::shared_ptr<HostWorkerPool>& Pool();
  // Makes `plan` run its host steps on this executor's workers (a plan
  // prepared or last run by another executor: its runs in flight finish
  // first).
  void AdoptPlan(Plan* plan);
  // The stream on which fetched values of `device` are copied to the host.
  static absl::StatusOr<Stream*> FetchStream(Plan* plan, Device* device);

  Place default_place_;
  ExecutorOptions options_;
  // Made by the first concurrent run; shared with the plans it runs.
  std::shared_ptr<HostWorkerPool> pool_;
  // Cancel() calls so far; shared with the frames of runs in flight.
  std::shared_ptr<std::atomic<uint64_t>> cancel_requests_;
};

// A placed, validated program ready to run; made by Executor::Prepare.
class Plan {
 public:
  // Made by Executor::Prepare, which fills `state` (plan_state.h).
  explicit Plan(std::unique_ptr<PlanState> state);
  // Waits for the plan's runs in flight (their handles were dropped).
  ~Plan();
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  const PlacedProgram& placed() const;
  // The placement table (see PlacedProgram::TableString), then the memory
  // estimate, one line per place, then how runs are scheduled:
  //   schedule: in program order on the calling thread (every step is queued
  //   on gpu:0's compute stream); runs may overlap (RunAsync)
  std::string PlacementTable() const;
  // Bytes the plan holds per place in a steady-state run, estimated at
  // Prepare before anything was allocated (memory_estimate.h); Prepare
  // refused the plan if a place could not hold them.
  const ::tandem::MemoryEstimate& MemoryEstimate() const;
  // With ExecutorOptions::capture_graphs, once the plan ran captured: its
  // graph segments and the device steps run eagerly and why, e.g. "2 graph
  // segments (#0-#5 on gpu:0, #8-#12 on gpu:0); device steps run eagerly:
  // #6 'adam': writes its host-memory output ...". Empty otherwise.
  std::string graph_summary() const;
  // The schedule trial's choice once made (ExecutorOptions::schedule_trial:
  // "in order: 0.710 vs 0.770 ms per run concurrently (medians of ...)");
  // empty before, and for plans it does not time.
  std::string schedule_choice() const;
  // Why this plan runs eagerly although ExecutorOptions::capture_graphs is
  // set (the step and the reason); empty while it is (or may be) captured.
  const std::string& graph_fallback_reason() const;

  // The plan's data, for the runtime's own files (plan_state.h is private
  // to //framework/runtime): the executor, its passes and its runs.
  PlanState& state() { return *state_; }
  const PlanState& state() const { return *state_; }

 private:
  std::unique_ptr<PlanState> state_;
};

// Moves every persistable of `placed.homes` (where a placement planner
// keeps it) that `scope` holds elsewhere to its home: a copy (CopyTensorTo),
// then the old tensor is released. Every run does it first (a checkpoint load or another
// plan over the scope may have moved one since); call it to settle the
// scope before preparing a second plan that leaves persistables where they
// are (AutoPlacerOptions::move_persistables off).
absl::Status MovePersistablesHome(const PlacedProgram& placed, Scope* scope);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_RUNTIME_EXECUTOR_H_
