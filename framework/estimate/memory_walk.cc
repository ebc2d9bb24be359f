#include "framework/estimate/memory_walk.h"

#include <algorithm>

#include "framework/estimate/memory_policy.h"

namespace tandem {
namespace {

class Walker {
 public:
  explicit Walker(const MemoryProgram& program) : program_(program) {
    bound_.assign(program.vars.size(), -1);
    live_.assign(program.places.size(), 0);
    shared_.assign(program.places.size(), 0);
    feeds_.assign(program.places.size(), 0);
    seen_.assign(program.places.size(), false);
    result_.peak.resize(program.places.size());
    result_.live_after_alloc.resize(program.places.size());
    for (std::vector<int64_t>& l : result_.live_after_alloc) l.reserve(program.ops.size());
    result_.values.reserve(program.residents.size() + 2 * program.ops.size());
    refs_.reserve(result_.values.capacity());
    if (program.pipelined) {
      live_at_.reserve((program.ops.size() + 2) * program.places.size());
      run_at_.reserve(live_at_.capacity());
    }
  }

  MemoryWalkResult Run();

 private:
  int NewValue(int var, int place, int64_t bytes, MemoryCategory category) {
    result_.values.push_back({var, place, bytes, category, op_});
    refs_.push_back(1);
    live_[place] += bytes;
    if (SharedAcrossRuns(category)) shared_[place] += bytes;
    seen_[place] = true;
    return static_cast<int>(result_.values.size()) - 1;
  }
  void Deref(int id) {
    if (--refs_[id] > 0) return;
    const MemoryWalkResult::Value& v = result_.values[id];
    live_[v.place] -= v.bytes;
    if (SharedAcrossRuns(v.category)) shared_[v.place] -= v.bytes;
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
  // Pipelined: each place's bytes now, all and the run's own (not shared).
  void NoteRunBytes() {
    for (size_t p = 0; p < live_.size(); ++p) {
      live_at_.push_back(live_[p]);
      run_at_.push_back(live_[p] - shared_[p]);
    }
  }
  // Pipelined: per place, what a run leaves once it is over: what is live at
  // its end but the copy sources it kept for its copies (released then).
  std::vector<int64_t> LeftWhenOver() const;
  void PipelinedPeaks();

  const MemoryProgram& program_;
  MemoryWalkResult result_;
  std::vector<int> refs_;          // per value
  std::vector<int> bound_;         // per variable: its value, -1 if none
  std::vector<int> kept_sources_;  // a value per reference a copy keeps to the run's end
  std::vector<int64_t> live_, shared_;
  std::vector<bool> seen_;
  // Per op position (start, each op, end) and place ([position * places +
  // place]): all bytes live (`live_at_`) and the run's own (`run_at_`).
  std::vector<int64_t> live_at_, run_at_;
  std::vector<int64_t> feeds_;                 // per place: the fed values' bytes
  std::vector<std::pair<int, int>> bindings_;  // the current op's (var, value)
  int scratch_ = -1;                           // the current op's scratch value
  int op_ = -1;
};

void Walker::StartResidents() {
  for (const MemoryProgram::Resident& r : program_.residents) {
    if (r.category == MemoryCategory::kFeed) feeds_[r.place] += r.bytes;
    const int id = NewValue(r.var, r.place, r.bytes, r.category);
    if (r.held) ++refs_[id];
    if (r.bound) Bind(r.var, id);
  }
}

void Walker::AllocateOutputs(const MemoryProgram::Op& op) {
  bindings_.clear();
  scratch_ = -1;
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
  if (op.scratch_bytes > 0) {
    scratch_ =
        NewValue(op.scratch_var, op.scratch_place, op.scratch_bytes, MemoryCategory::kScratch);
  }
}

void Walker::FinishOp(const MemoryProgram::Op& op) {
  if (op.copy && op.keep_source && bound_[op.copy_source] >= 0) {
    ++refs_[bound_[op.copy_source]];
    kept_sources_.push_back(bound_[op.copy_source]);
  }
  for (const auto& [var, id] : bindings_) Bind(var, id);
  if (scratch_ >= 0) Deref(scratch_);
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
  auto note_run = [&] {
    if (program_.pipelined) NoteRunBytes();
  };
  note_run();
  const int n = static_cast<int>(program_.ops.size());
  for (int i = 0; i < n; ++i) {
    op_ = i;
    AllocateOutputs(program_.ops[i]);
    NotePeaks();
    note_run();
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
  note_run();
  if (program_.pipelined) PipelinedPeaks();
  return std::move(result_);
}

// Positions 0 .. n + 1 of live_at_ and run_at_: the start, after each op
// allocated, the end. While the earlier run is at op i (running it), the
// later one may have reached the last op of its longest prefix whose ops
// wait for ops before i; its own bytes count at their most up to there.
// Once the earlier run's ops are done (i == n) the later may be anywhere,
// beside the earlier's end (its kept copy sources held until the caller's
// Wait) or, after that Wait, beside what it leaves (LeftWhenOver) and two
// more sets of feeds.
std::vector<int64_t> Walker::LeftWhenOver() const {
  std::vector<int64_t> left = live_;
  std::vector<int> refs = refs_;
  for (int id : kept_sources_) {
    if (--refs[id] == 0) left[result_.values[id].place] -= result_.values[id].bytes;
  }
  return left;
}

void Walker::PipelinedPeaks() {
  const int n = static_cast<int>(program_.ops.size());
  std::vector<int> reach(n + 1);  // [i + 1]: the later run's last op while the earlier is at i
  int j = 0, waits = -1;
  for (int i = -1; i < n; ++i) {
    while (j < n && std::max(waits, program_.ops[j].waits_for) < i) {
      waits = std::max(waits, program_.ops[j++].waits_for);
    }
    reach[i + 1] = j - 1;
  }
  result_.pipelined.assign(live_.size(), {});
  const size_t places = live_.size();
  const std::vector<int64_t> over = LeftWhenOver();
  for (size_t p = 0; p < live_.size(); ++p) {
    MemoryWalkResult::PipelinedPeak& best = result_.pipelined[p];
    int64_t later = 0;
    int later_at = -1, covered = -1;
    for (int i = -1; i <= n; ++i) {
      // The earlier run over: the later may be anywhere, its end included.
      const int last = i < n ? reach[i + 1] + 1 : n + 1;
      while (covered < last) {
        ++covered;
        const int64_t own = run_at_[covered * places + p];
        if (covered == 0 || own > later) later = own, later_at = covered;
      }
      // Once the earlier run's ops are done, its frame keeps the sources
      // its copies kept (Frame::keep_alive) until the caller's Wait
      // synchronises the run (Executor::FinishPipelinedRun), while the
      // later run goes on. Then they are released, the caller makes the
      // next run's feeds and RunAsync copies them in
      // (Executor::BindAndFeed): both sets are live at once.
      const int64_t earlier =
          i < n ? live_at_[(i + 1) * places + p]
                : std::max(live_at_[(n + 1) * places + p], over[p] + 2 * feeds_[p]);
      if (earlier + later > best.bytes) best = {earlier + later, i, later_at - 1};
    }
  }
}

}  // namespace

MemoryWalkResult WalkMemory(const MemoryProgram& program) { return Walker(program).Run(); }

void SetUses(const std::vector<std::vector<int>>& reads,
             const std::vector<std::vector<int>>& writes, MemoryProgram* program) {
  const int n = static_cast<int>(program->ops.size());
  std::vector<int> last(program->vars.size(), -1), last_writer(program->vars.size(), -1);
  for (int i = 0; i < n; ++i) {
    for (const auto* vars : {&reads[i], &writes[i]}) {
      for (int v : *vars) last[v] = i;
    }
    for (int v : writes[i]) last_writer[v] = i;
  }
  for (int i = 0; i < n; ++i) {
    MemoryProgram::Op& op = program->ops[i];
    op.frees.clear();
    op.waits_for = i;
    for (int v : reads[i]) {
      if (program->vars[v].persistable) op.waits_for = std::max(op.waits_for, last_writer[v]);
    }
    for (int v : writes[i]) {
      if (program->vars[v].persistable) op.waits_for = n;
    }
  }
  for (int v = 0; v < static_cast<int>(last.size()); ++v) {
    const MemoryProgram::Var& var = program->vars[v];
    if (last[v] < 0 || !ReleasedAfterLastUse({var.persistable, var.fetched, var.folded})) continue;
    program->ops[last[v]].frees.push_back(v);
  }
}

}  // namespace tandem
