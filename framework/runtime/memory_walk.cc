#include "framework/runtime/memory_walk.h"

#include <algorithm>

namespace tandem {
namespace {

class Walker {
 public:
  explicit Walker(const MemoryProgram& program) : program_(program) {
    bound_.assign(program.vars.size(), -1);
    live_.assign(program.places.size(), 0);
    seen_.assign(program.places.size(), false);
    result_.peak.resize(program.places.size());
    result_.live_after_alloc.resize(program.places.size());
    for (std::vector<int64_t>& l : result_.live_after_alloc) l.reserve(program.ops.size());
    result_.values.reserve(program.residents.size() + 2 * program.ops.size());
    refs_.reserve(result_.values.capacity());
  }

  MemoryWalkResult Run();

 private:
  int NewValue(int var, int place, int64_t bytes, MemoryCategory category) {
    result_.values.push_back({var, place, bytes, category, op_});
    refs_.push_back(1);
    live_[place] += bytes;
    seen_[place] = true;
    return static_cast<int>(result_.values.size()) - 1;
  }
  void Deref(int id) {
    if (--refs_[id] > 0) return;
    live_[result_.values[id].place] -= result_.values[id].bytes;
    result_.values[id].died = op_;
  }
  void Bind(int var, int id) {
    const int old = bound_[var];
    bound_[var] = id;
    if (old >= 0) Deref(old);
  }
  void NotePeaks() {
    for (size_t p = 0; p < live_.size(); ++p) {
      MemoryWalkResult::Peak& peak = result_.peak[p];
      if (!seen_[p]) continue;
      if (!peak.seen || live_[p] > peak.bytes) peak = {true, live_[p], op_};
    }
  }
  void StartResidents();
  // Allocates op `i`'s outputs; the (var, value) pairs to bind after it.
  void AllocateOutputs(const MemoryProgram::Op& op);
  void FinishOp(const MemoryProgram::Op& op);
  void FetchToHost();

  const MemoryProgram& program_;
  MemoryWalkResult result_;
  std::vector<int> refs_;   // per value
  std::vector<int> bound_;  // per variable: its value, -1 if none
  std::vector<int64_t> live_;
  std::vector<bool> seen_;
  std::vector<std::pair<int, int>> bindings_;  // the current op's (var, value)
  int op_ = -1;
};

void Walker::StartResidents() {
  for (const MemoryProgram::Resident& r : program_.residents) {
    const int id = NewValue(r.var, r.place, r.bytes, r.category);
    if (r.held) ++refs_[id];
    if (r.bound) Bind(r.var, id);
  }
}

void Walker::AllocateOutputs(const MemoryProgram::Op& op) {
  bindings_.clear();
  if (op.copy) {
    const int src = bound_[op.copy_source];
    const MemoryProgram::Output& out = op.outputs[0];
    const int64_t bytes = src >= 0 ? result_.values[src].bytes : op.unbound_bytes;
    bindings_.emplace_back(out.var,
                           NewValue(out.var, out.place, bytes, MemoryCategory::kIntermediate));
    return;
  }
  for (const MemoryProgram::Output& out : op.outputs) {
    if (out.in_place >= 0 && bound_[out.in_place] >= 0) {
      ++refs_[bound_[out.in_place]];
      bindings_.emplace_back(out.var, bound_[out.in_place]);
      continue;
    }
    bindings_.emplace_back(out.var,
                           NewValue(out.var, out.place, out.bytes, MemoryCategory::kIntermediate));
  }
}

void Walker::FinishOp(const MemoryProgram::Op& op) {
  if (op.copy && op.keep_source && bound_[op.copy_source] >= 0) ++refs_[bound_[op.copy_source]];
  for (const auto& [var, id] : bindings_) Bind(var, id);
  for (int var : op.frees) {
    if (bound_[var] < 0) continue;
    Deref(bound_[var]);
    bound_[var] = -1;
  }
}

void Walker::FetchToHost() {
  for (int f : program_.fetches) {
    const int id = f < 0 ? -1 : bound_[f];
    if (id < 0 || program_.places[result_.values[id].place].is_host()) continue;
    int host = 0;
    while (!program_.places[host].is_host()) ++host;
    NewValue(f, host, result_.values[id].bytes, MemoryCategory::kIntermediate);
  }
}

MemoryWalkResult Walker::Run() {
  op_ = -1;
  StartResidents();
  NotePeaks();
  const int n = static_cast<int>(program_.ops.size());
  for (int i = 0; i < n; ++i) {
    op_ = i;
    AllocateOutputs(program_.ops[i]);
    NotePeaks();
    for (size_t p = 0; p < live_.size(); ++p) {
      result_.live_after_alloc[p].push_back(live_[p]);
      seen_[p] = true;
    }
    FinishOp(program_.ops[i]);
  }
  op_ = n;
  result_.fetch_values_begin = static_cast<int>(result_.values.size());
  FetchToHost();
  NotePeaks();
  return std::move(result_);
}

}  // namespace

MemoryWalkResult WalkMemory(const MemoryProgram& program) { return Walker(program).Run(); }

void SetLastUses(const std::vector<std::vector<int>>& touched, MemoryProgram* program) {
  std::vector<int> last(program->vars.size(), -1);
  for (int i = 0; i < static_cast<int>(touched.size()); ++i) {
    for (int v : touched[i]) last[v] = i;
  }
  for (MemoryProgram::Op& op : program->ops) op.frees.clear();
  for (int v = 0; v < static_cast<int>(last.size()); ++v) {
    const MemoryProgram::Var& var = program->vars[v];
    if (last[v] < 0 || var.persistable || var.fetched || var.folded) continue;
    program->ops[last[v]].frees.push_back(v);
  }
}

}  // namespace tandem
