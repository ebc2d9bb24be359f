// HostReadyQueue: the host steps of concurrent runs that are ready to run,
// in the order they should start.
//
//   HostReadyQueue<Task> ready;
//   ready.Push(update_of_w0, /*feeds_device=*/false, {/*run=*/0, /*step=*/40});
//   ready.Push(update_of_w9, /*feeds_device=*/false, {0, 31});
//   ready.Push(cast_of_next_run, /*feeds_device=*/true, {1, 2});
//   ready.front();  // cast_of_next_run: a device waits for what it makes
//
// A step that feeds a device (a successor of its run is device work: a
// copy up, a kernel) starts before the steps that feed only the host; each
// kind in program order: the earlier run first, then the lower step index.
// Host time spent on the first kind lets a device start sooner; on the
// second it does not. In an offloaded optimizer step, for instance, every
// update becomes ready at once after the gradient clip, and the next run's
// casts of the updated weights (which the next forward's copies wait for)
// would otherwise queue behind all of them. Program order among the rest
// matters when updates become ready faster than the host does them: the
// backward produces the gradients last layer first, the updates come in
// forward read order, so a backlog is worked off from the weights the next
// forward reads first. Reordering ready steps changes no result: they are
// independent by construction. Not thread-safe (the scheduler's lock
// guards it).
#ifndef TANDEM_FRAMEWORK_RUNTIME_HOST_READY_QUEUE_H_
#define TANDEM_FRAMEWORK_RUNTIME_HOST_READY_QUEUE_H_

#include <cstdint>
#include <iterator>
#include <set>
#include <tuple>

namespace tandem {

// Where a step stands in program order: its run's sequence number (runs
// started earlier have smaller ones) and its index in the plan.
struct ProgramOrder {
  uint64_t run = 0;
  int step = 0;
};

template <typename Task>
class HostReadyQueue {
 public:
  void Push(const Task& task, bool feeds_device, ProgramOrder order) {
    entries_.insert(Entry{!feeds_device, order.run, order.step, sequence_++, task});
  }
  bool empty() const { return entries_.empty(); }
  // The next step to start; the queue must not be empty.
  const Task& front() const { return entries_.begin()->task; }
  void pop_front() { entries_.erase(entries_.begin()); }
  // Drops every task for which drop(task) is true.
  template <typename Predicate>
  void RemoveIf(Predicate drop) {
    for (auto it = entries_.begin(); it != entries_.end();) {
      it = drop(it->task) ? entries_.erase(it) : std::next(it);
    }
  }

 private:
  struct Entry {
    bool host_only;  // false sorts first: the steps that feed a device
    uint64_t run;
    int step;
    uint64_t pushed;  // ties (a step queued twice: a refined lookup's parts) in arrival order
    Task task;
    bool operator<(const Entry& o) const {
      return std::tie(host_only, run, step, pushed) <
             std::tie(o.host_only, o.run, o.step, o.pushed);
    }
  };
  std::set<Entry> entries_;
  uint64_t sequence_ = 0;
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_RUNTIME_HOST_READY_QUEUE_H_
