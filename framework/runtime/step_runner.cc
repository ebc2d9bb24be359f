#include "framework/runtime/step_runner.h"

#include <cmath>
#include <cstring>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/base/status_macros.h"

namespace tandem {
namespace {

std::string Dims(const Shape& s) { return absl::StrJoin(s.dims(), ", "); }

// "Input[data2:float[1, 3, 5, 5]({})(Place(gpu:0))]" for the reference log
// format.
std::string ArgsForLog(const SlotArgs& args, const std::vector<Variable*>& slots,
                       const std::vector<std::string>& names) {
  std::vector<std::string> parts;
  for (const auto& [arg, ids] : args) {
    std::vector<std::string> vars;
    for (int id : ids) {
      const Tensor* t = slots[id]->data_tensor();
      if (t == nullptr || !t->initialized()) {
        vars.push_back(absl::StrCat(names[id], ":uninitialized"));
      } else {
        vars.push_back(absl::StrCat(names[id], ":", DataTypeLogName(t->dtype()), "[",
                                    Dims(t->shape()), "]({})(Place(", t->place().ToString(), "))"));
      }
    }
    parts.push_back(absl::StrCat(arg, "[", absl::StrJoin(vars, ", "), "]"));
  }
  return absl::StrJoin(parts, ", ");
}

std::string KernelTypeForLog(DataType dtype, const Place& place) {
  return absl::StrCat("data_type[", DataTypeLogName(dtype), "]:data_layout[NCHW]:place[",
                      place.LogName(), "]:library_type[PLAIN]");
}

// Keeps the buffer of every tensor bound to `args`.
void Hold(const SlotArgs& args, const std::vector<Variable*>& slots,
          std::vector<std::shared_ptr<Buffer>>* held) {
  for (const auto& [arg, ids] : args) {
    for (int id : ids) {
      const Tensor* t = slots[id]->data_tensor();
      if (t != nullptr && t->initialized()) held->push_back(t->buffer());
    }
  }
}

OpEvent StepEvent(const PlanState::Step& step, const StepRunContext& run) {
  OpEvent event;
  event.op = &step.op;
  event.index = step.index;
  event.place = step.place;
  event.device = step.device;
  event.stream = step.StreamFor(run.in_order, run.frame->solo);
  event.worker = run.worker;
  return event;
}

// The dtype a kernel step computed in: its first floating input's, else
// its first floating output's (see OpEvent::dtype).
std::optional<DataType> ComputeDtype(const PlanState::Step& step,
                                     const std::vector<Variable*>& slots) {
  for (const SlotArgs* args : {&step.inputs, &step.outputs}) {
    for (const auto& [arg, ids] : *args) {
      for (int id : ids) {
        const Tensor* t = slots[id]->data_tensor();
        if (t != nullptr && t->initialized() && IsFloating(t->dtype())) return t->dtype();
      }
    }
  }
  return std::nullopt;
}

// A collective's kind, ranks (its op's nranks) and the bytes of its inputs.
void DescribeCollective(const PlanState::Step& step, const std::vector<Variable*>& slots,
                        OpEvent* event) {
  event->collective = step.def->collective();
  auto ranks = step.op.attrs.find("nranks");
  event->ranks = ranks != step.op.attrs.end() && std::holds_alternative<int64_t>(ranks->second)
                     ? static_cast<int>(std::get<int64_t>(ranks->second))
                     : 1;
  for (const auto& [arg, ids] : step.inputs) {
    for (int id : ids) {
      const Tensor* t = slots[id]->data_tensor();
      if (t != nullptr && t->initialized()) event->bytes += static_cast<int64_t>(t->NumBytes());
    }
  }
}

void CountCopy(const PlanState::Step& step, const PlacementEntry& placed, const Tensor& from,
               bool sync, RunStats* stats) {
  const bool h2d = !step.copy_to.is_host();
  const int64_t bytes = static_cast<int64_t>(from.NumBytes());
  (h2d ? stats->copies_h2d : stats->copies_d2h)++;
  (h2d ? stats->bytes_h2d : stats->bytes_d2h) += bytes;
  (sync ? stats->sync_copies : stats->async_copies)++;
  CopyRecord record{step.op.inputs.at("X")[0], from.place(), step.copy_to, bytes, sync};
  record.consumer = placed.copy->consumer_type;
  record.reason = placed.detail;
  stats->ledger.push_back(std::move(record));
}

// The host side of a host->device copy: the source itself when it is
// pinned memory of the device (kept until the run ends), else the step's
// pinned staging buffer holding a snapshot of it.
absl::StatusOr<const void*> UploadSource(PlanState::Step* step, const Tensor& from,
                                         const StepRunContext& run) {
  const size_t bytes = from.NumBytes();
  if (run.segment == nullptr && from.buffer()->allocator() == step->device->host_allocator()) {
    run.frame->keep_alive.Add(from.buffer());  // read until the run ends
    return from.raw_data();
  }
  std::shared_ptr<Buffer>& staging = run.frame->staging[step->index];
  if (staging == nullptr || staging->size() < bytes) {
    ASSIGN_OR_RETURN(staging, Buffer::Allocate(step->device->host_allocator(), bytes));
  }
  std::memcpy(staging->data(), from.raw_data(), bytes);
  return static_cast<const void*>(staging->data());
}

// The first NaN or infinity among `n` values, or -1.
template <typename T>
int64_t FirstNonFinite(const T* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(static_cast<double>(v[i]))) return i;  // 16-bit types: as a double
  }
  return -1;
}

// A device out of memory in a plan the auto placement made: the kernel's
// hint (device_guard("cpu")) is advice for a hand-placed op; an op the
// auto pass placed is moved by a smaller budget.
absl::Status AutoPlacedHint(const PlanState& plan, const PlanState::Step& step, absl::Status s) {
  static constexpr absl::string_view kKernelHint =
      "Hint: run this op under device_guard(\"cpu\") or raise the memory limit";
  if (s.code() != absl::StatusCode::kResourceExhausted || plan.placed.auto_summary.empty() ||
      plan.placed.table[step.index].cause == PlacementCause::kGuard) {
    return s;
  }
  const absl::string_view message = s.message();
  const size_t at = message.find(kKernelHint);
  if (at == absl::string_view::npos) return s;
  return absl::Status(
      s.code(), absl::StrCat(message.substr(0, at),
                             "Hint: the auto placement placed this op within the memory budget "
                             "(AutoPlacerOptions::budget_bytes); give it a smaller budget, or "
                             "raise the memory limit",
                             message.substr(at + kKernelHint.size())));
}

}  // namespace

absl::Status CheckStepNumerics(const PlanState::Step& step, const std::vector<Variable*>& slots,
                               const std::vector<std::string>& names) {
  for (const auto& [arg, ids] : step.outputs) {
    for (int id : ids) {
      const Tensor* t = slots[id]->data_tensor();
      if (t == nullptr || !t->initialized() || t->NumBytes() == 0) continue;
      if (!IsFloating(t->dtype())) continue;
      Tensor host = *t;
      if (!t->place().is_host()) {
        absl::StatusOr<Tensor> copied = CopyTensorTo(*t, CPUPlace());
        if (!copied.ok()) return AnnotateStepError(copied.status(), step);
        host = *std::move(copied);
      }
      const int64_t n = static_cast<int64_t>(host.NumBytes() / SizeOf(host.dtype()));
      int64_t bad = -1;
      double value = 0;
      DispatchDataType(host.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (kIsFloatingType<T>) {
          bad = FirstNonFinite(host.data<T>(), n);
          if (bad >= 0) value = static_cast<double>(host.data<T>()[bad]);
        }
      });
      if (bad < 0) continue;
      return AnnotateStepError(
          absl::InvalidArgumentError(absl::StrCat("check_numerics: output ", arg, " '", names[id],
                                                  "' ", host.shape().ToString(), " holds ", value,
                                                  " at flat index ", bad)),
          step);
    }
  }
  return absl::OkStatus();
}

absl::Status AnnotateStepError(const absl::Status& s, const PlanState::Step& step) {
  if (s.ok()) return s;
  const std::string prefix =
      absl::StrCat("op '", step.op.type, "' (#", step.index, ") on ", step.place.ToString());
  if (absl::string_view(s.message()).find(absl::StrCat("op '", step.op.type, "'")) !=
      absl::string_view::npos) {
    return absl::Status(
        s.code(), absl::StrCat(s.message(), " [#", step.index, " on ", step.place.ToString(), "]"));
  }
  return absl::Status(s.code(), absl::StrCat(prefix, ": ", s.message()));
}

absl::Status CancelledBefore(const PlanState::Step& step, const PlanState::Frame& frame) {
  if (step.held_for_commit || !frame.CancelRequested()) return absl::OkStatus();
  return absl::CancelledError(absl::StrCat(
      "run cancelled (Executor::Cancel) before op '", step.op.type, "' (#", step.index, ") on ",
      step.place.ToString(), "; the scope keeps its values from before the run"));
}

// A device->host copy is `sync` (the host waits for its data; in-order mode
// the executor itself waits right away), a host->device copy is async
// (stream-ordered before the kernels that read it).
absl::Status PlanRunner::RunCopyStep(PlanState* plan, PlanState::Step* step,
                                     const StepRunContext& run, RunStats* stats) {
  const std::vector<Variable*>& slots = run.frame->slots;
  Variable* src = slots[step->inputs[0].second[0]];
  Variable* dst = slots[step->outputs[0].second[0]];
  const Tensor* from = src->data_tensor();
  const std::string& var = step->op.inputs.at("X")[0];
  if (from == nullptr || !from->initialized()) {
    return AnnotateStepError(
        absl::FailedPreconditionError(absl::StrCat("variable '", var, "' is not initialised")),
        *step);
  }
  const bool to_host = step->copy_to.is_host();
  const CopyKind kind = to_host ? CopyKind::kDeviceToHost : CopyKind::kHostToDevice;
  Allocator* alloc = to_host ? step->device->host_allocator() : step->device->allocator();
  absl::StatusOr<Tensor> to = Tensor::Allocate(alloc, from->dtype(), from->shape());
  if (!to.ok()) return AnnotateStepError(to.status(), *step);
  const size_t bytes = from->NumBytes();
  Stream* stream = step->StreamFor(run.in_order, run.frame->solo);
  OpEvent event;
  if (run.observer != nullptr) {
    event = StepEvent(*step, run);
    event.is_copy = true;
    event.copy_kind = kind;
    event.sync = to_host;
    event.bytes = static_cast<int64_t>(bytes);
    event.var = var;
    event.consumer = plan->placed.table[step->index].copy->consumer_type;
    run.observer->OnOpBegin(event);
  }
  const bool log = ExecutorVlogIsOn(3);
  if (log) {
    ExecutorLog(absl::StrCat("Transform Variable ", var, " from ",
                             KernelTypeForLog(from->dtype(), from->place()), " to ",
                             KernelTypeForLog(from->dtype(), step->copy_to)));
  }
  if (bytes > 0) {
    absl::Status s;
    if (to_host) {
      s = step->device->CopyAsync(kind, to->raw_data(), from->raw_data(), bytes, stream);
      if (s.ok() && run.in_order && run.segment == nullptr)
        s = step->device->SynchronizeStream(stream);
      if (!run.in_order) run.frame->keep_alive.Add(from->buffer());  // read on the copy stream
    } else {
      absl::StatusOr<const void*> source = UploadSource(step, *from, run);
      s = source.status();
      if (s.ok()) s = step->device->CopyAsync(kind, to->raw_data(), *source, bytes, stream);
    }
    RETURN_IF_ERROR(AnnotateStepError(s, *step));
  }
  if (run.segment != nullptr && !to_host) {
    run.segment->uploads.push_back(
        {step->inputs[0].second[0], bytes > 0 ? run.frame->staging[step->index] : nullptr,
         from->dtype(), from->shape(), step->index, src->is_selected_rows(),
         src->is_selected_rows() ? src->selected_rows().rows() : std::vector<int64_t>()});
  }
  if (run.segment != nullptr && to_host) run.segment->copies_to_host = true;
  if (log) {
    ExecutorLog(absl::StrCat(to_host ? "TensorCopySync " : "TensorCopyAsync ", Dims(from->shape()),
                             " from ", from->place().LogName(), " to ", step->copy_to.LogName()));
  }
  if (run.observer != nullptr) run.observer->OnOpEnd(event);
  CountCopy(*step, plan->placed.table[step->index], *from, to_host, stats);
  if (src->is_selected_rows()) {
    const SelectedRows& rows = src->selected_rows();
    dst->set(SelectedRows(rows.height(), rows.rows(), *std::move(to)));
  } else {
    dst->set(*std::move(to));
  }
  if (run.segment != nullptr) Hold(step->outputs, slots, &run.segment->held);
  return absl::OkStatus();
}

absl::Status PlanRunner::RunKernelStep(PlanState* plan, PlanState::Step* step,
                                       const StepRunContext& run) {
  const std::vector<Variable*>& slots = run.frame->slots;
  KernelContext ctx(step->op, *step->def, step->device,
                    step->StreamFor(run.in_order, run.frame->solo),
                    run.in_args != nullptr ? *run.in_args : run.frame->in_args[step->index],
                    run.frame->out_args[step->index]);
  ctx.set_host_output_allocator(step->host_output_allocator);
  ctx.set_run_id(run.frame->run_id);
  ctx.set_report_sink(&run.frame->reports[step->index]);
  ctx.set_may_forward_inputs(step->forwards_inputs && run.segment == nullptr);
  RETURN_IF_ERROR(AnnotateStepError(ctx.CheckInputPlaces(), *step));
  if (run.segment != nullptr) {
    for (const auto& [arg, ids] : step->inputs) {
      if (!step->def->IsHostMemory(arg)) continue;
      for (int id : ids) {
        const Tensor& t = *slots[id]->data_tensor();  // CheckInputPlaces: present
        run.segment->host_values.push_back(
            {id, step->op.type, t.dtype(), t.shape(),
             std::string(static_cast<const char*>(t.raw_data()), t.NumBytes()), step->index});
      }
    }
    Hold(step->inputs, slots, &run.segment->held);
    Hold(step->outputs, slots, &run.segment->held);  // e.g. g before g = g + partial
  }
  const bool collective = step->def->collective() != CollectiveKind::kNone;
  if (collective && step->lane == Lane::kComm && !run.in_order) {
    std::vector<std::shared_ptr<Buffer>> read;
    Hold(step->inputs, slots, &read);  // read on the collective stream until the run ends
    for (auto& buffer : read) run.frame->keep_alive.Add(std::move(buffer));
  }
  OpEvent event;
  if (run.observer != nullptr) {
    event = StepEvent(*step, run);
    if (collective) DescribeCollective(*step, slots, &event);
    run.observer->OnOpBegin(event);
  }
  absl::Status computed;
  {
    const DeviceGuard on_step_device(step->place);  // this thread only; a no-op when current
    computed = step->kernel->Compute(&ctx);
  }
  if (!computed.ok()) computed = AutoPlacedHint(*plan, *step, std::move(computed));
  RETURN_IF_ERROR(AnnotateStepError(computed, *step));
  if (run.observer != nullptr) {
    event.dtype = ComputeDtype(*step, slots);
    run.observer->OnOpEnd(event);
  }
  if (ExecutorVlogIsOn(3)) {
    ExecutorLog(absl::StrCat(step->place.LogName(), " Op(", step->op.type, "), inputs:{",
                             ArgsForLog(step->inputs, slots, plan->slot_names), "}, outputs:{",
                             ArgsForLog(step->outputs, slots, plan->slot_names), "}"));
  }
  if (run.segment != nullptr) Hold(step->outputs, slots, &run.segment->held);
  return absl::OkStatus();
}

absl::Status PlanRunner::RunStep(PlanState* plan, PlanState::Step* step, const StepRunContext& run,
                                 RunStats* stats) {
  if (step->is_copy) return RunCopyStep(plan, step, run, stats);
  RETURN_IF_ERROR(RunKernelStep(plan, step, run));
  stats->ops++;
  if (run.check_numerics) {
    RETURN_IF_ERROR(CheckStepNumerics(*step, run.frame->slots, plan->slot_names));
  }
  return absl::OkStatus();
}

absl::Status PlanRunner::RunInOrder(PlanState* plan, RunStats* stats, const StepRunContext& run) {
  bool committing = false;  // a held persistable write ran: the run completes
  for (auto& owned : plan->steps) {
    PlanState::Step* step = owned.get();
    if (step->folded && plan->constants_ready) continue;
    committing = committing || step->held_for_commit;
    if (!committing) RETURN_IF_ERROR(CancelledBefore(*step, *run.frame));
    RETURN_IF_ERROR(RunStep(plan, step, run, stats));
    for (int id : step->release_after) run.frame->slots[id]->clear();
  }
  return absl::OkStatus();
}

}  // namespace tandem
