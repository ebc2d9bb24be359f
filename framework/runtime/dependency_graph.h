// Dependencies between the steps of a plan, from what each step reads and
// writes.
//
//   std::vector<StepAccess> access = {{/*reads=*/{}, /*writes=*/{0}},     // a
//   = ...
//                                     {{0}, {1}},                         // b
//                                     = f(a)
//                                     {{0}, {0}}};                        // a
//                                     = g(a)
//   DependencyGraph g = BuildDependencyGraph(access);
//   g.preds[1];  // {0}: read after write of a
//   g.preds[2];  // {0, 1}: write after write of a, write after read (step 1
//   reads a)
//
// Slots are small integers naming variables (persistables and in-place
// updates included: a step that reads and writes a slot updates it in
// place). Step j depends on an earlier step i when j reads what i wrote
// (read after write), writes what i read (write after read) or writes what
// i wrote (write after write), on the last write before j and the reads
// since. Running every step after its predecessors gives the results of
// running the steps in order. Plain data; building is O(steps + accesses).
#ifndef TANDEM_FRAMEWORK_RUNTIME_DEPENDENCY_GRAPH_H_
#define TANDEM_FRAMEWORK_RUNTIME_DEPENDENCY_GRAPH_H_

#include <vector>

namespace tandem {

// The slots one step reads and writes (duplicates allowed).
struct StepAccess {
  std::vector<int> reads;
  std::vector<int> writes;
};

struct DependencyGraph {
  // Per step, the earlier steps it must follow (ascending, no duplicates)
  // and the later steps that follow it (ascending).
  std::vector<std::vector<int>> preds;
  std::vector<std::vector<int>> succs;
};

DependencyGraph BuildDependencyGraph(const std::vector<StepAccess>& steps);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_RUNTIME_DEPENDENCY_GRAPH_H_
