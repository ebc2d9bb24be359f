#include "profiler/profile.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

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

}  // namespace

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

}  // namespace profiler
}  // namespace tandem
