// PlacementDot: a placed program as a Graphviz graph, for a picture of the
// CPU/device split.
//
//   std::ofstream("/tmp/split.dot") << PlacementDot(plan->placed(), &plan->MemoryEstimate());
//   // dot -Tsvg /tmp/split.dot > split.svg
//
// One node per op (not copies), labelled "#index type" and its place, and
// filled with its place's colour (a legend lists the places); variables that
// exist before the run (feeds, persistables) are small boxes. An edge runs
// from each value's producer to each op that reads it; a value that a copy
// op moves is drawn as one bold red edge labelled with the variable, the
// direction and the bytes (from `memory`, the plan's estimate; omitted when
// null). The summary of the auto pass, if any, is the graph's label.
// Pure function; thread-safe.
#ifndef TANDEM_FRAMEWORK_ESTIMATE_PLACEMENT_DOT_H_
#define TANDEM_FRAMEWORK_ESTIMATE_PLACEMENT_DOT_H_

#include <string>

#include "framework/estimate/memory_estimate.h"
#include "framework/placement/placer.h"

namespace tandem {

std::string PlacementDot(const PlacedProgram& placed, const MemoryEstimate* memory);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_ESTIMATE_PLACEMENT_DOT_H_
