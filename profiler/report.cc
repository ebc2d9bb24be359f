#include "profiler/report.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "framework/types/data_type.h"

namespace tandem {
namespace profiler {
namespace {

// One Event Summary row: an op type, a user span, or (as a child) the
// copies of one kind an op type needed.
struct Row {
  std::string name;     // what the report prints
  std::string op_type;  // an op row's op type (its copies' consumer)
  int calls = 0;
  double total = 0;  // host wall time, ms
  double gpu = 0;    // device time, ms
  bool has_gpu = false;
  double min = std::numeric_limits<double>::max();
  double max = 0;
  int64_t bytes = 0;
  bool is_copy = false;
  bool is_user = false;
  int64_t first_end_ns = std::numeric_limits<int64_t>::max();
  std::vector<Row> children;

  void Add(const ProfileEvent& e) {
    const double ms = e.self_ms();
    ++calls;
    total += ms;
    min = std::min(min, ms);
    max = std::max(max, ms);
    if (e.has_device_time) {
      has_gpu = true;
      gpu += e.device_ms;
    }
    bytes += e.bytes;
    first_end_ns = std::min(first_end_ns, e.end_ns);
  }
};

// A section title centred between dashes, as the reference prints it
// (titles up to 27 characters).
std::string Title(absl::string_view title) {
  return absl::StrCat("-------------------------", std::string((27 - title.size()) / 2, ' '), title,
                      std::string((28 - title.size()) / 2, ' '), "-------------------------\n\n");
}

std::string SortedBy(SortKey key) {
  switch (key) {
    case SortKey::kCalls:
      return "Sorted by number of calls in descending order in the same thread";
    case SortKey::kTotal:
      return "Sorted by total time in descending order in the same thread";
    case SortKey::kMax:
      return "Sorted by maximum time in descending order in the same thread";
    case SortKey::kMin:
      return "Sorted by minimum time in descending order in the same thread";
    case SortKey::kAve:
      return "Sorted by average time in descending order in the same thread";
    case SortKey::kDefault:
      break;
  }
  return "Sorted by event first end time in ascending order in the same thread";
}

void SortRows(std::vector<Row>* rows, SortKey key) {
  auto value = [key](const Row& r) -> double {
    switch (key) {
      case SortKey::kCalls:
        return r.calls;
      case SortKey::kTotal:
        return r.total;
      case SortKey::kMax:
        return r.max;
      case SortKey::kMin:
        return r.min;
      case SortKey::kAve:
        return r.calls > 0 ? r.total / r.calls : 0;
      case SortKey::kDefault:
        break;
    }
    return -static_cast<double>(r.first_end_ns);
  };
  std::stable_sort(rows->begin(), rows->end(),
                   [&](const Row& a, const Row& b) { return value(a) > value(b); });
  for (Row& r : *rows) SortRows(&r.children, key);
}

// Left-aligned columns as wide as their widest cell plus two spaces.
std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size() + 2);
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size(), ' ');
    }
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

std::string Ms(double ms) { return absl::StrFormat("%.6f", ms); }
std::string G(double v) { return absl::StrFormat("%.6g", v); }
std::string Percent(double part, double whole) {
  return absl::StrCat(G(whole > 0 ? 100 * part / whole : 0), "%");
}

void AppendOverhead(const Profile& profile, double total_time, std::string* out) {
  double compute = 0;
  for (const ProfileEvent& e : profile.events) {
    if (e.kind == EventKind::kOp && profile.IsSteady(e)) compute += e.self_ms();
  }
  const double overhead = std::max(0.0, total_time - compute);
  absl::StrAppend(out, "Total time: ", G(total_time), "\n");
  absl::StrAppendFormat(out, "  %-22s Total: %-12s Ratio: %s\n", "Computation time", G(compute),
                        Percent(compute, total_time));
  absl::StrAppendFormat(out, "  %-22s Total: %-12s Ratio: %s\n\n", "Framework overhead",
                        G(overhead), Percent(overhead, total_time));
}

void AppendMemcpySummary(const Profile& profile, double total_time, std::string* out) {
  struct Sum {
    int calls = 0;
    double ms = 0;
    int64_t bytes = 0;
  } all, sync, async;
  for (const ProfileEvent& e : profile.events) {
    if (e.kind != EventKind::kCopy || !profile.IsSteady(e)) continue;
    for (Sum* s : {&all, e.sync ? &sync : &async}) {
      s->calls++;
      s->ms += e.host_ms();
      s->bytes += e.bytes;
    }
  }
  absl::StrAppend(out, Title("GpuMemCpy Summary"));
  auto line = [&](const char* indent, const char* name, const Sum& s) {
    absl::StrAppendFormat(out, "%s%-*s Calls: %-10d Total: %-12s Ratio: %-12s Bytes: %d\n", indent,
                          24 - static_cast<int>(std::string(indent).size()), name, s.calls, G(s.ms),
                          Percent(s.ms, total_time), s.bytes);
  };
  line("", "GpuMemcpy", all);
  line("  ", "GpuMemcpyAsync", async);
  line("  ", "GpuMemcpySync", sync);
  absl::StrAppend(out, "\n");
}

// One row per collective op type and place (only when the profile has
// collectives): calls, time (device time where measured), bytes, and the
// bandwidths of all its calls together.
void AppendCollectives(const Profile& profile, std::string* out) {
  struct Sum {
    int calls = 0;
    double ms = 0;
    int64_t bytes = 0;
    double bus_factor = 1;
  };
  std::map<std::pair<std::string, std::string>, Sum> sums;
  for (const ProfileEvent& e : profile.events) {
    if (e.collective == CollectiveKind::kNone || !profile.IsSteady(e)) continue;
    Sum& s = sums[{e.name, e.place.ToString()}];
    s.calls++;
    s.ms += e.has_device_time ? e.device_ms : e.host_ms();
    s.bytes += e.bytes;
    s.bus_factor = CollectiveBusFactor(e.collective, e.ranks);
  }
  if (sums.empty()) return;
  absl::StrAppend(out, Title("Collectives"));
  for (const auto& [key, s] : sums) {
    const double algbw = s.ms > 0 ? static_cast<double>(s.bytes) / (s.ms * 1e6) : 0;
    absl::StrAppendFormat(out,
                          "%-24s Place: %-8s Calls: %-8d Total: %-12s Bytes: %-14d "
                          "AlgBw: %s GB/s  BusBw: %s GB/s\n",
                          key.first, key.second, s.calls, G(s.ms), s.bytes, G(algbw),
                          G(algbw * s.bus_factor));
  }
  absl::StrAppend(out, "\n");
}

// "  Host busy   Total: 0.045   Ratio: 45%": a figure and its share of the step.
void ConcurrencyLine(const std::string& label, double ms, double step_ms, std::string* out) {
  absl::StrAppendFormat(out, "  %-34s Total: %-12s Ratio: %s\n", label, G(ms),
                        Percent(ms, step_ms));
}

void AppendConcurrency(const Profile& profile, std::string* out) {
  absl::StrAppend(out, Title("Concurrency"));
  // A profile made by hand may not have its figures yet.
  const Concurrency c =
      profile.concurrency.steps.empty() ? ComputeConcurrency(profile) : profile.concurrency;
  if (c.steady_steps == 0) {
    absl::StrAppend(out, "No steady-state runs.\n\n");
    return;
  }
  const StepConcurrency& m = c.median;
  absl::StrAppend(out, "Median per steady-state step over ", c.steady_steps,
                  c.steady_steps == 1 ? " step" : " steps",
                  " (each figure its own median); step time: ", G(m.step_ms), "\n");
  ConcurrencyLine("Host busy", m.host_busy_ms, m.step_ms, out);
  ConcurrencyLine("Host waiting for devices", m.host_wait_ms, m.step_ms, out);
  bool timed = false;
  for (const DeviceConcurrency& d : m.devices) {
    const std::string place = d.place.ToString();
    if (!d.timed) {
      absl::StrAppendFormat(out, "  %-34s -  (no device time measured)\n", "Busy " + place);
      continue;
    }
    timed = true;
    ConcurrencyLine("Busy " + place, d.busy_ms, m.step_ms, out);
    ConcurrencyLine("Overlap host and " + place, d.overlap_ms, m.step_ms, out);
    ConcurrencyLine("Idle " + place + " waiting for host", d.idle_for_host_ms, m.step_ms, out);
  }
  if (timed) ConcurrencyLine("Overlap host and any device", m.overlap_ms, m.step_ms, out);
  for (const HostBlocker& b : c.blockers) {
    absl::StrAppend(out, "  Most waited for: ", DescribeHostBlocker(b), "\n");
  }
  absl::StrAppend(out,
                  "Host busy: host kernels on all host threads (their copies and waits "
                  "excluded); a device busy: its device time on all its streams.\n\n");
}

std::string MegaBytes(int64_t bytes) { return absl::StrFormat("%.3f MB", bytes * 1e-6); }

// Only for plans that run optimizer work on the host (ComputeHostOptimizer).
void AppendHostOptimizer(const Profile& profile, std::string* out) {
  const std::optional<HostOptimizer> h = ComputeHostOptimizer(profile);
  if (!h.has_value()) return;
  const std::string device = h->device.ToString();
  absl::StrAppend(out, Title("Optimizer on the Host"));
  absl::StrAppend(out, "Per steady-state step, mean over ", h->steady_steps,
                  h->steady_steps == 1 ? " step" : " steps", " (step time ", G(h->step_ms),
                  "): ", h->optimize_ops, " optimize-role ops (updates, clip norms) and ",
                  h->cast_ops, " casts of parameters and their gradients on the host\n");
  ConcurrencyLine("Host optimizer work", h->busy_ms, h->step_ms, out);
  ConcurrencyLine("  of it optimize-role ops", h->optimize_ms, h->step_ms, out);
  absl::StrAppendFormat(out, "  %-34s Total: %-12s Share: %s\n", "Hidden behind " + device,
                        G(h->hidden_ms), Percent(h->hidden_ms, h->busy_ms));
  absl::StrAppendFormat(out, "  %-34s Total: %-12s Share: %s\n", "Hidden behind its backward",
                        G(h->hidden_backward_ms), Percent(h->hidden_backward_ms, h->busy_ms));
  ConcurrencyLine("Idle " + device + " waiting for it", h->device_wait_ms, h->step_ms, out);
  ConcurrencyLine("Idle " + device + " waiting for copies", h->transfer_wait_ms, h->step_ms, out);
  absl::StrAppendFormat(out, "  %-34s %s (weights %s)\n", "Bytes up cpu->" + device,
                        MegaBytes(h->bytes_up), MegaBytes(h->weights_up));
  absl::StrAppendFormat(out, "  %-34s %s (gradients %s)\n", "Bytes down " + device + "->cpu",
                        MegaBytes(h->bytes_down), MegaBytes(h->gradients_down));
  absl::StrAppend(out,
                  "Shares of hidden time are of the host optimizer work; idle: the device "
                  "computing nothing.\n\n");
}

// Only for plans with recomputed ops (ComputeRecomputation).
void AppendRecomputation(const Profile& profile, std::string* out) {
  const std::optional<Recomputation> r = ComputeRecomputation(profile);
  if (!r.has_value()) return;
  absl::StrAppend(out, Title("Recomputation"));
  absl::StrAppend(out, "Per steady-state step, mean over ", r->steady_steps,
                  r->steady_steps == 1 ? " step" : " steps", " (step time ", G(r->step_ms),
                  "): ", r->ops,
                  " forward ops run again in the backward (framework/backward/recompute.h)\n");
  ConcurrencyLine("Their time", r->ms, r->step_ms, out);
  absl::StrAppend(out, "Time: device time where measured, else host time.\n\n");
}

// Graph capture (ExecutorOptions::capture_graphs): graph launches and the
// device steps run outside graphs, per steady-state step.
void AppendGraphs(const Profile& profile, std::string* out) {
  int steady = 0, captured = 0;
  int64_t launches = 0, ungraphed = 0;
  for (const ProfileRun& run : profile.runs) {
    if (!profile.IsSteady(run)) continue;
    ++steady;
    captured += run.stats.captured ? 1 : 0;
    launches += run.stats.graph_launches;
    ungraphed += run.stats.ungraphed_device_steps;
  }
  if (launches == 0 && ungraphed == 0) return;
  absl::StrAppend(out, Title("Graph capture"));
  absl::StrAppend(out, "Per steady-state step, mean over ", steady,
                  steady == 1 ? " step" : " steps", ": ", G(static_cast<double>(launches) / steady),
                  " graph launches, ", G(static_cast<double>(ungraphed) / steady),
                  " device steps outside graphs; steps that captured: ", captured, "\n\n");
}

std::vector<Row> BuildRows(const Profile& profile) {
  std::map<std::pair<bool, std::string>, Row> top;           // (user span?, name)
  std::map<std::string, std::map<std::string, Row>> copies;  // consumer -> copy name
  for (const ProfileEvent& e : profile.events) {
    if (e.kind == EventKind::kWait || !profile.IsSteady(e)) continue;
    if (e.kind == EventKind::kCopy) {
      Row& r = copies[e.consumer][CopyEventName(e)];
      r.is_copy = true;
      r.Add(e);
      continue;
    }
    // A kernel that computed in another dtype than float32 (mixed
    // precision) gets a row of its own: "fc [bfloat16]".
    const std::string label = e.dtype.has_value() && *e.dtype != DataType::kFloat32
                                  ? absl::StrCat(e.name, " [", DataTypeName(*e.dtype), "]")
                                  : e.name;
    Row& r = top[{e.kind == EventKind::kUser, label}];
    r.name = label;
    r.op_type = e.name;
    r.is_user = e.kind == EventKind::kUser;
    r.Add(e);
  }
  std::vector<Row> rows;
  for (auto& [key, row] : top) rows.push_back(std::move(row));
  for (auto& [consumer, by_name] : copies) {
    int parent = -1;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!rows[i].is_copy && !rows[i].is_user && rows[i].op_type == consumer)
        parent = static_cast<int>(i);
    }
    for (auto& [name, row] : by_name) {
      if (parent >= 0) {
        row.name = name;
        rows[parent].children.push_back(std::move(row));
      } else {  // no op of that type ran (e.g. "write-back"): a top-level row
        row.name = absl::StrCat(consumer.empty() ? "?" : consumer, "/", name);
        rows.push_back(std::move(row));
      }
    }
  }
  return rows;
}

void AppendEventSummary(const Profile& profile, SortKey key, double total_time, std::string* out) {
  std::vector<Row> rows = BuildRows(profile);
  SortRows(&rows, key);
  const bool device_columns = profile.state != ProfilerState::kCPU;
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header = {"Event", "Calls", "Total"};
  if (device_columns) {
    header.push_back("CPU Time (Ratio)");
    header.push_back("GPU Time (Ratio)");
  }
  for (const char* h : {"Min.", "Max.", "Ave.", "Ratio.", "Bytes"}) header.push_back(h);
  cells.push_back(header);
  std::function<void(const Row&, int)> add = [&](const Row& r, int depth) {
    std::vector<std::string> c = {std::string(2 * depth, ' ') + r.name, absl::StrCat(r.calls),
                                  Ms(r.total)};
    if (device_columns) {
      const double busy = r.total + r.gpu;
      c.push_back(absl::StrFormat("%.6f (%.6f)", r.total, busy > 0 ? r.total / busy : 1.0));
      c.push_back(r.has_gpu ? absl::StrFormat("%.6f (%.6f)", r.gpu, busy > 0 ? r.gpu / busy : 0.0)
                            : "-");
    }
    c.push_back(Ms(r.min));
    c.push_back(Ms(r.max));
    c.push_back(Ms(r.calls > 0 ? r.total / r.calls : 0));
    c.push_back(absl::StrFormat("%.6f", total_time > 0 ? r.total / total_time : 0.0));
    c.push_back(r.is_copy ? absl::StrCat(r.bytes) : "-");
    cells.push_back(std::move(c));
    for (const Row& child : r.children) add(child, depth + 1);
  };
  for (const Row& r : rows) add(r, 0);
  absl::StrAppend(out, Title("Event Summary"), Table(cells),
                  "Copies are listed under the op that read them; an op's row excludes them. "
                  "GPU Time \"-\": none measured.\n\n");
}

void AppendLedger(const Profile& profile, std::string* out) {
  absl::StrAppend(out, Title("Copy Ledger"));
  const std::vector<LedgerEntry> ledger = CopyLedger(profile);
  if (ledger.empty()) {
    absl::StrAppend(out, "No copies in the steady-state runs.\n");
  } else {
    std::vector<std::vector<std::string>> cells = {{"#", "Variable", "From", "To", "Bytes", "Mode",
                                                    "Consumer", "Per step", "Total", "Ave.",
                                                    "GPU Time"}};
    for (const LedgerEntry& c : ledger) {
      cells.push_back({absl::StrCat(c.op_index), c.var, c.from.ToString(), c.to.ToString(),
                       absl::StrCat(c.bytes), c.sync ? "sync" : "async",
                       c.consumer_index >= 0
                           ? absl::StrCat(c.consumer, " (#", c.consumer_index, ")")
                           : c.consumer,
                       G(c.per_step), Ms(c.total_ms), Ms(c.calls > 0 ? c.total_ms / c.calls : 0),
                       c.has_device_time ? Ms(c.device_ms) : "-"});
    }
    absl::StrAppend(out, Table(cells));
  }
  absl::StrAppend(out, "\n");
}

void AppendPlacement(const Profile& profile, std::string* out) {
  absl::StrAppend(out, Title("Placement"));
  absl::StrAppend(out,
                  profile.plan.has_value() ? profile.plan->TableString()
                                           : "No plan attached (profiler::AttachPlan).\n",
                  "\n");
}

void AppendMemory(const Profile& profile, std::string* out) {
  absl::StrAppend(out, Title("Memory Summary"));
  std::vector<std::vector<std::string>> cells = {
      {"Place", "In use (B)", "Peak (B)", "Reserved (B)", "Limit (B)", "Allocs", "Device"}};
  for (const PlaceMemory& m : profile.memory) {
    cells.push_back({m.place.ToString(), absl::StrCat(m.stats.bytes_in_use),
                     absl::StrCat(m.stats.peak_bytes_in_use), absl::StrCat(m.stats.bytes_reserved),
                     m.stats.bytes_limit > 0 ? absl::StrCat(m.stats.bytes_limit) : "none",
                     absl::StrCat(m.stats.num_allocs), m.device});
  }
  absl::StrAppend(out, Table(cells),
                  "Peak and Allocs count from process start; In use when profiling stopped.\n");
}

}  // namespace

absl::StatusOr<SortKey> ParseSortKey(absl::string_view name) {
  static const std::pair<const char*, SortKey> kKeys[] = {
      {"default", SortKey::kDefault}, {"calls", SortKey::kCalls}, {"total", SortKey::kTotal},
      {"max", SortKey::kMax},         {"min", SortKey::kMin},     {"ave", SortKey::kAve}};
  const std::string lower = absl::AsciiStrToLower(name);
  for (const auto& [text, key] : kKeys) {
    if (lower == text) return key;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown sort key '", name,
                   "'; accepted: \"default\", \"calls\", \"total\", \"max\", \"min\", \"ave\""));
}

std::string FormatReport(const Profile& profile, SortKey sort_key) {
  const std::vector<double> steps = profile.SteadyStepMs();
  double total_time = 0;
  for (double ms : steps) total_time += ms;
  if (steps.empty()) {  // spans only: their wall extent
    int64_t first = std::numeric_limits<int64_t>::max(), last = 0;
    for (const ProfileEvent& e : profile.events) {
      if (!profile.IsSteady(e)) continue;
      first = std::min(first, e.start_ns);
      last = std::max(last, e.end_ns);
    }
    if (last > first) total_time = static_cast<double>(last - first) * 1e-6;
  }
  const int warmup = static_cast<int>(std::count_if(profile.runs.begin(), profile.runs.end(),
                                                    [](const ProfileRun& r) { return r.warmup; }));
  std::set<std::string> places;
  for (const StreamInfo& s : profile.streams) places.insert(s.place.ToString());

  std::string out =
      "------------------------->     Profiling Report     <-------------------------\n\n";
  absl::StrAppend(&out, "Note! This Report merge all thread info into one.\n",
                  "Place: ", ProfilerStateName(profile.state), "\n", "Time unit: ms\n",
                  SortedBy(sort_key), "\n\n");
  absl::StrAppend(&out, "Devices: ", places.empty() ? "none" : absl::StrJoin(places, ", "), "\n");
  absl::StrAppend(&out, "Steady state: ", steps.size(), steps.size() == 1 ? " run" : " runs",
                  " (warm-up runs excluded: ", warmup, ")\n");
  if (steps.empty() && !profile.runs.empty()) {
    absl::StrAppend(&out,
                    "Note! Every profiled run was a warm-up run; profile more runs or "
                    "start the profiler with fewer warm-up runs.\n");
  }
  absl::StrAppendFormat(&out, "%-24s Median: %-12s P90: %-12s Min: %-12s Max: %s\n\n", "Step time",
                        G(Percentile(steps, 0.5)), G(Percentile(steps, 0.9)),
                        G(steps.empty() ? 0 : *std::min_element(steps.begin(), steps.end())),
                        G(steps.empty() ? 0 : *std::max_element(steps.begin(), steps.end())));
  AppendOverhead(profile, total_time, &out);
  AppendMemcpySummary(profile, total_time, &out);
  AppendCollectives(profile, &out);
  AppendConcurrency(profile, &out);
  AppendHostOptimizer(profile, &out);
  AppendRecomputation(profile, &out);
  AppendGraphs(profile, &out);
  AppendEventSummary(profile, sort_key, total_time, &out);
  AppendLedger(profile, &out);
  AppendPlacement(profile, &out);
  AppendMemory(profile, &out);
  return out;
}

}  // namespace profiler
}  // namespace tandem
