// ExecutionObserver: how tools (the profiler) watch the executor without
// the executor knowing them.
//
//   class MyObserver : public ExecutionObserver {
//     void OnOpEnd(const OpEvent& e) override { ... e.op->type ... e.bytes ... }
//   };
//   MyObserver observer;
//   SetExecutionObserver(&observer);   // not owned; nullptr removes it
//
// Threads: hooks are called concurrently, from the thread that called
// Executor::Run (the dispatcher: it enqueues device work) and from the
// executor's host workers (they run host kernels). An op's OnOpBegin and
// OnOpEnd come from the same thread, with nothing else of that thread's in
// between except the copies it makes for the op; `worker` says which
// thread (-1: the dispatcher). OnOpBegin comes before the op is launched,
// OnOpEnd right after Compute returns (the device work may still be running
// on `stream`: record an event there to time it). In in-order mode
// (ExecutorOptions::in_order) every hook comes from the calling thread, in
// program order. OnWaitBegin/OnWaitEnd bracket a host thread waiting for
// device work: a host step waiting for the device data it reads (`event` is
// that step), or the end of a run waiting for its devices (`event.op` is
// nullptr). OnRunBegin/OnRunEnd come from the calling thread. With no
// observer set the cost is one atomic load per op.
// A run that replays a captured graph (ExecutorOptions::capture_graphs) is
// one span: OnOpBegin/OnOpEnd around the launch with op->type
// "graph_launch", index -1 and the graph's device and stream; the run that
// captures reports each op as it is recorded (its device work runs in the
// launch that follows, the same "graph_launch" span).
#ifndef TANDEM_FRAMEWORK_RUNTIME_EXECUTION_OBSERVER_H_
#define TANDEM_FRAMEWORK_RUNTIME_EXECUTION_OBSERVER_H_

#include <cstdint>
#include <optional>
#include <string>

#include "framework/device/device.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/op/op_desc.h"
#include "framework/place/place.h"
#include "framework/types/data_type.h"

namespace tandem {

struct RunStats;

// One op or copy as it runs.
struct OpEvent {
  const OpDesc* op = nullptr;  // the placed op (memcpy_h2d / memcpy_d2h for copies)
  int index = 0;               // position in the placed program
  Place place;                 // where it runs (a copy: its device side)
  Device* device = nullptr;
  Stream* stream = nullptr;  // the stream its device work is queued on
  bool is_copy = false;
  int worker = -1;  // host worker ordinal; -1: the dispatching thread
  // Copies and collectives: the bytes moved (a collective: its inputs').
  int64_t bytes = 0;
  // Collectives only (KernelDef::Collective): what it does, over how many
  // ranks (its op's nranks).
  CollectiveKind collective = CollectiveKind::kNone;
  int ranks = 0;
  // Copies only:
  CopyKind copy_kind = CopyKind::kHostToDevice;
  bool sync = true;
  std::string var;       // variable copied
  std::string consumer;  // type of the op that needed the copy
  // Kernels, at OnOpEnd: the dtype they computed in, that of their first
  // floating input (else their first floating output); none for ops without
  // floating values (shape, integer arithmetic).
  std::optional<DataType> dtype;
};

class ExecutionObserver {
 public:
  virtual ~ExecutionObserver() = default;
  virtual void OnRunBegin() {}
  // After every device used by the run was synchronised.
  virtual void OnRunEnd(const RunStats& stats) {}
  virtual void OnOpBegin(const OpEvent& event) {}
  virtual void OnOpEnd(const OpEvent& event) {}
  virtual void OnWaitBegin(const OpEvent& event) {}
  virtual void OnWaitEnd(const OpEvent& event) {}
};

// Installs the process-wide observer (not owned; nullptr removes it).
// Thread-safe; takes effect at the next op.
void SetExecutionObserver(ExecutionObserver* observer);
ExecutionObserver* GetExecutionObserver();

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_RUNTIME_EXECUTION_OBSERVER_H_
