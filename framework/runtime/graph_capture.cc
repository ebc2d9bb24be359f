#include "framework/runtime/graph_capture.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/runtime/step_runner.h"
#include "glog/logging.h"

namespace tandem {
namespace {

// The device whose work a graph of `steps` would hold, or why there is none
// (one step named with the reason).
absl::StatusOr<Device*> CaptureDevice(const std::vector<std::unique_ptr<PlanState::Step>>& steps) {
  if (std::all_of(steps.begin(), steps.end(), [](const std::unique_ptr<PlanState::Step>& step) {
        return step->folded || step->place.is_host();
      })) {
    return absl::FailedPreconditionError("the plan has no device work to capture");
  }
  Device* device = nullptr;
  for (size_t i = 0; i < steps.size(); ++i) {
    const PlanState::Step& step = *steps[i];
    if (step.folded) continue;
    const std::string where =
        absl::StrCat("step #", i, " '", step.op.type, "' on ", step.place.ToString());
    if (step.is_copy && step.copy_to.is_host()) {
      return absl::FailedPreconditionError(
          absl::StrCat(where, " copies '", step.op.inputs.at("X")[0],
                       "' to the host synchronously in the middle of the step"));
    }
    if (!step.is_copy && step.place.is_host()) {
      return absl::FailedPreconditionError(
          absl::StrCat(where, " is a host kernel; only device work can be captured"));
    }
    if (!step.is_copy) {
      for (const auto& [arg, ids] : step.outputs) {
        if (step.def->IsHostMemory(arg)) {
          return absl::FailedPreconditionError(
              absl::StrCat(where, " writes its host-memory output '", arg,
                           "' on the host, which a replay would not redo"));
        }
      }
    }
    if (device != nullptr && step.device != device) {
      return absl::FailedPreconditionError(
          absl::StrCat(where, " is not on ", device->place().ToString(),
                       " like the earlier steps; a graph holds the work of one device"));
    }
    device = step.device;
  }
  return device;
}

}  // namespace

std::string PlanState::GraphState::StaleReason(const std::vector<Variable*>& slots,
                                               const std::vector<std::string>& names) const {
  auto same = [&](int slot, DataType dtype, const Shape& shape) {
    const Tensor* t = slots[slot]->data_tensor();
    return t != nullptr && t->initialized() && t->dtype() == dtype && t->shape() == shape;
  };
  for (const Upload& u : uploads) {
    if (!same(u.src, u.dtype, u.shape)) {
      return absl::StrCat("'", names[u.src], "' is no longer ", DataTypeName(u.dtype),
                          u.shape.ToString());
    }
  }
  for (const HostValue& v : host_values) {
    if (!same(v.slot, v.dtype, v.shape) || std::memcmp(slots[v.slot]->data_tensor()->raw_data(),
                                                       v.bytes.data(), v.bytes.size()) != 0) {
      return absl::StrCat("the host value of '", names[v.slot], "' read by '", v.reader,
                          "' changed");
    }
  }
  for (const auto& [slot, buffer] : persistable_buffers) {
    const Tensor* t = slots[slot]->data_tensor();
    if ((t == nullptr ? nullptr : t->buffer().get()) != buffer) {
      return absl::StrCat("persistable '", names[slot], "' was given another buffer");
    }
  }
  return "";
}

absl::Status PlanState::GraphState::Launch(const std::vector<Variable*>& slots,
                                           ExecutionObserver* observer) const {
  for (const Upload& u : uploads) {
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
  if (observer != nullptr) observer->OnOpEnd(event);
  return absl::OkStatus();
}

absl::StatusOr<bool> CaptureAndLaunch(PlanState* plan, RunStats* stats,
                                      ExecutionObserver* observer) {
  auto graph = std::make_unique<PlanState::GraphState>();
  graph->launch_op.type = "graph_launch";
  PlanState::Frame& frame = *plan->frames[0];
  for (size_t id = 0; id < frame.slots.size(); ++id) {
    if (plan->slot_persistable[id]) {
      graph->persistable_before.emplace_back(static_cast<int>(id), *frame.slots[id]);
    }
  }
  absl::StatusOr<Device*> device = CaptureDevice(plan->steps);
  absl::Status captured = device.status();
  Stream* stream = nullptr;
  if (captured.ok()) {
    graph->device = *device;
    stream = graph->device->compute_stream();
    captured = graph->device->BeginCapture(stream);
  }
  if (captured.ok()) {
    plan->graph = std::move(graph);
    StepRunContext run;
    run.observer = observer;
    run.graph = plan->graph.get();
    run.frame = &frame;
    captured = PlanRunner::RunInOrder(plan, stats, run);
    absl::StatusOr<std::unique_ptr<DeviceGraph>> ended = plan->graph->device->EndCapture(stream);
    if (captured.ok() && !ended.ok()) {
      captured = absl::Status(ended.status().code(),
                              absl::StrCat("ending the capture: ", ended.status().message()));
    }
    for (const auto& [slot, before] : plan->graph->persistable_before) {
      const Tensor* was = before.data_tensor();
      const Tensor* now = frame.slots[slot]->data_tensor();
      const Buffer* buffer = now == nullptr ? nullptr : now->buffer().get();
      if (captured.ok() && (was == nullptr ? nullptr : was->buffer().get()) != buffer) {
        captured = absl::FailedPreconditionError(
            absl::StrCat("persistable '", plan->slot_names[slot],
                         "' is written into a new buffer on each run, which a "
                         "replay would not "
                         "read back"));
      }
      plan->graph->persistable_buffers.emplace_back(slot, buffer);
    }
    if (captured.ok()) plan->graph->graph = *std::move(ended);
  }
  if (!captured.ok()) {
    plan->graph_blocker = std::string(captured.message());
    LOG(WARNING) << "executor: the plan runs eagerly, it cannot be captured as "
                    "a device graph: "
                 << plan->graph_blocker;
    // Nothing captured ran: restore what the capture bound, then run eagerly.
    PlanState::GraphState* failed = plan->graph != nullptr ? plan->graph.get() : graph.get();
    for (auto& [slot, before] : failed->persistable_before) *frame.slots[slot] = before;
    plan->graph.reset();
    *stats = RunStats();
    return false;
  }
  plan->graph->stats = *stats;
  stats->captured = stats->replayed = true;
  RETURN_IF_ERROR(plan->graph->Launch(frame.slots, observer));
  return true;
}

}  // namespace tandem
