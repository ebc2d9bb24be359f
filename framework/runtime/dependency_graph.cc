#include "framework/runtime/dependency_graph.h"

#include <algorithm>
#include <unordered_map>

namespace tandem {
namespace {

// What the steps seen so far did to one slot.
struct SlotHistory {
  int last_writer = -1;
  std::vector<int> readers_since_write;
};

void SortUnique(std::vector<int>* v) {
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

}  // namespace

DependencyGraph BuildDependencyGraph(const std::vector<StepAccess>& steps) {
  DependencyGraph g;
  g.preds.resize(steps.size());
  g.succs.resize(steps.size());
  std::unordered_map<int, SlotHistory> history;
  for (int j = 0; j < static_cast<int>(steps.size()); ++j) {
    std::vector<int>& preds = g.preds[j];
    for (int slot : steps[j].reads) {
      const SlotHistory& h = history[slot];
      if (h.last_writer >= 0) preds.push_back(h.last_writer);  // read after write
    }
    for (int slot : steps[j].writes) {
      const SlotHistory& h = history[slot];
      if (h.last_writer >= 0) preds.push_back(h.last_writer);  // write after write
      preds.insert(preds.end(), h.readers_since_write.begin(),
                   h.readers_since_write.end());  // write after read
    }
    for (int slot : steps[j].reads) history[slot].readers_since_write.push_back(j);
    for (int slot : steps[j].writes) {
      SlotHistory& h = history[slot];
      h.last_writer = j;
      h.readers_since_write.clear();
    }
    preds.erase(std::remove(preds.begin(), preds.end(), j), preds.end());
    SortUnique(&preds);
    for (int p : preds) g.succs[p].push_back(j);
  }
  return g;
}

}  // namespace tandem
