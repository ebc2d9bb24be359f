// The profiling report, in PaddlePaddle's layout plus what it
// lacks (bytes, per-copy ledger, placement table, memory, step times).
//
//   ASSIGN_OR_RETURN(profiler::SortKey key, profiler::ParseSortKey("total"));
//   std::cout << profiler::FormatReport(profiler::GetProfile(), key);
//
// Sections, in order (time unit ms; see examples/README.md for a reading
// guide):
//   header      "Place: All", "Time unit: ms", the sort line, the steady
//               state (runs profiled, warm-up runs left out, median and p90
//               step time)
//   overhead    "Total time" (wall time of the steady-state runs),
//               "Computation time" (host time inside kernels) and
//               "Framework overhead" (the rest: copies, scheduling, syncs)
//   GpuMemCpy Summary  copies: calls, host time, share of Total time
//   Concurrency        per steady-state step (each figure's median over the
//               steady steps), with its share of the median step time:
//               "Host busy" (host kernels, union over host threads),
//               "Host waiting for devices" (wait spans), per device
//               "Busy <place>" (device time, union over its streams),
//               "Overlap host and <place>", "Idle <place> waiting for
//               host" (host busy, device idle); "Overlap host and any
//               device"; "Most waited for: ..." per device (the host op it
//               idled longest during, DescribeHostBlocker). A device with
//               no device time measured prints "-" (Profile::concurrency)
//   Optimizer on the Host  only for plans with optimizer work on the host
//               (ComputeHostOptimizer): per step, the host optimizer work,
//               how much of it the device work hid, the device idle waiting
//               for it and for copies, bytes each way (weights up, gradients
//               down)
//   Event Summary      one row per op type; the copies an op needed are
//               nested under it ("  GpuMemcpySync:CPU->GPU"); an op's row
//               excludes them. Total = host wall time; CPU Time and GPU Time
//               are host and device busy time with their shares of the two;
//               "-" where no device time was measured; Ratio. = Total /
//               Total time; Bytes per call for copies
//   Copy Ledger        one row per placed copy
//   Placement          the attached plan's placement table
//   Memory Summary     per place: in use, peak, reserved, limit
//
// Pure functions; thread-safe.
#ifndef TANDEM_PROFILER_REPORT_H_
#define TANDEM_PROFILER_REPORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "profiler/profile.h"

namespace tandem {
namespace profiler {

// Event Summary order: kDefault is program order (first end time); the
// others sort descending.
enum class SortKey { kDefault, kCalls, kTotal, kMax, kMin, kAve };

// "default", "calls", "total", "max", "min", "ave" (case-insensitive);
// InvalidArgument listing them otherwise.
absl::StatusOr<SortKey> ParseSortKey(absl::string_view name);

std::string FormatReport(const Profile& profile, SortKey sort_key);

}  // namespace profiler
}  // namespace tandem

#endif  // TANDEM_PROFILER_REPORT_H_
