// Chrome trace export: a Profile as trace event JSON, for Perfetto
// (ui.perfetto.dev) or chrome://tracing.
//
//   RETURN_IF_ERROR(profiler::WriteChromeTrace(profiler::GetProfile(), "/tmp/trace.json"));
//
// Tracks: process "host" with one thread per host thread (runs, ops, copies,
// waits and RecordEvent spans on the thread that ran them), named by role
// (Profile::threads): "dispatcher" (the thread that called Executor::Run),
// "host worker 0", ...; and one process per device with one thread per
// stream ("gpu:0 compute", "gpu:0 copy") holding the device time of ops and
// copies where it was measured. A copy a host worker made inside an op
// sits inside that op on the worker's track. Copies are their own events,
// named as in the report ("GpuMemcpySync:CPU->GPU"), with args bytes,
// variable, consumer, from and to; waits are "wait: <step>" (category
// "wait"; "wait: end of run" for a run waiting for its devices). Times are
// microseconds since the profiler started; warm-up runs are included and
// marked.
//
// Pure functions; thread-safe.
#ifndef TANDEM_PROFILER_CHROME_TRACE_H_
#define TANDEM_PROFILER_CHROME_TRACE_H_

#include <string>

#include "absl/status/status.h"
#include "framework/base/json.h"
#include "profiler/profile.h"

namespace tandem {
namespace profiler {

// {"displayTimeUnit": "ms", "traceEvents": [...]}.
Json ChromeTraceJson(const Profile& profile);

// Writes ChromeTraceJson(profile) to `path`. An error (its code from errno)
// names the path and the reason when the file cannot be written.
absl::Status WriteChromeTrace(const Profile& profile, const std::string& path);

}  // namespace profiler
}  // namespace tandem

#endif  // TANDEM_PROFILER_CHROME_TRACE_H_
