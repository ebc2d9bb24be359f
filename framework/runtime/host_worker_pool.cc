#include "framework/runtime/host_worker_pool.h"

#include <sched.h>

#include <utility>

#include "glog/logging.h"

namespace tandem {

HostWorkerPool::HostWorkerPool(int workers) {
  CHECK_GT(workers, 0);
  for (int i = 0; i < workers; ++i) threads_.emplace_back([this, i] { Work(i); });
}

HostWorkerPool::~HostWorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread &t : threads_) t.join();
}

void HostWorkerPool::Submit(std::function<void(int)> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void HostWorkerPool::Work(int worker) {
  while (true) {
    std::function<void(int)> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, nothing left
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task(worker);
  }
}

int HostWorkerPool::DefaultSize() {
  cpu_set_t set;
  const int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  return cpus > 4 ? 3 : 2;
}

}  // namespace tandem
