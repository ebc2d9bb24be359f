// The executor's memory policy, stated once: the plan passes apply it
// (framework/runtime/plan_passes.h: FoldConstants, PinCopySources,
// PlanReleases) and the memory estimate predicts it (memory_estimate.h,
// memory_walk.h), so the two cannot drift apart.
//
//   const std::set<std::string> folded = FoldedConstants(placed.program.block());
//   if (ReleasedAfterLastUse({persistable, fetched, folded.count(v) > 0})) ...
//
// Pure functions of their arguments; thread-safe.
#ifndef TANDEM_FRAMEWORK_ESTIMATE_MEMORY_POLICY_H_
#define TANDEM_FRAMEWORK_ESTIMATE_MEMORY_POLICY_H_

#include <map>
#include <set>
#include <string>

#include "framework/placement/placer.h"
#include "framework/program/program.h"

namespace tandem {

// The variables of the folded constants: outputs of input-less ops whose
// schema is Constant() (fill_constant) that nothing else writes and that are
// not persistable.
// Such an op runs once (at a plan's first run) and its value is kept for
// every later run, allocated from then on.
std::set<std::string> FoldedConstants(const Block& block);

// What decides whether a variable's memory is freed after its last use in
// a run.
struct VarKeep {
  bool persistable = false;  // lives in the scope across runs
  bool fetched = false;      // returned by the run
  bool folded = false;       // a folded constant (FoldedConstants)
};

// A variable used by the run is freed right after its last use unless it
// is persistable, fetched or a folded constant.
inline bool ReleasedAfterLastUse(const VarKeep& v) {
  return !v.persistable && !v.fetched && !v.folded;
}

// Pinned copy sources: for each host->device copy of `placed`, the op that
// last wrote its source before it (for a persistable no op wrote before
// the copy: the op that writes it last in the program, whose value the
// next run copies, e.g. an offloaded update's 16-bit working copy), when
// that op is a kernel (not a copy), writes its output in the pinned host
// memory of the copy's device, so the copy reads it in place,
// asynchronously. Producer op index -> that device (the first such copy's,
// when several devices read the value).
std::map<int, Place> PinnedCopySources(const PlacedProgram& placed);

// Staged uploads: a host->device copy to a device with pinned host memory of
// its own (CUDA; on sim the host memory is the CPU's) of a value no op of
// the program wrote before it (a feed, a persistable: pageable memory) goes
// through a pinned staging buffer of its own, kept across runs; a value an
// op wrote is read in place (PinnedCopySources).
inline bool UploadIsStaged(bool device_has_pinned_memory, bool written_before) {
  return device_has_pinned_memory && !written_before;
}

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_ESTIMATE_MEMORY_POLICY_H_
