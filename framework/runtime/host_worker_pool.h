// HostWorkerPool: a few threads that run host steps of concurrent runs.
//
//   HostWorkerPool pool(3);
//   pool.Submit([](int worker) { /* runs on worker 0, 1 or 2 */ });
//
// A task goes to the lowest-numbered idle worker, or when none is idle, to
// the first worker that frees up (tasks start in submission order), so a
// stream of one-at-a-time tasks stays on worker 0: its thread-local state
// (a CPU library's thread team, caches) stays warm. A task must not block
// on another task of the same pool. Thread-safe. The destructor waits for
// the tasks already submitted, then joins the workers.
#ifndef TANDEM_FRAMEWORK_RUNTIME_HOST_WORKER_POOL_H_
#define TANDEM_FRAMEWORK_RUNTIME_HOST_WORKER_POOL_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tandem {

class HostWorkerPool {
 public:
  explicit HostWorkerPool(int workers);
  ~HostWorkerPool();
  HostWorkerPool(const HostWorkerPool&) = delete;
  HostWorkerPool& operator=(const HostWorkerPool&) = delete;

  int size() const { return static_cast<int>(threads_.size()); }
  // Queues `task`; it is called with the ordinal of the worker running it.
  void Submit(std::function<void(int worker)> task);

  // The pool size the executor uses when ExecutorOptions::host_workers is
  // 0: $TANDEM_HOST_WORKERS when it is 1..64 (else a warning), otherwise 3
  // on machines with more than 4 CPUs the process may use, else 2.
  static int DefaultSize();

 private:
  void Work(int worker);

  // One per worker: the task handed to it while it was idle.
  struct Slot {
    std::condition_variable wake;
    std::function<void(int)> task;  // guarded by mu_
    bool idle = false;              // guarded by mu_: waiting, nothing handed
  };

  std::mutex mu_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::deque<std::function<void(int)>> backlog_;  // guarded by mu_: no worker was idle
  bool stopping_ = false;                         // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_RUNTIME_HOST_WORKER_POOL_H_
