// tandem._C: places, scopes, the executor with its plan cache, run
// statistics, placement tables, checkpoints and backend flags.
#include <signal.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/autoplace/auto_placement.h"
#include "framework/autoplace/optimizer_offload.h"
#include "framework/device/device_registry.h"
#include "framework/persistence/checkpoint.h"
#include "framework/runtime/executor.h"
#include "gflags/gflags.h"
#include "profiler/profiler.h"
#include "pybind11/stl.h"
#include "python/bindings.h"
#include "python/program_handle.h"
#include "python/tensor_bridge.h"
#include "pythread.h"

namespace py = pybind11;

namespace tandem {
namespace python {
namespace {

// A scope's variable by name, for tandem.Scope.find_var / var.
struct ScopeVariable {
  std::shared_ptr<Scope> scope;
  std::string name;

  Variable* get() const {
    Variable* v = scope->Find(name);
    if (v == nullptr) {
      throw StatusError(
          absl::NotFoundError(absl::StrCat("variable '", name, "' is not in the scope")));
    }
    return v;
  }
};

// Sets `v` to a copy of `value` on `place` (default: where `v` lives now,
// or the host), of `v`'s dtype when it has a value.
void SetVariable(Variable* v, py::handle value, std::optional<Place> place,
                 const std::string& what) {
  std::optional<DataType> dtype;  // an initialised variable keeps its dtype
  if (v->is_tensor() && v->tensor().initialized()) dtype = v->tensor().dtype();
  Tensor t = ValueOrThrow(TensorFromPython(value, dtype, what, /*allow_device=*/true));
  Place target = CPUPlace();
  if (place.has_value()) {
    target = *place;
  } else if (v->is_tensor() && v->tensor().initialized()) {
    target = v->tensor().place();
  }
  v->set(ValueOrThrow(CopyTo(t, target)));
}

// The Executor's keyword options: the executor's own, the automatic
// placement's (auto_placement=True makes MakeAutoPlacer the planner) and
// the optimizer offload's (offload="optimizer" or "auto" makes
// MakeOffloadPlanner the planner; memory_budget_mb is shared).
struct ExecutorSettings {
  ExecutorOptions executor;
  bool auto_placement = false;
  AutoPlacerOptions auto_placer;
  std::string offload = "none";
  std::optional<double> offload_fraction;
};

using OptionSetter = std::function<void(ExecutorSettings*, py::handle)>;

// memory_budget_mb (a number of MiB; 0: what the device can hold) in bytes.
int64_t BudgetBytes(py::handle v) {
  if (py::isinstance<py::bool_>(v) ||
      (!py::isinstance<py::int_>(v) && !py::isinstance<py::float_>(v))) {
    throw py::cast_error();
  }
  const double mb = v.cast<double>();
  constexpr double kMaxMb = double(int64_t{1} << 30);  // 1 PiB
  if (!(mb >= 0) || mb > kMaxMb) {
    throw StatusError(absl::InvalidArgumentError(
        absl::StrCat("Executor: memory_budget_mb ", py::repr(v).cast<std::string>(), " is ",
                     mb > kMaxMb ? "more than 1 PiB, not a device's memory" : "not a size",
                     "; give 0 (what the device can hold) or a number of MiB")));
  }
  return static_cast<int64_t>(mb * (1 << 20));
}

// The keyword options, one line each (ExecutorSettings).
const std::map<std::string, OptionSetter>& OptionSetters() {
  static const auto* setters = new std::map<std::string, OptionSetter>{
      {"strict_placement",
       [](ExecutorSettings* o, py::handle v) { o->executor.strict_placement = v.cast<bool>(); }},
      {"transfer_policy",
       [](ExecutorSettings* o, py::handle v) {
         o->executor.transfer_policy = ValueOrThrow(ParseTransferPolicy(v.cast<std::string>()));
       }},
      {"capture_graphs",
       [](ExecutorSettings* o, py::handle v) { o->executor.capture_graphs = v.cast<bool>(); }},
      {"in_order",
       [](ExecutorSettings* o, py::handle v) { o->executor.in_order = v.cast<bool>(); }},
      {"check_numerics",
       [](ExecutorSettings* o, py::handle v) { o->executor.check_numerics = v.cast<bool>(); }},
      {"host_workers",
       [](ExecutorSettings* o, py::handle v) { o->executor.host_workers = v.cast<int>(); }},
      {"fuse_patterns",
       [](ExecutorSettings* o, py::handle v) { o->executor.fuse_patterns = v.cast<bool>(); }},
      {"schedule_trial", [](ExecutorSettings* o,
                            py::handle v) { o->executor.schedule_trial.enabled = v.cast<bool>(); }},
      {"feed_shapes",
       [](ExecutorSettings* o, py::handle v) {
         for (auto [name, dims] : v.cast<py::dict>()) {
           o->executor.feed_shapes[name.cast<std::string>()] =
               Shape(dims.cast<std::vector<int64_t>>());
         }
       }},
      {"auto_placement",
       [](ExecutorSettings* o, py::handle v) { o->auto_placement = v.cast<bool>(); }},
      {"memory_budget_mb",
       [](ExecutorSettings* o, py::handle v) { o->auto_placer.budget_bytes = BudgetBytes(v); }},
      {"auto_moves_persistables",
       [](ExecutorSettings* o, py::handle v) {
         o->auto_placer.move_persistables = v.cast<bool>();
       }},
      {"cost_cache_dir",
       [](ExecutorSettings* o, py::handle v) {
         o->auto_placer.cost_cache_dir = v.cast<std::string>();
       }},
      {"measure_costs",
       [](ExecutorSettings* o, py::handle v) { o->auto_placer.measure_costs = v.cast<bool>(); }},
      {"offload", [](ExecutorSettings* o, py::handle v) { o->offload = v.cast<std::string>(); }},
      {"offload_fraction",
       [](ExecutorSettings* o, py::handle v) {
         if (py::isinstance<py::bool_>(v)) throw py::cast_error();
         o->offload_fraction = v.cast<double>();
       }},
  };
  return *setters;
}

// offload= and offload_fraction=: the optimizer offload's planner
// (framework/autoplace/optimizer_offload.h).
void SetOffloadPlanner(const ExecutorSettings& o, ExecutorOptions* executor) {
  auto refuse = [](const std::string& why) {
    throw StatusError(absl::InvalidArgumentError(absl::StrCat("Executor: ", why)));
  };
  if (o.offload != "none" && o.offload != "optimizer" && o.offload != "auto") {
    refuse(absl::StrCat("offload must be 'none', 'optimizer' or 'auto', got '", o.offload, "'"));
  }
  if (o.offload_fraction.has_value() && o.offload != "optimizer") {
    refuse("offload_fraction needs offload='optimizer'");
  }
  if (o.offload != "none" && o.auto_placement) {
    refuse("auto_placement places ops, offload places parameters: give one of them");
  }
  if (o.offload == "optimizer") {
    executor->placement_planner = MakeOffloadPlanner({.fraction = o.offload_fraction.value_or(1)});
  } else if (o.offload == "auto") {
    executor->placement_planner = MakeOffloadPlanner({.budget_bytes = o.auto_placer.budget_bytes});
  }
}

ExecutorOptions OptionsFromKwargs(const py::dict& kwargs) {
  ExecutorSettings options;
  for (auto [key, value] : kwargs) {
    const std::string name = key.cast<std::string>();
    auto it = OptionSetters().find(name);
    if (it == OptionSetters().end()) {
      std::vector<std::string> known;
      for (const auto& [k, unused] : OptionSetters()) known.push_back(k);
      throw StatusError(absl::InvalidArgumentError(absl::StrCat(
          "Executor: unknown option '", name, "'; the options are ", absl::StrJoin(known, ", "))));
    }
    try {
      it->second(&options, value);
    } catch (const py::cast_error&) {
      throw StatusError(absl::InvalidArgumentError(absl::StrCat(
          "Executor: option '", name, "' cannot be ", py::repr(value).cast<std::string>())));
    }
  }
  if (options.auto_placement) {
    options.executor.placement_planner = MakeAutoPlacer(options.auto_placer);
  }
  SetOffloadPlanner(options, &options.executor);
  return options.executor;
}

// While it lives on Python's main thread, SIGINT (Ctrl-C) cancels the runs
// of `exe` in flight (Executor::Cancel: they stop before their next step,
// the scope as it was) and is passed on to Python's own handler, which
// raises KeyboardInterrupt at the next PyErr_CheckSignals. Elsewhere, or
// when SIGINT is ignored or left to the system, it does nothing.
class CancelOnInterrupt {
 public:
  explicit CancelOnInterrupt(Executor* exe) {
    static const unsigned long main_thread =  // NOLINT(runtime/int): Python's type
        py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
    if (PyThread_get_thread_ident() != main_thread) return;
    struct sigaction ours = {};
    ours.sa_handler = &CancelOnInterrupt::Handle;
    sigemptyset(&ours.sa_mask);
    if (sigaction(SIGINT, nullptr, &previous_) != 0 || !ForwardsToPython(previous_)) return;
    target_.store(exe);
    installed_ = sigaction(SIGINT, &ours, nullptr) == 0;
  }
  ~CancelOnInterrupt() {
    if (!installed_) return;
    sigaction(SIGINT, &previous_, nullptr);
    target_.store(nullptr);
  }
  CancelOnInterrupt(const CancelOnInterrupt&) = delete;
  CancelOnInterrupt& operator=(const CancelOnInterrupt&) = delete;

 private:
  static bool ForwardsToPython(const struct sigaction& action) {
    return (action.sa_flags & SA_SIGINFO) == 0 && action.sa_handler != SIG_DFL &&
           action.sa_handler != SIG_IGN;
  }
  static void Handle(int signal_number) {  // async-signal-safe: an atomic load, an increment
    if (Executor* exe = target_.load(); exe != nullptr) exe->Cancel();
    previous_.sa_handler(signal_number);
  }

  static inline std::atomic<Executor*> target_{nullptr};
  static inline struct sigaction previous_ = {};
  bool installed_ = false;
};

// A prepared plan, shared between an executor's cache and Python.
struct PlanHandle {
  std::shared_ptr<Plan> plan;
  std::vector<std::string> feeds, fetches;
};

class PyExecutor {
 public:
  PyExecutor(const Place& place, const py::dict& options)
      : exe_(place, OptionsFromKwargs(options)) {
    ThrowIfError(DeviceRegistry::Global().GetDevice(place).status());
  }

  const Place& place() const { return exe_.default_place(); }

  // Prepares (or finds in the cache) the plan of `program` for these feeds and fetches.
  PlanHandle Prepare(const ProgramHandle& program, const std::vector<std::string>& feeds,
                     const std::vector<std::string>& fetches, const Scope& scope, bool use_cache) {
    const Key key{program.serial, program.version, feeds, fetches, &scope};
    if (use_cache) {
      auto it = cache_.find(key);
      if (it != cache_.end()) return {it->second, feeds, fetches};
    }
    absl::StatusOr<std::unique_ptr<Plan>> plan;
    {
      py::gil_scoped_release release;
      plan = exe_.Prepare(program.program, scope, feeds, fetches);
    }
    std::shared_ptr<Plan> shared = ValueOrThrow(std::move(plan));
    if (use_cache) {
      // Plans of older versions of this program, scope or fetch list are stale.
      for (auto it = cache_.begin(); it != cache_.end();) {
        it = std::get<0>(it->first) == program.serial && std::get<1>(it->first) != program.version
                 ? cache_.erase(it)
                 : std::next(it);
      }
      cache_[key] = shared;
    }
    return {shared, feeds, fetches};
  }

  // One run; the fetched values as numpy arrays (views where nothing else
  // holds their buffers) or tandem.Tensor objects.
  py::list Run(PlanHandle& plan, FeedMap feeds, std::shared_ptr<Scope> scope, bool return_numpy) {
    if (profiler::IsProfilerEnabled() && attached_ != plan.plan.get()) {
      ThrowIfError(profiler::AttachPlan(*plan.plan));
      attached_ = plan.plan.get();
    }
    absl::StatusOr<std::vector<Tensor>> out;
    RunStats stats;
    {
      CancelOnInterrupt interrupt(&exe_);
      py::gil_scoped_release release;
      out = exe_.Run(plan.plan.get(), scope.get(), feeds, &stats);
    }
    feeds.clear();  // releases wrapped arrays (under the GIL)
    // Ctrl-C during the run (which it cancelled): KeyboardInterrupt.
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    std::vector<Tensor> fetched = ValueOrThrow(std::move(out));
    last_stats_ = std::move(stats);
    last_plan_ = plan;
    py::list results;
    for (Tensor& t : fetched) {
      const bool sole_owner = t.buffer() != nullptr && t.buffer().use_count() == 1;
      if (return_numpy) {
        results.append(TensorToNumpy(t, sole_owner));
      } else {
        results.append(PyTensor{sole_owner ? t : ValueOrThrow(CopyTo(t, CPUPlace()))});
      }
    }
    return results;
  }

  const RunStats& last_stats() const { return last_stats_; }
  const std::optional<PlanHandle>& last_plan() const { return last_plan_; }
  void ClearCache() { cache_.clear(); }
  size_t cache_size() const { return cache_.size(); }

 private:
  using Key = std::tuple<int64_t, int64_t, std::vector<std::string>, std::vector<std::string>,
                         const Scope*>;
  Executor exe_;
  std::map<Key, std::shared_ptr<Plan>> cache_;
  RunStats last_stats_;
  std::optional<PlanHandle> last_plan_;
  const Plan* attached_ = nullptr;
};

// The feed dict as host tensors of the program's declared dtypes.
FeedMap ConvertFeeds(const ProgramHandle& program, const py::dict& feed) {
  FeedMap feeds;
  for (auto [key, value] : feed) {
    const std::string name = py::str(key).cast<std::string>();
    const VarDesc* v = program.program.block().FindVar(name);
    if (v == nullptr) {
      throw StatusError(absl::InvalidArgumentError(
          absl::StrCat("feed '", name, "' is not a variable of the program")));
    }
    feeds[name] =
        ValueOrThrow(TensorFromPython(value, v->dtype, absl::StrCat("feed '", name, "'")));
  }
  return feeds;
}

std::vector<std::string> FeedNames(const FeedMap& feeds) {
  std::vector<std::string> names;
  for (const auto& [name, t] : feeds) names.push_back(name);
  return names;
}

void RegisterStats(py::module_& m) {
  py::class_<CopyRecord>(m, "CopyRecord", "One copy a run made (RunStats.ledger).")
      .def_readonly("var", &CopyRecord::var)
      .def_readonly("from_place", &CopyRecord::from)
      .def_readonly("to_place", &CopyRecord::to)
      .def_readonly("bytes", &CopyRecord::bytes)
      .def_readonly("sync", &CopyRecord::sync)
      .def_readonly("consumer", &CopyRecord::consumer)
      .def_readonly("reason", &CopyRecord::reason)
      .def("__repr__", [](const CopyRecord& c) {
        return absl::StrCat("CopyRecord(var='", c.var, "', ", c.from.ToString(), " -> ",
                            c.to.ToString(), ", ", c.bytes, " bytes, ", c.sync ? "sync" : "async",
                            ", consumer='", c.consumer, "')");
      });
  py::class_<RunStats>(m, "RunStats", "What one run did: kernels, copies, bytes.")
      .def_readonly("ops", &RunStats::ops)
      .def_readonly("copies_h2d", &RunStats::copies_h2d)
      .def_readonly("copies_d2h", &RunStats::copies_d2h)
      .def_readonly("bytes_h2d", &RunStats::bytes_h2d)
      .def_readonly("bytes_d2h", &RunStats::bytes_d2h)
      .def_readonly("sync_copies", &RunStats::sync_copies)
      .def_readonly("async_copies", &RunStats::async_copies)
      .def_readonly("fetch_copies", &RunStats::fetch_copies)
      .def_readonly("fetch_bytes", &RunStats::fetch_bytes)
      .def_readonly("ledger", &RunStats::ledger)
      .def_readonly("captured", &RunStats::captured)
      .def_readonly("replayed", &RunStats::replayed)
      .def_readonly("graph_launches", &RunStats::graph_launches)
      .def_readonly("ungraphed_device_steps", &RunStats::ungraphed_device_steps)
      .def_readonly("reports", &RunStats::reports,
                    "values kernels reported, by name: with dynamic loss scaling "
                    "'loss_scaling' (the scale after the step) and 'step_skipped' (1.0 or 0.0)")
      .def_property_readonly("copies", &RunStats::copies)
      .def("__repr__", [](const RunStats& s) { return "RunStats(" + s.DebugString() + ")"; });
  py::class_<PlacementEntry>(m, "PlacementEntry", "One row of a placement table.")
      .def_readonly("op_index", &PlacementEntry::op_index)
      .def_readonly("op_type", &PlacementEntry::op_type)
      .def_readonly("place", &PlacementEntry::place)
      .def_property_readonly(
          "cause", [](const PlacementEntry& e) { return std::string(PlacementCauseName(e.cause)); },
          "the rule that placed it: cast-at-source, guard, inherit, loss-grad, grad-sum, "
          "grad-norm, param, state, host-state, auto, default, fallback; copy, host-arg, "
          "write-back for copies")
      .def_readonly("detail", &PlacementEntry::detail,
                    "why, in words and numbers (for cause auto: the estimated times on each "
                    "place, and the value that did not fit the budget when memory decided)")
      .def_readonly("copy", &PlacementEntry::copy, "for a copy op, its CopyStep; else None")
      .def("__repr__", [](const PlacementEntry& e) {
        return absl::StrCat("PlacementEntry(#", e.op_index, " ", e.op_type, " on ",
                            e.place.ToString(), ", ", PlacementCauseName(e.cause), ")");
      });
  py::class_<CopyStep>(m, "CopyStep", "What a copy op the placer inserted moves, and for whom.")
      .def_readonly("var", &CopyStep::var, "the variable copied")
      .def_readonly("source", &CopyStep::source, "the variable read")
      .def_readonly("output", &CopyStep::output, "the variable written")
      .def_readonly("from_place", &CopyStep::from)
      .def_readonly("to_place", &CopyStep::to)
      .def_readonly("consumer", &CopyStep::consumer,
                    "placed index of the op whose read needs it; -1 for a write-back")
      .def_readonly("consumer_type", &CopyStep::consumer_type)
      .def_readonly("consumer_arg", &CopyStep::consumer_arg)
      .def("__repr__", [](const CopyStep& c) {
        return absl::StrCat("CopyStep(", c.var, " ", c.from.ToString(), "->", c.to.ToString(),
                            " for ", c.consumer_type, ")");
      });
  py::class_<PlaceMemory>(m, "PlaceMemory", "The estimated peak memory of one place.")
      .def_readonly("place", &PlaceMemory::place)
      .def_readonly("peak_bytes", &PlaceMemory::peak_bytes, "one run")
      .def_readonly("pipelined_peak_bytes", &PlaceMemory::pipelined_peak_bytes,
                    "two runs in flight (a pipelined loop); peak_bytes in order")
      .def_readonly("parameters", &PlaceMemory::parameters)
      .def_readonly("optimizer_state", &PlaceMemory::optimizer_state)
      .def_readonly("constants", &PlaceMemory::constants)
      .def_readonly("feeds", &PlaceMemory::feeds)
      .def_readonly("staging", &PlaceMemory::staging)
      .def_readonly("intermediates", &PlaceMemory::intermediates)
      .def_readonly("scratch", &PlaceMemory::scratch)
      .def_readonly("peak_at", &PlaceMemory::peak_at)
      .def_property_readonly(
          "largest",
          [](const PlaceMemory& p) {
            std::vector<std::pair<std::string, int64_t>> out;
            for (const LiveValue& v : p.largest) out.emplace_back(v.var, v.bytes);
            return out;
          },
          "[(variable, bytes)] live at the peak, largest first")
      .def("__repr__", [](const PlaceMemory& p) {
        return absl::StrCat("PlaceMemory(", p.place.ToString(), " peak ", p.peak_bytes,
                            " bytes at ", p.peak_at, ")");
      });
  py::class_<PlanHandle>(m, "Plan", "A prepared program (Executor.prepare).")
      .def_readonly("feed_names", &PlanHandle::feeds)
      .def_readonly("fetch_names", &PlanHandle::fetches)
      .def_property_readonly("placement_table",
                             [](const PlanHandle& p) { return p.plan->placed().table; })
      .def("placement_table_string", [](const PlanHandle& p) { return p.plan->PlacementTable(); })
      .def_property_readonly("auto_summary",
                             [](const PlanHandle& p) { return p.plan->placed().auto_summary; })
      .def_property_readonly("estimated_step_us",
                             [](const PlanHandle& p) { return p.plan->placed().auto_step_micros; })
      .def_property_readonly("memory_estimate",
                             [](const PlanHandle& p) { return p.plan->MemoryEstimate().places; })
      .def_property_readonly("num_copies",
                             [](const PlanHandle& p) { return p.plan->placed().num_copies; })
      .def("placed_program_string",
           [](const PlanHandle& p) { return p.plan->placed().program.DebugString(); })
      .def_property_readonly("graph_fallback_reason",
                             [](const PlanHandle& p) { return p.plan->graph_fallback_reason(); })
      .def_property_readonly("graph_summary",
                             [](const PlanHandle& p) { return p.plan->graph_summary(); });
}

void RegisterScope(py::module_& m) {
  py::class_<ScopeVariable>(m, "ScopeVariable", "A variable of a scope.")
      .def_readonly("name", &ScopeVariable::name)
      .def("get_tensor",
           [](const ScopeVariable& sv) {
             Variable* v = sv.get();
             if (v->is_selected_rows()) {
               throw StatusError(absl::InvalidArgumentError(absl::StrCat(
                   "variable '", sv.name, "' holds SelectedRows (sparse rows), not a tensor")));
             }
             // An empty variable gives an uninitialised tensor; its set() fills the variable.
             return PyTensor{v->is_tensor() ? v->tensor() : Tensor(), v, py::cast(sv.scope)};
           })
      .def("is_initialized",
           [](const ScopeVariable& sv) {
             const Tensor* t = sv.get()->data_tensor();
             return t != nullptr && t->initialized();
           })
      .def(
          "set",
          [](const ScopeVariable& sv, py::handle value, std::optional<Place> place) {
            SetVariable(sv.get(), value, place, absl::StrCat("variable '", sv.name, "'"));
          },
          py::arg("value"), py::arg("place") = py::none());
  py::class_<Scope, std::shared_ptr<Scope>>(m, "Scope",
                                            "Variables that live across runs (parameters, ...).")
      .def(py::init<>())
      .def("names", &Scope::Names)
      .def("find_var",
           [](std::shared_ptr<Scope> s, const std::string& name) -> py::object {
             if (s->Find(name) == nullptr) return py::none();
             return py::cast(ScopeVariable{s, name});
           })
      .def("var",
           [](std::shared_ptr<Scope> s, const std::string& name) {
             s->Var(name);
             return ScopeVariable{s, name};
           })
      .def("erase", &Scope::Erase);
}

void RegisterExecutorClass(py::module_& m) {
  py::class_<PyExecutor>(m, "Executor", "The C++ executor behind tandem.Executor.")
      .def(py::init<const Place&, const py::dict&>(), py::arg("place"), py::arg("options"))
      .def_property_readonly("place", &PyExecutor::place)
      .def(
          "prepare",
          [](PyExecutor& e, const ProgramHandle& program, const std::vector<std::string>& feeds,
             const std::vector<std::string>& fetches, std::shared_ptr<Scope> scope,
             bool use_cache) { return e.Prepare(program, feeds, fetches, *scope, use_cache); },
          py::arg("program"), py::arg("feed_names"), py::arg("fetch_names"), py::arg("scope"),
          py::arg("use_cache"))
      .def(
          "run",
          [](PyExecutor& e, const ProgramHandle& program, const py::dict& feed,
             const std::vector<std::string>& fetches, std::shared_ptr<Scope> scope,
             bool return_numpy, bool use_cache) {
            FeedMap feeds = ConvertFeeds(program, feed);
            PlanHandle plan = e.Prepare(program, FeedNames(feeds), fetches, *scope, use_cache);
            return e.Run(plan, std::move(feeds), scope, return_numpy);
          },
          py::arg("program"), py::arg("feed"), py::arg("fetch_names"), py::arg("scope"),
          py::arg("return_numpy"), py::arg("use_cache"))
      .def(
          "run_plan",
          [](PyExecutor& e, PlanHandle& plan, const ProgramHandle& program, const py::dict& feed,
             std::shared_ptr<Scope> scope, bool return_numpy) {
            return e.Run(plan, ConvertFeeds(program, feed), scope, return_numpy);
          },
          py::arg("plan"), py::arg("program"), py::arg("feed"), py::arg("scope"),
          py::arg("return_numpy"))
      .def_property_readonly("last_run_stats", &PyExecutor::last_stats)
      .def_property_readonly("last_plan", &PyExecutor::last_plan)
      .def("clear_cache", &PyExecutor::ClearCache)
      .def_property_readonly("cache_size", &PyExecutor::cache_size);
  std::vector<std::string> names;
  for (const auto& [k, unused] : OptionSetters()) names.push_back(k);
  m.attr("EXECUTOR_OPTIONS") = names;
}

void RegisterCheckpoints(py::module_& m) {
  m.def(
      "save_checkpoint",
      [](const std::string& path, std::shared_ptr<Scope> scope,
         const std::vector<std::string>& names) {
        py::gil_scoped_release release;
        ThrowIfError(SaveCheckpoint(*scope, names, path));
      },
      py::arg("path"), py::arg("scope"), py::arg("names"));
  m.def(
      "persistable_vars", [](const ProgramHandle& p) { return PersistableVars(p.program); },
      py::arg("program"));
  m.def(
      "load_checkpoint",
      [](const std::string& path, std::shared_ptr<Scope> scope,
         const std::map<std::string, Place>& places) {
        py::gil_scoped_release release;
        ThrowIfError(LoadCheckpoint(path, scope.get(), places));
      },
      py::arg("path"), py::arg("scope"), py::arg("places"));
}

void RegisterFlags(py::module_& m) {
  m.def(
      "set_flag",
      [](const std::string& name, const std::string& value) {
        gflags::CommandLineFlagInfo info;
        if (!gflags::GetCommandLineFlagInfo(name.c_str(), &info)) {
          throw StatusError(absl::NotFoundError(absl::StrCat("no flag '", name, "'")));
        }
        if (gflags::SetCommandLineOption(name.c_str(), value.c_str()).empty()) {
          throw StatusError(absl::InvalidArgumentError(
              absl::StrCat("flag '", name, "' (", info.type, ") cannot be '", value, "'")));
        }
      },
      py::arg("name"), py::arg("value"));
  m.def(
      "get_flag",
      [](const std::string& name) {
        std::string value;
        if (!gflags::GetCommandLineOption(name.c_str(), &value)) {
          throw StatusError(absl::NotFoundError(absl::StrCat("no flag '", name, "'")));
        }
        return value;
      },
      py::arg("name"));
}

}  // namespace

void RegisterPlaces(py::module_& m) {
  py::class_<Place>(m, "Place", "Where a tensor lives or an op runs: cpu, gpu:N, sim:N.")
      .def(py::init([](const std::string& text) { return ValueOrThrow(ParsePlace(text)); }),
           py::arg("place"))
      .def_property_readonly("type", [](const Place& p) { return p.type().name(); })
      .def_property_readonly("index", &Place::index)
      .def("is_host", &Place::is_host)
      .def("__str__", &Place::ToString)
      .def("__repr__", &Place::LogName)
      .def("__eq__", [](const Place& a, const Place& b) { return a == b; })
      .def("__hash__", [](const Place& p) { return std::hash<std::string>()(p.ToString()); });
  m.def(
      "device_count",
      [](const std::string& type) {
        return DeviceRegistry::Global().DeviceCount(ValueOrThrow(DeviceType::FromName(type)));
      },
      py::arg("type"));
  m.def("available_places", [] { return DeviceRegistry::Global().AvailablePlaces(); });
}

void RegisterExecutor(py::module_& m) {
  RegisterStats(m);
  RegisterScope(m);
  RegisterExecutorClass(m);
  RegisterCheckpoints(m);
  RegisterFlags(m);
}

}  // namespace python
}  // namespace tandem
