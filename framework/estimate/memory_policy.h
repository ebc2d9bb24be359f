// The executor's memory policy, stated once: the plan passes apply it
// (framework/runtime/plan_passes.h: FoldConstants, PlanReleases) and the
// memory estimate predicts it (memory_estimate.h, memory_walk.h), so the two
// cannot drift apart.
//
//   const std::set<std::string> folded = FoldedConstants(placed.program.block());
//   if (ReleasedAfterLastUse({persistable, fetched, folded.count(v) > 0})) ...
//
// Pure functions of their arguments; thread-safe.
#ifndef TANDEM_FRAMEWORK_ESTIMATE_MEMORY_POLICY_H_
#define TANDEM_FRAMEWORK_ESTIMATE_MEMORY_POLICY_H_

#include <set>
#include <string>

#include "framework/program/program.h"

namespace tandem {

// The variables of the folded constants: outputs of input-less
// fill_constant ops that nothing else writes and that are not persistable.
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

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_ESTIMATE_MEMORY_POLICY_H_
