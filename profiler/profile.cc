#include "profiler/profile.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tandem {
namespace profiler {

absl::StatusOr<ProfilerState> ParseProfilerState(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "cpu") return ProfilerState::kCPU;
  if (lower == "gpu") return ProfilerState::kGPU;
  if (lower == "all") return ProfilerState::kAll;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown profiler state '", name, "'; accepted: \"CPU\", \"GPU\", \"All\" (any case)"));
}

absl::string_view ProfilerStateName(ProfilerState state) {
  switch (state) {
    case ProfilerState::kCPU:
      return "CPU";
    case ProfilerState::kGPU:
      return "GPU";
    case ProfilerState::kAll:
      return "All";
  }
  return "?";
}

std::string CopyEventName(const ProfileEvent& copy) {
  const std::string device = absl::AsciiStrToUpper(copy.place.type().name());
  const bool h2d = copy.copy_kind == CopyKind::kHostToDevice;
  return absl::StrCat(copy.sync ? "GpuMemcpySync:" : "GpuMemcpyAsync:", h2d ? "CPU" : device, "->",
                      h2d ? device : "CPU");
}

double ProfileEvent::AlgorithmGBps() const {
  const double ms = has_device_time ? device_ms : host_ms();
  return ms > 0 ? static_cast<double>(bytes) / (ms * 1e6) : 0;
}

bool Profile::IsSteady(const ProfileEvent& event) const {
  if (event.run >= 0 && event.run < static_cast<int>(runs.size())) {
    return IsSteady(runs[event.run]);
  }
  // Ops and copies outside a known run belong to a run cut by ResetProfiler.
  return event.kind == EventKind::kUser && event.start_ns >= steady_start_ns;
}

int Profile::SteadyRuns() const {
  return static_cast<int>(
      std::count_if(runs.begin(), runs.end(), [&](const ProfileRun& r) { return IsSteady(r); }));
}

std::vector<double> Profile::SteadyStepMs() const {
  std::vector<double> ms;
  for (const ProfileRun& r : runs) {
    if (IsSteady(r)) ms.push_back(r.wall_ms());
  }
  return ms;
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(p * static_cast<double>(values.size()));
  const size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return values[std::min(index, values.size() - 1)];
}

namespace {

// The first non-copy op after the copy when it has the consumer's type (the
// placer puts copies right before the op that reads them); -1 otherwise, or
// when the plan is not the one that ran.
int ConsumerIndex(const PlacedProgram& plan, const LedgerEntry& copy) {
  const std::vector<OpDesc>& ops = plan.program.block().ops();
  if (copy.op_index < 0 || copy.op_index >= static_cast<int>(ops.size()) ||
      plan.kernels[copy.op_index] != nullptr) {
    return -1;
  }
  for (size_t i = static_cast<size_t>(copy.op_index) + 1; i < ops.size(); ++i) {
    if (plan.kernels[i] == nullptr) continue;
    return ops[i].type == copy.consumer ? static_cast<int>(i) : -1;
  }
  return -1;
}

// Sets of time: sorted, disjoint, non-empty [begin, end) intervals once
// Merge()d; the functions below take and give merged ones.
using Span = std::pair<int64_t, int64_t>;
using Spans = std::vector<Span>;

Spans Merge(Spans s) {
  std::sort(s.begin(), s.end());
  Spans out;
  for (const Span& x : s) {
    if (x.second <= x.first) continue;
    if (!out.empty() && x.first <= out.back().second) {
      out.back().second = std::max(out.back().second, x.second);
    } else {
      out.push_back(x);
    }
  }
  return out;
}

Spans Union(const Spans& a, const Spans& b) {
  Spans all = a;
  all.insert(all.end(), b.begin(), b.end());
  return Merge(std::move(all));
}

Spans Intersect(const Spans& a, const Spans& b) {
  Spans out;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    const int64_t lo = std::max(a[i].first, b[j].first);
    const int64_t hi = std::min(a[i].second, b[j].second);
    if (lo < hi) out.push_back({lo, hi});
    if (a[i].second < b[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

// `a` less `b`.
Spans Subtract(const Spans& a, const Spans& b) {
  Spans out;
  size_t j = 0;
  for (Span x : a) {
    while (j < b.size() && b[j].second <= x.first) ++j;
    for (size_t k = j; k < b.size() && b[k].first < x.second; ++k) {
      if (b[k].first > x.first) out.push_back({x.first, b[k].first});
      x.first = std::max(x.first, b[k].second);
    }
    if (x.first < x.second) out.push_back(x);
  }
  return out;
}

int64_t Length(const Spans& s) {
  int64_t n = 0;
  for (const Span& x : s) n += x.second - x.first;
  return n;
}

// The length of `x` inside `s`.
int64_t LengthIn(const Spans& s, Span x) {
  auto it = std::lower_bound(s.begin(), s.end(), x,
                             [](const Span& a, const Span& b) { return a.second <= b.first; });
  int64_t n = 0;
  for (; it != s.end() && it->first < x.second; ++it) {
    n += std::max<int64_t>(0, std::min(it->second, x.second) - std::max(it->first, x.first));
  }
  return n;
}

double Ms(int64_t ns) { return static_cast<double>(ns) * 1e-6; }

// One run's events as sets of time, clipped to the run.
struct RunSpans {
  Spans host;                  // host busy
  Spans waits;                 // some host thread waiting
  std::vector<Spans> devices;  // busy, per device place
  std::vector<const ProfileEvent*> host_ops;
};

// The device place index of `e`'s device interval; -1 when it has none.
int DeviceOf(const Profile& profile, const ProfileEvent& e, const std::vector<Place>& devices) {
  if (!e.has_device_time || e.stream < 0 || e.stream >= static_cast<int>(profile.streams.size())) {
    return -1;
  }
  const Place& place = profile.streams[e.stream].place;
  auto it = std::lower_bound(devices.begin(), devices.end(), place);
  return it != devices.end() && *it == place ? static_cast<int>(it - devices.begin()) : -1;
}

RunSpans CollectRunSpans(const Profile& profile, const ProfileRun& run,
                         const std::vector<const ProfileEvent*>& events,
                         const std::vector<Place>& devices) {
  const Spans window = {{run.start_ns, run.end_ns}};
  std::map<int, Spans> kernels, excluded;  // per thread
  RunSpans out;
  out.devices.resize(devices.size());
  Spans waits;
  for (const ProfileEvent* e : events) {
    if (e->kind == EventKind::kOp && e->place.is_host()) {
      kernels[e->thread].push_back({e->start_ns, e->end_ns});
      out.host_ops.push_back(e);
    } else if (e->kind == EventKind::kCopy || e->kind == EventKind::kWait) {
      excluded[e->thread].push_back({e->start_ns, e->end_ns});
      if (e->kind == EventKind::kWait) waits.push_back({e->start_ns, e->end_ns});
    }
    const int d = DeviceOf(profile, *e, devices);
    if (d >= 0) {
      out.devices[d].push_back(
          {e->device_start_ns, e->device_start_ns + std::llround(e->device_ms * 1e6)});
    }
  }
  for (auto& [thread, spans] : kernels) {
    out.host = Union(out.host, Subtract(Merge(spans), Merge(excluded[thread])));
  }
  out.host = Intersect(out.host, window);
  out.waits = Intersect(Merge(std::move(waits)), window);
  for (Spans& d : out.devices) d = Intersect(Merge(std::move(d)), window);
  return out;
}

StepConcurrency StepOf(const ProfileRun& run, const RunSpans& spans,
                       const std::vector<Place>& devices, const std::vector<bool>& timed) {
  StepConcurrency step;
  step.step_ms = run.wall_ms();
  step.host_busy_ms = Ms(Length(spans.host));
  step.host_wait_ms = Ms(Length(spans.waits));
  Spans any_device;
  for (size_t d = 0; d < devices.size(); ++d) {
    DeviceConcurrency c;
    c.place = devices[d];
    c.timed = timed[d];
    const int64_t overlap = Length(Intersect(spans.host, spans.devices[d]));
    c.busy_ms = Ms(Length(spans.devices[d]));
    c.overlap_ms = Ms(overlap);
    c.idle_for_host_ms = c.timed ? Ms(Length(spans.host) - overlap) : 0;
    step.devices.push_back(c);
    any_device = Union(any_device, spans.devices[d]);
  }
  step.overlap_ms = Ms(Length(Intersect(spans.host, any_device)));
  return step;
}

// Per device: (op_index, op type) -> idle ns during that host op.
using Blame = std::vector<std::map<std::pair<int, std::string>, int64_t>>;

// Adds, per device and host op, the device's idle time (before its last
// work of the run) during the op's span.
void AddBlame(const ProfileRun& run, const RunSpans& spans, Blame* blame) {
  for (size_t d = 0; d < spans.devices.size(); ++d) {
    const Spans& busy = spans.devices[d];
    if (busy.empty()) continue;
    const Spans idle = Subtract({{run.start_ns, busy.back().second}}, busy);
    for (const ProfileEvent* e : spans.host_ops) {
      const int64_t ns = LengthIn(idle, {e->start_ns, e->end_ns});
      if (ns > 0) (*blame)[d][{e->op_index, e->name}] += ns;
    }
  }
}

StepConcurrency MedianOf(const std::vector<StepConcurrency>& steps,
                         const std::vector<Place>& devices, const std::vector<bool>& timed) {
  auto median = [&](auto field) {
    std::vector<double> v;
    for (const StepConcurrency& s : steps) v.push_back(field(s));
    return Percentile(std::move(v), 0.5);
  };
  StepConcurrency m;
  m.step_ms = median([](const StepConcurrency& s) { return s.step_ms; });
  m.host_busy_ms = median([](const StepConcurrency& s) { return s.host_busy_ms; });
  m.host_wait_ms = median([](const StepConcurrency& s) { return s.host_wait_ms; });
  m.overlap_ms = median([](const StepConcurrency& s) { return s.overlap_ms; });
  for (size_t d = 0; d < devices.size(); ++d) {
    DeviceConcurrency c;
    c.place = devices[d];
    c.timed = timed[d];
    c.busy_ms = median([d](const StepConcurrency& s) { return s.devices[d].busy_ms; });
    c.overlap_ms = median([d](const StepConcurrency& s) { return s.devices[d].overlap_ms; });
    c.idle_for_host_ms =
        median([d](const StepConcurrency& s) { return s.devices[d].idle_for_host_ms; });
    m.devices.push_back(c);
  }
  return m;
}

std::string Duration(double ms) {
  return ms < 1 ? absl::StrFormat("%.4g us", ms * 1e3) : absl::StrFormat("%.3f ms", ms);
}

}  // namespace

const DeviceConcurrency* StepConcurrency::Find(const Place& place) const {
  for (const DeviceConcurrency& d : devices) {
    if (d.place == place) return &d;
  }
  return nullptr;
}

std::string DescribeHostBlocker(const HostBlocker& b) {
  return absl::StrCat(b.device.ToString(), " idled ", Duration(b.idle_ms_per_step),
                      " per step waiting for host op ", b.op, " (#", b.op_index, ")");
}

Concurrency ComputeConcurrency(const Profile& profile) {
  std::set<Place> device_set;
  for (const StreamInfo& s : profile.streams) {
    if (!s.place.is_host()) device_set.insert(s.place);
  }
  const std::vector<Place> devices(device_set.begin(), device_set.end());
  std::vector<bool> timed(devices.size(), false);
  std::vector<std::vector<const ProfileEvent*>> by_run(profile.runs.size());
  for (const ProfileEvent& e : profile.events) {
    if (e.run >= 0 && e.run < static_cast<int>(by_run.size())) by_run[e.run].push_back(&e);
    const int d = DeviceOf(profile, e, devices);
    if (d >= 0) timed[d] = true;
  }
  Concurrency c;
  std::vector<StepConcurrency> steady;
  Blame blame(devices.size());
  for (size_t r = 0; r < profile.runs.size(); ++r) {
    const ProfileRun& run = profile.runs[r];
    if (run.end_ns < 0) continue;
    const RunSpans spans = CollectRunSpans(profile, run, by_run[r], devices);
    StepConcurrency step = StepOf(run, spans, devices, timed);
    step.run = static_cast<int>(r);
    step.steady = profile.IsSteady(run);
    if (step.steady) {
      steady.push_back(step);
      AddBlame(run, spans, &blame);
    }
    c.steps.push_back(std::move(step));
  }
  c.steady_steps = static_cast<int>(steady.size());
  c.median = MedianOf(steady, devices, timed);
  for (size_t d = 0; d < devices.size(); ++d) {
    auto most = std::max_element(blame[d].begin(), blame[d].end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    if (most == blame[d].end()) continue;
    c.blockers.push_back({devices[d], most->first.second, most->first.first,
                          Ms(most->second) / static_cast<double>(steady.size())});
  }
  return c;
}

std::vector<LedgerEntry> CopyLedger(const Profile& profile) {
  std::map<int, LedgerEntry> by_index;
  for (const ProfileEvent& e : profile.events) {
    if (e.kind != EventKind::kCopy || !profile.IsSteady(e)) continue;
    LedgerEntry& entry = by_index[e.op_index];
    entry.op_index = e.op_index;
    entry.var = e.var;
    const bool h2d = e.copy_kind == CopyKind::kHostToDevice;
    entry.from = h2d ? CPUPlace() : e.place;
    entry.to = h2d ? e.place : CPUPlace();
    entry.bytes = e.bytes;
    entry.sync = e.sync;
    entry.consumer = e.consumer;
    entry.calls++;
    entry.total_ms += e.host_ms();
    if (e.has_device_time) {
      entry.has_device_time = true;
      entry.device_ms += e.device_ms;
    }
  }
  const int steady_runs = profile.SteadyRuns();
  std::vector<LedgerEntry> ledger;
  for (auto& [index, entry] : by_index) {
    entry.per_step = steady_runs > 0 ? static_cast<double>(entry.calls) / steady_runs : 0;
    if (profile.plan.has_value()) entry.consumer_index = ConsumerIndex(*profile.plan, entry);
    ledger.push_back(entry);
  }
  return ledger;
}

namespace {

// The host ops of `plan` that are the optimizer's (HostOptimizer), by
// placed index: true for optimize-role ops, false for casts.
std::map<int, bool> HostOptimizerOps(const PlacedProgram& plan) {
  const Block& block = plan.program.block();
  auto persistable = [&](const std::string& var) {
    const VarDesc* d = block.FindVar(var);
    return d != nullptr && d->persistable;
  };
  std::set<std::string> parameter_grads;
  for (const VarDesc& v : block.vars()) {
    if (v.persistable) parameter_grads.insert(GradVarName(v.name));
  }
  std::map<int, bool> ops;
  for (int i = 0; i < static_cast<int>(block.ops().size()); ++i) {
    const OpDesc& op = block.ops()[i];
    if (plan.is_copy(i) || !plan.places[i].is_host()) continue;
    if (op.role == OpRole::kOptimize) {
      ops[i] = true;
    } else if (op.type == "cast" &&
               (persistable(op.Input("X")) || parameter_grads.count(op.Output("Out")))) {
      ops[i] = false;
    }
  }
  return ops;
}

// From the first steady run's start to the last one's end, in ns; (0, 0)
// without steady runs.
std::pair<int64_t, int64_t> SteadyWindow(const Profile& profile) {
  int64_t begin = std::numeric_limits<int64_t>::max(), end = 0;
  for (const ProfileRun& r : profile.runs) {
    if (!profile.IsSteady(r)) continue;
    begin = std::min(begin, r.start_ns);
    end = std::max(end, r.end_ns);
  }
  return end > begin ? std::make_pair(begin, end) : std::make_pair(int64_t{0}, int64_t{0});
}

// The steady window's spans of host optimizer work, device compute (all,
// and backward ops only) and device copies of `device`.
struct OptimizerSpans {
  Spans host, updates, compute, backward, copies;
  int64_t window = 0;
};

OptimizerSpans CollectOptimizerSpans(const Profile& profile, const Place& device,
                                     const std::map<int, bool>& optimizer_ops) {
  OptimizerSpans s;
  const auto [begin, end] = SteadyWindow(profile);
  const Block& block = profile.plan->program.block();
  for (const ProfileEvent& e : profile.events) {
    if (e.run < 0 || !profile.IsSteady(e)) continue;
    const Span device_span = {e.device_start_ns,
                              e.device_start_ns + std::llround(e.device_ms * 1e6)};
    if (e.kind == EventKind::kOp && e.place.is_host()) {
      auto it = optimizer_ops.find(e.op_index);
      if (it == optimizer_ops.end()) continue;
      s.host.push_back({e.start_ns, e.end_ns});
      if (it->second) s.updates.push_back({e.start_ns, e.end_ns});
    } else if (e.kind == EventKind::kOp && e.place == device && e.has_device_time) {
      s.compute.push_back(device_span);
      if (e.op_index >= 0 && e.op_index < static_cast<int>(block.ops().size()) &&
          block.ops()[e.op_index].role == OpRole::kBackward) {
        s.backward.push_back(device_span);
      }
    } else if (e.kind == EventKind::kCopy && e.place == device) {
      s.copies.push_back(e.has_device_time ? device_span : Span{e.start_ns, e.end_ns});
    }
  }
  const Spans window = {{begin, end}};
  for (Spans* x : {&s.host, &s.updates, &s.compute, &s.backward, &s.copies}) {
    *x = Intersect(Merge(std::move(*x)), window);
  }
  s.window = end - begin;
  return s;
}

// Bytes per step each way, and the weights up / gradients down among them.
void AddOptimizerBytes(const Profile& profile, const std::map<int, bool>& optimizer_ops,
                       HostOptimizer* h) {
  const Block& block = profile.plan->program.block();
  std::set<std::string> host_casts;  // outputs of the optimizer's host casts
  for (const auto& [index, update] : optimizer_ops) {
    if (!update) host_casts.insert(block.ops()[index].Output("Out"));
  }
  for (const LedgerEntry& c : CopyLedger(profile)) {
    if (!(c.from == h->device || c.to == h->device)) continue;
    const int64_t bytes = std::llround(c.bytes * c.per_step);
    const VarDesc* d = block.FindVar(c.var);
    if (c.to == h->device) {
      h->bytes_up += bytes;
      if ((d != nullptr && d->persistable) || host_casts.count(c.var)) h->weights_up += bytes;
    } else {
      h->bytes_down += bytes;
      if (optimizer_ops.count(c.consumer_index)) h->gradients_down += bytes;
    }
  }
}

}  // namespace

std::optional<HostOptimizer> ComputeHostOptimizer(const Profile& profile) {
  if (!profile.plan.has_value()) return std::nullopt;
  const Concurrency c =
      profile.concurrency.steps.empty() ? ComputeConcurrency(profile) : profile.concurrency;
  const DeviceConcurrency* device = nullptr;
  for (const DeviceConcurrency& d : c.median.devices) {
    if (d.timed && device == nullptr) device = &d;
  }
  const std::map<int, bool> ops = HostOptimizerOps(*profile.plan);
  if (device == nullptr || c.steady_steps == 0 || ops.empty()) return std::nullopt;
  HostOptimizer h;
  h.device = device->place;
  for (const auto& [index, update] : ops) ++(update ? h.optimize_ops : h.cast_ops);
  h.steady_steps = c.steady_steps;
  const OptimizerSpans s = CollectOptimizerSpans(profile, h.device, ops);
  const double steps = c.steady_steps;
  auto per_step = [&](const Spans& x) { return Ms(Length(x)) / steps; };
  h.step_ms = Ms(s.window) / steps;
  h.busy_ms = per_step(s.host);
  h.optimize_ms = per_step(s.updates);
  h.hidden_ms = per_step(Intersect(s.host, s.compute));
  h.hidden_backward_ms = per_step(Intersect(s.host, s.backward));
  h.device_wait_ms = per_step(Subtract(s.host, s.compute));
  h.transfer_wait_ms = per_step(Subtract(Subtract(s.copies, s.compute), s.host));
  AddOptimizerBytes(profile, ops, &h);
  return h;
}

std::optional<Recomputation> ComputeRecomputation(const Profile& profile) {
  if (!profile.plan.has_value()) return std::nullopt;
  const std::vector<OpDesc>& ops = profile.plan->program.block().ops();
  auto recomputed = [&](int i) {
    return i >= 0 && i < static_cast<int>(ops.size()) &&
           ops[i].origin.kind == OpOrigin::Kind::kRecomputeOf;
  };
  Recomputation r;
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) r.ops += recomputed(i);
  r.steady_steps = profile.SteadyRuns();
  if (r.ops == 0 || r.steady_steps == 0) return std::nullopt;
  for (const ProfileEvent& e : profile.events) {
    if (e.kind != EventKind::kOp || e.run < 0 || !profile.IsSteady(e) || !recomputed(e.op_index)) {
      continue;
    }
    r.ms += e.has_device_time ? e.device_ms : e.self_ms();
  }
  r.ms /= r.steady_steps;
  const auto [begin, end] = SteadyWindow(profile);
  r.step_ms = Ms(end - begin) / r.steady_steps;
  return r;
}

}  // namespace profiler
}  // namespace tandem
