#include "profiler/chrome_trace.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "absl/strings/str_cat.h"
#include "framework/types/data_type.h"

namespace tandem {
namespace profiler {
namespace {

constexpr int kHostPid = 1;

double Us(int64_t ns) { return static_cast<double>(ns) * 1e-3; }

Json Metadata(const char* what, int pid, int tid, const std::string& name) {
  Json m = Json::Object().Set("name", what).Set("ph", "M").Set("pid", pid);
  if (tid >= 0) m.Set("tid", tid);
  return m.Set("args", Json::Object().Set("name", name));
}

Json Complete(const std::string& name, const char* category, double ts_us, double dur_us, int pid,
              int tid, Json args) {
  return Json::Object()
      .Set("name", name)
      .Set("cat", category)
      .Set("ph", "X")
      .Set("ts", ts_us)
      .Set("dur", dur_us)
      .Set("pid", pid)
      .Set("tid", tid)
      .Set("args", std::move(args));
}

const char* Category(EventKind kind) {
  switch (kind) {
    case EventKind::kOp:
      return "op";
    case EventKind::kCopy:
      return "copy";
    case EventKind::kUser:
      return "user";
    case EventKind::kWait:
      return "wait";
  }
  return "?";
}

Json EventArgs(const Profile& profile, const ProfileEvent& e) {
  Json args = Json::Object();
  if (e.kind != EventKind::kUser) {
    args.Set("op_index", e.op_index).Set("place", e.place.ToString());
  }
  if (e.dtype.has_value()) args.Set("dtype", std::string(DataTypeName(*e.dtype)));
  if (e.worker >= 0) args.Set("worker", e.worker);
  if (e.parent_op_index >= 0) args.Set("parent_op_index", e.parent_op_index);
  if (e.kind == EventKind::kCopy) {
    const bool h2d = e.copy_kind == CopyKind::kHostToDevice;
    args.Set("bytes", e.bytes)
        .Set("variable", e.var)
        .Set("consumer", e.consumer)
        .Set("from", h2d ? "cpu" : e.place.ToString())
        .Set("to", h2d ? e.place.ToString() : "cpu")
        .Set("sync", e.sync);
  }
  if (e.collective != CollectiveKind::kNone) {
    args.Set("collective", CollectiveKindName(e.collective))
        .Set("ranks", e.ranks)
        .Set("bytes", e.bytes)
        .Set("algbw_GBps", e.AlgorithmGBps())
        .Set("busbw_GBps", e.BusGBps());
  }
  if (e.has_device_time) args.Set("device_ms", e.device_ms);
  if (e.run >= 0) args.Set("run", e.run);
  if (!profile.IsSteady(e)) args.Set("warmup", true);
  return args;
}

}  // namespace

Json ChromeTraceJson(const Profile& profile) {
  Json events = Json::Array();
  events.Push(Metadata("process_name", kHostPid, -1, "host"));
  std::map<int, std::string> threads;  // tid -> name
  for (const ProfileRun& r : profile.runs) threads[r.thread] = absl::StrCat("thread ", r.thread);
  for (const ProfileEvent& e : profile.events)
    threads[e.thread] = absl::StrCat("thread ", e.thread);
  for (const ThreadInfo& t : profile.threads) threads[t.thread] = t.name;
  for (const auto& [tid, name] : threads) {
    events.Push(Metadata("thread_name", kHostPid, tid, name));
  }

  // One process per device place, one thread per stream.
  std::map<Place, int> device_pid;
  for (size_t i = 0; i < profile.streams.size(); ++i) {
    const StreamInfo& s = profile.streams[i];
    auto [it, inserted] =
        device_pid.emplace(s.place, kHostPid + 1 + static_cast<int>(device_pid.size()));
    if (inserted) events.Push(Metadata("process_name", it->second, -1, s.place.ToString()));
    events.Push(Metadata("thread_name", it->second, static_cast<int>(i),
                         absl::StrCat(s.place.ToString(), " ", s.name)));
  }

  for (size_t i = 0; i < profile.runs.size(); ++i) {
    const ProfileRun& r = profile.runs[i];
    if (r.end_ns < 0) continue;
    events.Push(Complete(absl::StrCat("run ", i, r.warmup ? " (warm-up)" : ""), "run",
                         Us(r.start_ns), Us(r.end_ns - r.start_ns), kHostPid, r.thread,
                         Json::Object()
                             .Set("ops", r.stats.ops)
                             .Set("copies", r.stats.copies())
                             .Set("sync_copies", r.stats.sync_copies)
                             .Set("warmup", r.warmup)));
  }
  for (const ProfileEvent& e : profile.events) {
    const std::string name = e.kind == EventKind::kCopy   ? CopyEventName(e)
                             : e.kind == EventKind::kWait ? absl::StrCat("wait: ", e.name)
                                                          : e.name;
    events.Push(Complete(name, Category(e.kind), Us(e.start_ns), Us(e.end_ns - e.start_ns),
                         kHostPid, e.thread, EventArgs(profile, e)));
    if (e.has_device_time && e.stream >= 0 && e.stream < static_cast<int>(profile.streams.size())) {
      events.Push(Complete(name, Category(e.kind), Us(e.device_start_ns), e.device_ms * 1e3,
                           device_pid[profile.streams[e.stream].place], e.stream,
                           EventArgs(profile, e)));
    }
  }
  return Json::Object().Set("displayTimeUnit", "ms").Set("traceEvents", std::move(events));
}

absl::Status WriteChromeTrace(const Profile& profile, const std::string& path) {
  const std::string text = ChromeTraceJson(profile).Dump();
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    const int error = errno;
    return absl::ErrnoToStatus(error,
                               absl::StrCat("cannot write the Chrome trace to '", path, "'"));
  }
  const size_t written = std::fwrite(text.data(), 1, text.size(), f);
  const int write_error = written == text.size() ? 0 : errno;
  if (std::fclose(f) != 0 || write_error != 0) {
    return absl::ErrnoToStatus(write_error != 0 ? write_error : errno,
                               absl::StrCat("cannot write the Chrome trace to '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace profiler
}  // namespace tandem
