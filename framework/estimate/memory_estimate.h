// EstimateMemory: the bytes a placed program holds on each place during one
// steady-state run, computed from the program alone, before anything is
// allocated. Executor::Prepare computes it for every plan
// (Plan::MemoryEstimate()), refuses a plan that cannot fit a place
// (CheckMemoryFits), and the auto placement plans against it.
//
//   MemoryEstimateOptions opts;
//   opts.feeds = {"ids"};
//   opts.fetches = {"loss"};
//   opts.feed_shapes = {{"ids", Shape({128})}};
//   ASSIGN_OR_RETURN(MemoryEstimate m, EstimateMemory(placed, opts));
//   m.Find(GPUPlace(0))->peak_bytes;     // parameters + state + ... + live intermediates
//   std::cout << m.ToString();           // one line per place
//
// The model follows the executor (docs/design.md, "Memory estimate"):
// persistables used by the program are resident where they start; feeds are
// host values the caller holds for the whole run; folded constants (input-
// less fill_constant ops) are kept across runs; each op allocates its
// outputs while its inputs are still live, an overwritten value is freed
// after the op that replaced it, and a value is freed after the last op that
// uses its variable unless it is persistable, fetched or folded. Update ops
// (role optimize) update in place: output "XOut" is input "X"'s buffer.
// Copies allocate their destination; in the concurrent mode a device->host
// copy's source, and (always) a host->device copy's pinned source, are kept
// until the run ends; a host->device copy from pageable memory on a device
// with its own pinned allocator goes through a staging buffer the plan keeps.
// A SelectedRows value holds one row per element of its producer's integer
// input (the ids). Fetched device values are copied to the host at the end.
// A kernel's temporaries count while it runs, as its registration declares
// them (KernelDef::Scratch: the CUDA kernels do; cpu and sim kernels take
// theirs outside the allocators). Dims the program leaves -1 take feed_shapes
// through shape inference; any still unknown count as 1 and are listed in
// `unknown_vars`, so the estimate is then a lower bound. The pipelined peak
// adds what a second run in flight holds (PlaceMemory::pipelined_peak_bytes).
// Pure functions; thread-safe.
#ifndef TANDEM_FRAMEWORK_ESTIMATE_MEMORY_ESTIMATE_H_
#define TANDEM_FRAMEWORK_ESTIMATE_MEMORY_ESTIMATE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/op/op_schema.h"
#include "framework/estimate/memory_walk.h"
#include "framework/placement/placer.h"

namespace tandem {

struct MemoryEstimateOptions {
  std::vector<std::string> feeds, fetches;
  // Shapes the fed variables will have (their -1 dims filled in).
  std::map<std::string, Shape> feed_shapes;
  // The executor's in-order mode (device->host copy sources are freed at
  // their last use instead of at the end of the run).
  bool in_order = false;
  // Devices whose host allocator is separate pinned memory (CUDA): uploads
  // from other host memory are staged. On sim, host memory is the CPU's.
  std::set<Place> staged_upload_devices;
};

// One value live at a place's peak.
struct LiveValue {
  std::string var;
  int64_t bytes = 0;
};

struct PlaceMemory {
  Place place;
  int64_t parameters = 0;       // persistable parameters resident from the start
  int64_t optimizer_state = 0;  // other persistables resident from the start
  int64_t constants = 0;        // folded constants kept across runs
  int64_t feeds = 0;            // fed host values
  int64_t staging = 0;          // staging buffers of host->device copies
  int64_t intermediates = 0;    // everything else live at the peak
  int64_t scratch = 0;          // kernels' temporaries (KernelDef::Scratch)
  int64_t peak_bytes = 0;       // the sum of the above at the peak
  // With two runs in flight (Executor::RunAsync, a pipelined training
  // loop): the most the place holds, the second run's frame (its feeds,
  // staging and the values of the ops it may run ahead) and the next run's
  // feeds included (memory_walk.h); peak_bytes in order (no pipelining).
  int64_t pipelined_peak_bytes = 0;
  // Where: "#3 'sgd' of one run beside #1 'lookup_table' of the next" (empty
  // when the pipelined peak is the in-order one).
  std::string pipelined_peak_at;
  // Placed index of the op at the peak: -1 at the start, the op count after
  // the last op (fetches copied to the host).
  int peak_op = -1;
  std::string peak_at;             // "#3 'sgd'", "the start" or "the end (fetches)"
  std::vector<LiveValue> largest;  // every value live at the peak, largest first
  // Bytes live on this place after each op allocated its outputs (per placed op).
  std::vector<int64_t> live_after_alloc;
  // Persistables resident when the run starts (already allocated in the scope).
  int64_t persistables_at_start = 0;
};

struct MemoryEstimate {
  std::vector<PlaceMemory> places;        // sorted by place
  std::vector<std::string> unknown_vars;  // dims unknown even with feed_shapes
  // Every value the walk allocates. Residents (persistables, feeds, folded
  // constants, staging) are live from the start of a steady-state run; `op`
  // is the placed index of the op that creates the value (-1 for
  // persistables and feeds, which exist before the run).
  struct Allocation {
    int op = -1;
    std::string var;
    Place place;
    int64_t bytes = 0;
    bool resident = false;
  };
  std::vector<Allocation> allocations;

  const PlaceMemory* Find(const Place& place) const;
  // Peak bytes of `place` (0 if the plan does not use it).
  int64_t PeakBytes(const Place& place) const;
  // "memory estimate: sim:0 peak 6.1 MiB (parameters 6.1 MiB, ...) at #3 'sgd'; ..."
  // one line per place.
  std::string ToString() const;
};

absl::StatusOr<MemoryEstimate> EstimateMemory(const PlacedProgram& placed,
                                              const MemoryEstimateOptions& options);

// ResourceExhausted when the estimate exceeds `capacity` on a place (bytes
// the plan may use there; places without an entry are not limited): names
// the first op at which it would not fit, its largest output (variable,
// dtype and shape, bytes), the bytes already planned there and the capacity,
// with a hint that fits the place.
absl::Status CheckMemoryFits(const PlacedProgram& placed, const MemoryEstimate& estimate,
                             const std::map<Place, int64_t>& capacity);

// Each op's argument metas as the estimate resolves them (declared shapes,
// fed shapes, shape inference, small known values; unknown dims as 1), and
// the bytes of each variable the op reads or writes (SelectedRows: one row
// per id). For the cost model and the auto placement.
struct OpArgMetas {
  std::map<std::string, std::vector<TensorMeta>> inputs, outputs;
  std::map<std::string, int64_t> bytes;  // by variable
};
std::vector<OpArgMetas> ResolveArgMetas(const Program& program,
                                        const std::map<std::string, Shape>& feed_shapes);

// The memory estimate of many placements of one program, without placing
// it: for each placement (every op's place and kernel, where the variables
// start) the walk EstimateMemory makes of the program PlaceProgram would
// make of it, with the same copies (by the placer's rules: one per value
// and destination, device to device through the host, write-backs of
// persistables updated away from where they start) and the same bytes. For
// the auto placement, which estimates a placement per memory round; the
// program's metas are resolved once. Not thread-safe; `program` and
// `metas` must outlive it.
//
//   PlacementMemory model(program, options, ResolveArgMetas(program, options.feed_shapes));
//   const MemoryWalkResult& walk = model.Estimate(places, kernels, initial_places);
//   walk.peak[model.Slot(GPUPlace(0))].bytes;   // == EstimateMemory(...).PeakBytes(GPUPlace(0))
class PlacementMemory {
 public:
  PlacementMemory(const Program& program, const MemoryEstimateOptions& options,
                  const std::vector<OpArgMetas>& metas);
  ~PlacementMemory();

  // `places` and `kernels` per op of the program. The result stays valid
  // until the next call.
  const MemoryWalkResult& Estimate(const std::vector<Place>& places,
                                   const std::vector<const KernelRegistration*>& kernels,
                                   const std::map<std::string, Place>& initial_places);
  // Of the last estimate: the index of `place` in the walk's per-place
  // vectors (-1: the plan does not use it), the name of a variable in the
  // placed program ("x", a copy "x@sim:0", a kernel's scratch "conv2d#12
  // scratch"), and for a copy the program op whose read needs it, for a
  // scratch the op whose kernel takes it (-1 for program variables and
  // write-backs).
  int Slot(const Place& place) const;
  std::string Name(int var) const;
  int Consumer(int var) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What each place of `estimate` can give the plan now: a device with a memory
// limit its limit minus what is in use there besides the plan's own
// persistables; the host its physical memory. Devices without a limit are
// left out (not limited). Reads the devices' allocator statistics.
std::map<Place, int64_t> AvailableMemory(const MemoryEstimate& estimate);

// The options Executor::Prepare estimates a plan with: its feeds, fetches and
// feed shapes, its mode, and which of its devices stage uploads (their host
// allocator is not the CPU's).
MemoryEstimateOptions PlanMemoryOptions(const PlacedProgram& placed,
                                        const std::vector<std::string>& feeds,
                                        const std::vector<std::string>& fetches,
                                        const std::map<std::string, Shape>& feed_shapes,
                                        bool in_order);
// The same for a plan that uses `places` (before it is placed).
MemoryEstimateOptions PlanMemoryOptions(const std::set<Place>& places,
                                        const std::vector<std::string>& feeds,
                                        const std::vector<std::string>& fetches,
                                        const std::map<std::string, Shape>& feed_shapes,
                                        bool in_order);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_ESTIMATE_MEMORY_ESTIMATE_H_
