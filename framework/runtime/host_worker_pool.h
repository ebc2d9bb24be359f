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
  // 0: $TANDEM_HOST_WORKERS when it is 1..64 (else a warning), otherwise 1.
  // One worker is the default because CPU kernels parallelise themselves
  // (OpenMP, oneDNN) with a thread team per calling thread: with three
  // workers, teams of different workers contended and the CPU kernels of
  // a mixed CPU+GPU step ran up to 1.6x slower (H200 host, 16 cores,
  // 2026-12-01: embedding offload at batch 4096, 0.72 ms per step with
  // three workers, 0.54 with one, 0.52 in-order). More workers pay off for
  // independent host branches whose kernels are single-threaded.
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
