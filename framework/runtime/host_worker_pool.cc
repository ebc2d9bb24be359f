#include "framework/runtime/host_worker_pool.h"

#include <cstdlib>
#include <utility>

#include "glog/logging.h"

namespace tandem {

HostWorkerPool::HostWorkerPool(int workers) {
  CHECK_GT(workers, 0);
  for (int i = 0; i < workers; ++i) slots_.push_back(std::make_unique<Slot>());
  for (int i = 0; i < workers; ++i) threads_.emplace_back([this, i] { Work(i); });
}

HostWorkerPool::~HostWorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  for (auto& slot : slots_) slot->wake.notify_one();
  for (std::thread& t : threads_) t.join();
}

void HostWorkerPool::Submit(std::function<void(int)> task) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& slot : slots_) {
    if (slot->idle) {
      slot->idle = false;
      slot->task = std::move(task);
      slot->wake.notify_one();
      return;
    }
  }
  backlog_.push_back(std::move(task));
}

void HostWorkerPool::Work(int worker) {
  Slot& slot = *slots_[worker];
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    std::function<void(int)> task;
    if (slot.task) {  // handed to this worker: before the backlog, or it would wait behind it
      task = std::move(slot.task);
      slot.task = nullptr;
    } else if (!backlog_.empty()) {
      task = std::move(backlog_.front());
      backlog_.pop_front();
    } else if (stopping_) {
      return;
    } else {
      slot.idle = true;
      slot.wake.wait(lock, [&] { return !slot.idle || stopping_; });
      if (slot.idle) slot.idle = false;  // woken to stop
      continue;
    }
    lock.unlock();
    task(worker);
    lock.lock();
  }
}

int HostWorkerPool::DefaultSize() {
  if (const char* env = std::getenv("TANDEM_HOST_WORKERS"); env != nullptr) {
    const int n = std::atoi(env);
    if (n > 0 && n <= 64) return n;
    LOG(WARNING) << "TANDEM_HOST_WORKERS=" << env << " is not in 1..64; using the default";
  }
  return 1;
}

}  // namespace tandem
