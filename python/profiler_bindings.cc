// tandem._C: the profiler session (start, stop with the report, reset),
// user spans, and the collected Profile as Python values.
#include <memory>
#include <string>
#include <vector>

#include "profiler/advisor.h"
#include "profiler/chrome_trace.h"
#include "profiler/profiler.h"
#include "pybind11/stl.h"
#include "python/bindings.h"
#include "python/status.h"

namespace py = pybind11;

namespace tandem {
namespace python {
namespace {

// A finished session: its profile and its report in the order asked for.
struct PyProfile {
  profiler::Profile profile;
  std::string report;
};

py::dict LedgerDict(const profiler::LedgerEntry& e) {
  py::dict d;
  d["op_index"] = e.op_index;
  d["var"] = e.var;
  d["from_place"] = e.from;
  d["to_place"] = e.to;
  d["bytes"] = e.bytes;
  d["sync"] = e.sync;
  d["consumer"] = e.consumer;
  d["consumer_index"] = e.consumer_index;
  d["calls"] = e.calls;
  d["per_step"] = e.per_step;
  d["total_ms"] = e.total_ms;
  d["device_ms"] = e.has_device_time ? py::object(py::float_(e.device_ms)) : py::object(py::none());
  return d;
}

py::dict ConcurrencyDict(const profiler::StepConcurrency& s) {
  py::dict d;
  d["step_ms"] = s.step_ms;
  d["host_busy_ms"] = s.host_busy_ms;
  d["host_wait_ms"] = s.host_wait_ms;
  d["overlap_ms"] = s.overlap_ms;
  py::dict devices;
  for (const profiler::DeviceConcurrency& dev : s.devices) {
    py::dict x;
    x["timed"] = dev.timed;
    x["busy_ms"] = dev.busy_ms;
    x["overlap_ms"] = dev.overlap_ms;
    x["idle_for_host_ms"] = dev.idle_for_host_ms;
    devices[py::str(dev.place.ToString())] = x;
  }
  d["devices"] = devices;
  return d;
}

// The steady-state events per name: calls and host time (what the report's
// Event Summary counts, copies included as their own names).
py::dict EventTotals(const profiler::Profile& p) {
  py::dict totals;
  for (const profiler::ProfileEvent& e : p.events) {
    if (!p.IsSteady(e)) continue;
    py::str name(e.name);
    if (!totals.contains(name)) {
      py::dict entry;
      entry["calls"] = 0;
      entry["host_ms"] = 0.0;
      totals[name] = entry;
    }
    py::dict entry = totals[name];
    entry["calls"] = entry["calls"].cast<int>() + 1;
    entry["host_ms"] = entry["host_ms"].cast<double>() + e.host_ms();
  }
  return totals;
}

class PySpan {
 public:
  explicit PySpan(std::string name) : name_(std::move(name)) {}
  void Enter() { span_ = std::make_unique<profiler::RecordEvent>(name_); }
  void Exit() { span_.reset(); }

 private:
  std::string name_;
  std::unique_ptr<profiler::RecordEvent> span_;
};

}  // namespace

void RegisterProfiler(py::module_& m) {
  py::module_ p = m.def_submodule("profiler", "the profiler (see tandem.profiler)");
  p.def(
      "start",
      [](const std::string& state, int warmup_runs) {
        profiler::ProfilerOptions options;
        options.state = ValueOrThrow(profiler::ParseProfilerState(state));
        options.warmup_runs = warmup_runs;
        ThrowIfError(profiler::StartProfiler(options));
      },
      py::arg("state"), py::arg("warmup_runs"));
  p.def(
      "stop",
      [](const std::string& sort_key, const std::string& trace_path) {
        const profiler::SortKey key = ValueOrThrow(profiler::ParseSortKey(sort_key));
        PyProfile out;
        out.profile = ValueOrThrow(profiler::CollectProfile());
        out.report = profiler::FormatReport(out.profile, key);
        if (!trace_path.empty()) {
          py::gil_scoped_release release;
          ThrowIfError(profiler::WriteChromeTrace(out.profile, trace_path));
        }
        return out;
      },
      "Stops the session; its profile and report (the same text C++'s StopProfiler prints).",
      py::arg("sort_key"), py::arg("trace_path"));
  p.def(
      "check_sort_key",
      [](const std::string& key) { ThrowIfError(profiler::ParseSortKey(key).status()); },
      "Raises ValueError for a sort key the report does not know.", py::arg("sort_key"));
  p.def("reset", &profiler::ResetProfiler);
  p.def("is_enabled", &profiler::IsProfilerEnabled);
  py::class_<PySpan>(p, "RecordEvent", "A user span: `with tandem.profiler.record_event(name):`")
      .def(py::init<std::string>(), py::arg("name"))
      .def("__enter__", [](PySpan& s) { s.Enter(); })
      .def("__exit__", [](PySpan& s, py::args) { s.Exit(); });
  py::class_<PyProfile>(p, "Profile", "What a profiling session collected.")
      .def_readonly("report", &PyProfile::report)
      .def(
          "format_report",
          [](const PyProfile& p, const std::string& key) {
            return profiler::FormatReport(p.profile, ValueOrThrow(profiler::ParseSortKey(key)));
          },
          py::arg("sort_key"))
      .def_property_readonly("steady_runs",
                             [](const PyProfile& p) { return p.profile.SteadyRuns(); })
      .def_property_readonly("warmup_runs",
                             [](const PyProfile& p) { return p.profile.warmup_runs; })
      .def("steady_step_ms", [](const PyProfile& p) { return p.profile.SteadyStepMs(); })
      .def("copy_ledger",
           [](const PyProfile& p) {
             py::list rows;
             for (const profiler::LedgerEntry& e : profiler::CopyLedger(p.profile)) {
               rows.append(LedgerDict(e));
             }
             return rows;
           })
      .def("concurrency",
           [](const PyProfile& p) { return ConcurrencyDict(p.profile.concurrency.median); })
      .def("event_totals", [](const PyProfile& p) { return EventTotals(p.profile); })
      .def("advice",
           [](const PyProfile& p) -> std::string {
             if (!p.profile.plan.has_value()) return "";
             return profiler::FormatAdvice(profiler::Advise(p.profile, *p.profile.plan));
           })
      .def("write_chrome_trace", [](const PyProfile& p, const std::string& path) {
        ThrowIfError(profiler::WriteChromeTrace(p.profile, path));
      });
}

}  // namespace python
}  // namespace tandem
