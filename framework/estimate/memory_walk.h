// WalkMemory: the memory estimate's walk (memory_estimate.h) over a placed
// program reduced to what the walk needs: variables as indices, each op's
// allocations and the variables it last uses. EstimateMemory builds a
// MemoryProgram from a PlacedProgram; the auto placement builds one directly
// from its candidate placement each memory round (no placed program, no
// shape inference), so both walk the same rules and agree to the byte.
//
//   MemoryProgram m;
//   m.places = {CPUPlace(), GPUPlace(0)};
//   m.vars = {{.persistable = true}, {}};          // 0: w, 1: y
//   m.residents.push_back({.var = 0, .place = 1, .bytes = 256,
//                          .category = MemoryCategory::kParameter});
//   m.ops.push_back({.outputs = {{.var = 1, .place = 1, .bytes = 128}}, .frees = {1}});
//   MemoryWalkResult r = WalkMemory(m);
//   r.peak[1].bytes;   // 384: w and y while op 0 runs
//
// The rules (docs/design.md, "Memory estimate"): residents are live from the
// start (a feed or folded constant also held by its owner, a staging buffer
// unbound); each op allocates its outputs while its inputs are live (an
// in-place output shares its input's value) and its kernel's scratch, then
// binds them, freeing the values they replace and the scratch, then frees
// the variables it uses last; a copy takes
// its source value's bytes and may keep its source until the run ends; at
// the end the fetched device values get a host copy.
//
// Pipelined (MemoryProgram::pipelined, the executor's RunAsync): two runs in
// flight share the persistables, folded constants and kernels' own staging
// buffers (one kernel object serves both) and each has its own
// other values (a frame). The later run's op j may start once op
// `waits_for` of the earlier run is done (itself, the last writer of each
// persistable it reads; all of the earlier run when it writes one), so
// while the earlier run is at op i the later one is anywhere up to the last
// op of its longest prefix allowed by then. The pipelined peak of a place
// is the most the two hold over those pairs; once the earlier run's ops
// are done the later may be anywhere, beside the earlier's end (the sources
// its copies kept are held by its frame until the caller's Wait
// synchronises it) or, after that Wait, beside what it leaves (its feeds
// and fetched values) and two more sets of feeds: the next run's, which the
// caller makes while both frames still hold theirs, and RunAsync's copy of
// them.
// Pure function; thread-safe.
#ifndef TANDEM_FRAMEWORK_ESTIMATE_MEMORY_WALK_H_
#define TANDEM_FRAMEWORK_ESTIMATE_MEMORY_WALK_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "framework/place/place.h"

namespace tandem {

enum class MemoryCategory {
  kParameter,
  kState,
  kConstant,
  kFeed,
  kStaging,
  kIntermediate,
  kScratch,
  kKernelStaging,  // a kernel object's own pinned buffer (KernelDef::HostStaging)
};

// Persistables, folded constants and kernels' own staging: one copy whatever
// the runs in flight (the walk's and the auto placement's pipelined peaks).
inline bool SharedAcrossRuns(MemoryCategory c) {
  return c == MemoryCategory::kParameter || c == MemoryCategory::kState ||
         c == MemoryCategory::kConstant || c == MemoryCategory::kKernelStaging;
}

struct MemoryProgram {
  struct Var {
    bool persistable = false;  // never freed by a last use
    bool fetched = false;      // kept to the end, copied to the host if on a device
    bool folded = false;       // a folded constant: allocated as a resident, never freed
  };
  struct Resident {
    int var = -1;
    int place = 0;  // index into `places`
    int64_t bytes = 0;
    MemoryCategory category = MemoryCategory::kParameter;
    int op = -1;        // the op it belongs to (staging, constants); -1: none
    bool held = false;  // also held by its owner (the caller's feed, a kept constant)
    bool bound = true;  // bound to `var` (a staging buffer is not)
  };
  struct Output {
    int var = -1;
    int place = 0;
    int64_t bytes = 0;
    int in_place = -1;  // the input variable whose value it updates in place, if bound
  };
  struct Op {
    bool copy = false;
    int copy_source = -1;         // the variable a copy reads
    int64_t unbound_bytes = 0;    // a copy's bytes when its source has no value
    bool keep_source = false;     // a copy's source value is kept until the run ends
    std::vector<Output> outputs;  // distinct variables, folded constants left out
    std::vector<int> frees;       // variables whose last use this op is, freed after it
    // The kernel's temporary memory (KernelDef::Scratch): allocated with
    // the outputs, freed after the op. `scratch_var` names it (a variable
    // no op reads).
    int64_t scratch_bytes = 0;
    int scratch_var = -1;
    int scratch_place = 0;
    // Pipelined: the op of the run before that this op waits for (>= its
    // own index; ops.size(): the end of that run).
    int waits_for = 0;
  };
  std::vector<Place> places;
  std::vector<Var> vars;
  std::vector<Resident> residents;  // in creation order
  std::vector<Op> ops;
  std::vector<int> fetches;  // in the caller's order (a repeated fetch is copied twice)
  bool pipelined = false;    // also estimate two runs in flight
};

struct MemoryWalkResult {
  struct Value {
    int var = -1;
    int place = 0;
    int64_t bytes = 0;
    MemoryCategory category = MemoryCategory::kIntermediate;
    int born = -1;                               // the op that allocated it (-1: the start)
    int died = std::numeric_limits<int>::max();  // the op after which it was freed
    bool live_at(int op) const { return born <= op && died >= op; }
  };
  struct Peak {
    bool seen = false;  // the walk noted this place
    int64_t bytes = 0;
    int op = -1;  // -1: the start; ops.size(): after the fetches
  };
  std::vector<Value> values;  // in creation order: residents, ops', then the fetch copies
  int fetch_values_begin = 0;
  std::vector<Peak> peak;  // per place
  // Per place, the bytes live after each op allocated its outputs.
  std::vector<std::vector<int64_t>> live_after_alloc;
  // Pipelined: per place, the most two runs in flight hold, when the
  // earlier run is at `op` (ops.size(): over) and the later at `other_op`
  // (-1: before its first op). Empty unless MemoryProgram::pipelined.
  struct PipelinedPeak {
    int64_t bytes = 0;
    int op = -1, other_op = -1;
  };
  std::vector<PipelinedPeak> pipelined;
};

MemoryWalkResult WalkMemory(const MemoryProgram& program);

// Fills each op's `frees` and `waits_for` from the variables it reads and
// writes (`reads[i]`, `writes[i]`; a write-back copy writes its
// persistable): a variable is freed after the last op that touches it
// unless it is persistable, fetched or folded; an op waits for itself and
// for the last writer of each persistable it reads, and for the whole run
// before when it writes one.
void SetUses(const std::vector<std::vector<int>>& reads,
             const std::vector<std::vector<int>>& writes, MemoryProgram* program);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_ESTIMATE_MEMORY_WALK_H_
