// HostReadyQueue: the host steps of concurrent runs that are ready to run,
// in the order they should start.
//
//   HostReadyQueue<Task> ready;
//   ready.Push(update, /*feeds_device=*/false);
//   ready.Push(cast_of_next_run, /*feeds_device=*/true);
//   ready.front();  // cast_of_next_run: a device waits for what it makes
//
// A step that feeds a device (a successor of its run is device work: a
// copy up, a kernel) starts before the steps that feed only the host, each
// kind in the order it became ready. Host time spent on the first kind
// lets a device start sooner; on the second it does not. In an offloaded
// optimizer step, for instance, every update becomes ready at once after
// the gradient clip, and the next run's casts of the updated weights
// (which the next forward's copies wait for) would otherwise queue behind
// all of them. Reordering ready steps changes no result: they are
// independent by construction. Not thread-safe (the scheduler's lock
// guards it).
#ifndef TANDEM_FRAMEWORK_RUNTIME_HOST_READY_QUEUE_H_
#define TANDEM_FRAMEWORK_RUNTIME_HOST_READY_QUEUE_H_

#include <algorithm>
#include <deque>

namespace tandem {

template <typename Task>
class HostReadyQueue {
 public:
  void Push(const Task& task, bool feeds_device) {
    (feeds_device ? feeding_ : rest_).push_back(task);
  }
  bool empty() const { return feeding_.empty() && rest_.empty(); }
  // The next step to start; the queue must not be empty.
  const Task& front() const { return feeding_.empty() ? rest_.front() : feeding_.front(); }
  void pop_front() { (feeding_.empty() ? rest_ : feeding_).pop_front(); }
  // Drops every task for which drop(task) is true.
  template <typename Predicate>
  void RemoveIf(Predicate drop) {
    for (std::deque<Task>* queue : {&feeding_, &rest_}) {
      queue->erase(std::remove_if(queue->begin(), queue->end(), drop), queue->end());
    }
  }

 private:
  std::deque<Task> feeding_, rest_;
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_RUNTIME_HOST_READY_QUEUE_H_
