#include "framework/runtime/graph_capture.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/base/status_macros.h"
#include "framework/runtime/step_runner.h"
#include "glog/logging.h"

namespace tandem {
namespace {

using GraphSegment = PlanState::GraphSegment;
using GraphState = PlanState::GraphState;

// A segment captured on more runs in a row than this has a step whose
// baked-in value changes on every run (a learning rate the host computes
// each step): that step runs eagerly from then on, since capturing it
// costs more than it saves.
constexpr int kMaxCapturesInARow = 3;

// Whether `v` is no longer a SelectedRows with `rows` (or no longer a plain
// tensor, when `selected_rows` is false).
bool RowsChanged(const Variable& v, bool selected_rows, const std::vector<int64_t>& rows) {
  if (v.is_selected_rows() != selected_rows) return true;
  return selected_rows && v.selected_rows().rows() != rows;
}

const Buffer* BufferOf(const Variable& v) {
  const Tensor* t = v.data_tensor();
  return t == nullptr || !t->initialized() ? nullptr : t->buffer().get();
}

// Whether `v` is no longer the value at `data` in `buffer`.
bool MovedFrom(const Variable& v, const Buffer* buffer, const void* data) {
  return BufferOf(v) != buffer || v.data_tensor()->raw_data() != data;
}

// Why step `i` runs outside any graph; empty when it can be captured.
std::string EagerReason(const PlanState& plan, int i) {
  const PlanState::Step& step = *plan.steps[i];
  const GraphState& graph = *plan.graph;
  if (auto eager = graph.eager.find(i); eager != graph.eager.end()) return eager->second;
  if (!step.is_copy && step.place.is_host()) return "a host kernel";
  if (auto no = graph.no_capture.find(step.device); no != graph.no_capture.end()) {
    return no->second;
  }
  if (step.is_copy) return "";
  if (step.def->collective() != CollectiveKind::kNone) {
    return "a collective, which meets the other ranks' runs";
  }
  for (const auto& [arg, ids] : step.outputs) {
    if (step.def->IsHostMemory(arg)) {
      return absl::StrCat("writes its host-memory output '", arg,
                          "' on the host, which a replay would not redo");
    }
  }
  return "";
}

// The host slots `step` reads on the host: an upload's source, a kernel's
// host-memory inputs.
std::vector<int> HostReadSlots(const PlanState::Step& step) {
  std::vector<int> read;
  for (const auto& [arg, ids] : step.inputs) {
    const bool on_host = step.is_copy ? !step.copy_to.is_host() : step.def->IsHostMemory(arg);
    if (on_host) read.insert(read.end(), ids.begin(), ids.end());
  }
  return read;
}

// Splits the steps into segments: maximal runs of capturable steps of one
// device (folded constants do not interrupt them). A step that reads on
// the host what a copy of the open segment brings down starts a new one:
// the copy runs only when the graph launches, so the value is there only
// after that segment ran. A segment whose steps are unchanged keeps its
// graph; the others retire.
void Partition(PlanState* plan) {
  GraphState& graph = *plan->graph;
  std::vector<std::unique_ptr<GraphSegment>> old = std::move(graph.segments);
  graph.segments.clear();
  graph.segment_at.assign(plan->steps.size(), -1);
  GraphSegment* open = nullptr;
  std::vector<bool> copied_down(plan->slot_names.size(), false);  // by the open segment
  for (int i = 0; i < static_cast<int>(plan->steps.size()); ++i) {
    const PlanState::Step& step = *plan->steps[i];
    if (step.folded) continue;
    if (!EagerReason(*plan, i).empty()) {
      open = nullptr;
      continue;
    }
    for (int slot : HostReadSlots(step)) {
      if (open != nullptr && copied_down[slot]) open = nullptr;
    }
    if (open == nullptr || open->device != step.device) {
      copied_down.assign(copied_down.size(), false);
      graph.segments.push_back(std::make_unique<GraphSegment>());
      open = graph.segments.back().get();
      open->first = i;
      open->device = step.device;
      open->launch_op.type = "graph_launch";
      graph.segment_at[i] = static_cast<int>(graph.segments.size()) - 1;
    }
    open->last = i;
    if (step.is_copy && step.copy_to.is_host()) {
      for (const auto& [arg, ids] : step.outputs) {
        for (int slot : ids) copied_down[slot] = true;
      }
    }
  }
  for (auto& segment : graph.segments) {
    for (auto& was : old) {
      if (was != nullptr && was->first == segment->first && was->last == segment->last &&
          was->device == segment->device) {
        segment = std::move(was);
      }
    }
  }
  for (auto& was : old) {
    if (was != nullptr) graph.retired.push_back(std::move(was));
  }
}

// Why the plan has no segment at all (for graph_blocker).
std::string NoSegmentReason(const PlanState& plan) {
  if (plan.host_only) return "the plan has no device work to capture";
  for (const auto& [device, reason] : plan.graph->no_capture) return reason;
  for (int i = 0; i < static_cast<int>(plan.steps.size()); ++i) {
    const PlanState::Step& step = *plan.steps[i];
    if (step.folded || step.place.is_host()) continue;
    return absl::StrCat("no device step can be captured: step #", i, " '", step.op.type, "' on ",
                        step.place.ToString(), ": ", EagerReason(plan, i));
  }
  return "the plan has no device work to capture";
}

// Adds what a segment's steps did (they ran inside its graph) to `stats`.
void AddSegmentStats(const RunStats& segment, RunStats* stats) {
  stats->ops += segment.ops;
  stats->copies_h2d += segment.copies_h2d;
  stats->copies_d2h += segment.copies_d2h;
  stats->bytes_h2d += segment.bytes_h2d;
  stats->bytes_d2h += segment.bytes_d2h;
  stats->sync_copies += segment.sync_copies;
  stats->async_copies += segment.async_copies;
  stats->ledger.insert(stats->ledger.end(), segment.ledger.begin(), segment.ledger.end());
  stats->graph_launches++;
  stats->replayed = true;
}

// Every slot `step` reads, the inputs it updates in place included.
std::vector<int> ReadSlots(const PlanState::Step& step) {
  std::vector<int> read = step.updated_inputs;
  for (const auto& [arg, ids] : step.inputs) read.insert(read.end(), ids.begin(), ids.end());
  return read;
}

std::vector<int> WrittenSlots(const PlanState::Step& step) {
  std::vector<int> written = step.updated_inputs;
  for (const auto& [arg, ids] : step.outputs) written.insert(written.end(), ids.begin(), ids.end());
  return written;
}

// A persistable the segment read and then wrote into another buffer: a
// replay would read the old buffer, never updated. Its writers in
// `*writers`.
absl::Status CheckPersistablesKeepTheirBuffers(const PlanState& plan, const GraphSegment& segment,
                                               const std::vector<Variable*>& slots,
                                               std::vector<int>* writers) {
  for (const GraphSegment::Input& in : segment.inputs) {
    const int slot = in.slot;
    if (!plan.slot_persistable[slot] || !MovedFrom(*slots[slot], in.buffer.get(), in.data)) {
      continue;
    }
    for (int i = segment.first; i <= segment.last; ++i) {
      for (int w : WrittenSlots(*plan.steps[i])) {
        if (w == slot) writers->push_back(i);
      }
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "persistable '", plan.slot_names[slot],
        "' is written into a new buffer on each run, which a replay would not read back"));
  }
  return absl::OkStatus();
}

// Captures `segment`'s steps as its graph (the steps' host code runs, their
// device work is recorded, nothing of it executes). On failure the slots
// are as before and `*failed` names the steps to run eagerly (empty: the
// device cannot capture).
absl::Status CaptureSegment(PlanState* plan, GraphSegment* segment, const StepRunContext& run,
                            std::vector<int>* failed) {
  std::vector<Variable*>& slots = run.frame->slots;
  std::vector<Variable> before;
  before.reserve(slots.size());
  for (Variable* v : slots) before.push_back(*v);
  GraphSegment fresh;
  fresh.first = segment->first;
  fresh.last = segment->last;
  fresh.device = segment->device;
  fresh.launch_op = segment->launch_op;
  fresh.captures_in_a_row = segment->captures_in_a_row;
  *segment = std::move(fresh);
  Stream* stream = segment->device->compute_stream();
  absl::Status s = segment->device->BeginCapture(stream);
  if (!s.ok()) return s;
  StepRunContext capture = run;
  capture.segment = segment;
  std::vector<bool> written(slots.size(), false);
  for (int i = segment->first; s.ok() && i <= segment->last; ++i) {
    PlanState::Step* step = plan->steps[i].get();
    if (step->folded) continue;
    for (int slot : ReadSlots(*step)) {
      const Tensor* t = slots[slot]->data_tensor();
      if (written[slot] || t == nullptr || !t->initialized() || t->place().is_host()) continue;
      const Variable& v = *slots[slot];
      segment->inputs.push_back(
          {slot, t->buffer(), t->raw_data(), i, v.is_selected_rows(),
           v.is_selected_rows() ? v.selected_rows().rows() : std::vector<int64_t>()});
    }
    s = PlanRunner::RunStep(plan, step, capture, &segment->stats);
    if (!s.ok()) failed->push_back(i);
    for (int slot : WrittenSlots(*step)) written[slot] = true;
  }
  absl::StatusOr<std::unique_ptr<DeviceGraph>> ended = segment->device->EndCapture(stream);
  if (s.ok() && !ended.ok()) {
    s = absl::Status(ended.status().code(),
                     absl::StrCat("ending the capture of steps #", segment->first, "-#",
                                  segment->last, ": ", ended.status().message()));
    for (int i = segment->first; i <= segment->last; ++i) failed->push_back(i);
  }
  if (s.ok()) s = CheckPersistablesKeepTheirBuffers(*plan, *segment, slots, failed);
  if (!s.ok()) {
    for (size_t i = 0; i < slots.size(); ++i) *slots[i] = before[i];
    return s;
  }
  segment->graph = *std::move(ended);
  for (size_t slot = 0; slot < slots.size(); ++slot) {
    if (!written[slot]) continue;
    segment->outputs.emplace_back(static_cast<int>(slot), *slots[slot]);
  }
  return absl::OkStatus();
}

// After a failed capture of `segment`: its failed steps (or its device)
// run eagerly from now on, and the plan is split again.
void RunEagerlyFromNowOn(PlanState* plan, const GraphSegment& segment, const absl::Status& why,
                         const std::vector<int>& failed) {
  GraphState& graph = *plan->graph;
  if (failed.empty()) {
    graph.no_capture[segment.device] = std::string(why.message());
  }
  for (int i : failed) graph.eager[i] = std::string(why.message());
  LOG(WARNING) << "executor: steps #" << segment.first << "-#" << segment.last
               << " cannot be captured as one device graph; "
               << (failed.empty() ? "the device's steps" : "the failing steps")
               << " run eagerly between graph launches: " << why.message();
  Partition(plan);
}

// Captures `segment` (again) and launches it.
absl::Status CaptureAndLaunch(PlanState* plan, GraphSegment* segment, const StepRunContext& run,
                              RunStats* stats, bool* split) {
  std::vector<int> failed;
  const absl::Status captured = CaptureSegment(plan, segment, run, &failed);
  if (!captured.ok()) {
    RunEagerlyFromNowOn(plan, *segment, captured, failed);
    *split = true;
    return absl::OkStatus();
  }
  stats->captured = true;
  RETURN_IF_ERROR(segment->Launch(run.frame->slots, run.observer, /*staged=*/true));
  AddSegmentStats(segment->stats, stats);
  return absl::OkStatus();
}

}  // namespace

GraphSegment::Stale GraphSegment::StaleReason(const std::vector<Variable*>& slots,
                                              const std::vector<std::string>& names) const {
  auto same = [&](int slot, DataType dtype, const Shape& shape) {
    const Tensor* t = slots[slot]->data_tensor();
    return t != nullptr && t->initialized() && t->dtype() == dtype && t->shape() == shape;
  };
  for (const Upload& u : uploads) {
    if (RowsChanged(*slots[u.src], u.selected_rows, u.rows)) {
      return {absl::StrCat("the rows of '", names[u.src], "' changed"), u.step};
    }
    if (!same(u.src, u.dtype, u.shape)) {
      return {absl::StrCat("'", names[u.src], "' is no longer ", DataTypeName(u.dtype),
                           u.shape.ToString()),
              u.step};
    }
  }
  for (const HostValue& v : host_values) {
    if (!same(v.slot, v.dtype, v.shape) || std::memcmp(slots[v.slot]->data_tensor()->raw_data(),
                                                       v.bytes.data(), v.bytes.size()) != 0) {
      return {
          absl::StrCat("the host value of '", names[v.slot], "' read by '", v.reader, "' changed"),
          v.step};
    }
  }
  for (const Input& in : inputs) {
    if (RowsChanged(*slots[in.slot], in.selected_rows, in.rows)) {
      return {absl::StrCat("the rows of '", names[in.slot], "' changed"), in.step};
    }
    if (MovedFrom(*slots[in.slot], in.buffer.get(), in.data)) {
      return {absl::StrCat("'", names[in.slot], "' was given another buffer"), in.step};
    }
  }
  return {};
}

absl::Status GraphSegment::Launch(const std::vector<Variable*>& slots, ExecutionObserver* observer,
                                  bool staged) const {
  for (size_t i = 0; !staged && i < uploads.size(); ++i) {
    const Upload& u = uploads[i];
    const Tensor* t = slots[u.src]->data_tensor();
    if (u.staging != nullptr) std::memcpy(u.staging->data(), t->raw_data(), t->NumBytes());
  }
  Stream* stream = device->compute_stream();
  OpEvent event;
  if (observer != nullptr) {
    event.op = &launch_op;
    event.index = -1;
    event.place = device->place();
    event.device = device;
    event.stream = stream;
    observer->OnOpBegin(event);
  }
  RETURN_IF_ERROR(graph->Launch(stream));
  for (const auto& [slot, value] : outputs) *slots[slot] = value;
  // The host steps after it read what it copied down.
  if (copies_to_host) RETURN_IF_ERROR(device->SynchronizeStream(stream));
  if (observer != nullptr) observer->OnOpEnd(event);
  return absl::OkStatus();
}

bool GraphState::Writes(const Buffer* buffer) const {
  for (const auto& segment : segments) {
    for (const auto& [slot, value] : segment->outputs) {
      if (BufferOf(value) == buffer) return true;
    }
  }
  return false;
}

std::string GraphState::Summary(const PlanState& plan) const {
  std::vector<std::string> ranges, eager_steps;
  std::vector<bool> in_segment(plan.steps.size(), false);
  for (const auto& segment : segments) {
    ranges.push_back(
        absl::StrCat("#", segment->first,
                     segment->last == segment->first ? "" : absl::StrCat("-#", segment->last),
                     " on ", segment->device->place().ToString()));
    for (int i = segment->first; i <= segment->last; ++i) in_segment[i] = true;
  }
  for (int i = 0; i < static_cast<int>(plan.steps.size()); ++i) {
    const Step& step = *plan.steps[i];
    if (in_segment[i] || step.folded || (!step.is_copy && step.place.is_host())) continue;
    const std::string reason = EagerReason(plan, i);
    if (!reason.empty()) {
      eager_steps.push_back(absl::StrCat("#", i, " '", step.op.type, "': ", reason));
    }
  }
  std::string summary =
      absl::StrCat(segments.size(), " graph segment", segments.size() == 1 ? "" : "s", " (",
                   absl::StrJoin(ranges, ", "), ")");
  if (!eager_steps.empty()) {
    absl::StrAppend(&summary, "; device steps run eagerly: ", absl::StrJoin(eager_steps, "; "));
  }
  return summary;
}

absl::StatusOr<bool> RunWithGraphs(PlanState* plan, RunStats* stats, ExecutionObserver* observer) {
  if (plan->graph == nullptr) {
    plan->graph = std::make_unique<GraphState>();
    Partition(plan);
  }
  GraphState& graph = *plan->graph;
  graph.retired.clear();  // the run before ended with its devices synchronised
  if (graph.segments.empty()) {
    plan->graph_blocker = NoSegmentReason(*plan);
    LOG(WARNING) << "executor: the plan runs eagerly, it cannot be captured as device graphs: "
                 << plan->graph_blocker;
    plan->graph.reset();
    return false;
  }
  StepRunContext run;
  run.observer = observer;
  run.frame = plan->frames[0].get();
  const int steps = static_cast<int>(plan->steps.size());
  for (int i = 0; i < steps;) {
    PlanState::Step* step = plan->steps[i].get();
    GraphSegment* segment = graph.SegmentAt(i);
    if (step->folded || segment == nullptr) {
      if (!step->folded) {
        RETURN_IF_ERROR(PlanRunner::RunStep(plan, step, run, stats));
        if (!step->place.is_host()) stats->ungraphed_device_steps++;
      }
      ++i;
      continue;
    }
    const GraphSegment::Stale stale =
        segment->graph == nullptr ? GraphSegment::Stale()
                                  : segment->StaleReason(run.frame->slots, plan->slot_names);
    if (segment->graph != nullptr && stale.reason.empty()) {
      segment->captures_in_a_row = 0;
      RETURN_IF_ERROR(segment->Launch(run.frame->slots, observer));
      AddSegmentStats(segment->stats, stats);
      i = segment->last + 1;
      continue;
    }
    if (!stale.reason.empty()) {
      VLOG(1) << "executor: capturing steps #" << segment->first << "-#" << segment->last
              << " again: " << stale.reason;
    }
    if (++segment->captures_in_a_row > kMaxCapturesInARow) {
      // What the step that baked in the changing value reads changes on
      // every run: that step runs eagerly, the rest of its segment stays.
      const std::string why = absl::StrCat("its segment was captured again on ", kMaxCapturesInARow,
                                           " runs in a row (last: ", stale.reason, ")");
      std::vector<int> eager = {stale.step};
      if (stale.step < 0) {  // not known: the whole segment
        eager.clear();
        for (int s = segment->first; s <= segment->last; ++s) eager.push_back(s);
      }
      RunEagerlyFromNowOn(plan, *segment, absl::FailedPreconditionError(why), eager);
      continue;
    }
    bool split = false;
    RETURN_IF_ERROR(CaptureAndLaunch(plan, segment, run, stats, &split));
    if (!split) i = segment->last + 1;  // else: step i again, in the new segments
  }
  if (graph.segments.empty()) plan->graph_blocker = NoSegmentReason(*plan);
  return true;
}

}  // namespace tandem
