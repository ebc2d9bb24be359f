// SimStream, SimEventRecord and SimEvent (see sim_stream.h).
#include "backends/sim/sim_stream.h"

#include <utility>

#include "glog/logging.h"

namespace tandem {

void SimStreamSet::Add(SimStream* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_.insert(stream);
}

void SimStreamSet::Remove(SimStream* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_.erase(stream);
}

absl::Status SimStreamSet::DrainAll() {
  std::lock_guard<std::mutex> lock(mu_);
  absl::Status first;
  for (SimStream* stream : streams_) first.Update(stream->Drain());
  return first;
}

SimStream::SimStream(const Device* owner, const std::atomic<int64_t>* delay_ns, SimStreamSet* set)
    : owner_(owner), delay_ns_(delay_ns), set_(set) {
  if (set_ != nullptr) set_->Add(this);
}

SimStream::~SimStream() {
  if (set_ != nullptr) set_->Remove(this);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  // The worker leaves once the queue is empty: queued work still runs.
  if (worker_.joinable()) worker_.join();
}

int64_t SimStream::Enqueue(Op op, bool delayed) {
  int64_t position;
  {
    std::lock_guard<std::mutex> lock(mu_);
    CHECK(!stopping_) << "enqueue on a sim stream being destroyed";
    queue_.push_back({std::move(op), delayed});
    position = ++enqueued_;
    if (!worker_.joinable()) worker_ = std::thread(&SimStream::WorkerLoop, this);
  }
  work_cv_.notify_one();
  return position;
}

void SimStream::RunAfterQueued(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (executed_ < enqueued_) {
      queue_.push_back({[fn = std::move(fn)] {
                          fn();
                          return absl::OkStatus();
                        },
                        /*delayed=*/false});
      ++enqueued_;
      // A worker exists: something is queued or running.
      work_cv_.notify_one();
      return;
    }
  }
  fn();
}

absl::Status SimStream::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  CHECK(std::this_thread::get_id() != worker_.get_id())
      << "a sim stream op drained its own stream (deadlock)";
  const int64_t target = enqueued_;
  done_cv_.wait(lock, [&] { return executed_ >= target; });
  return std::exchange(error_, absl::OkStatus());
}

int64_t SimStream::enqueued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return enqueued_;
}

int64_t SimStream::executed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return executed_;
}

void SimStream::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left to run
    Item item = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    const int64_t delay = item.delayed ? delay_ns_->load(std::memory_order_relaxed) : 0;
    if (delay > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(delay));
    absl::Status status = item.op();
    item.op = nullptr;  // whatever the op holds goes before it counts as executed
    if (!status.ok()) {
      LOG(ERROR) << owner_->place().LogName() << " stream op failed: " << status;
    }
    lock.lock();
    error_.Update(status);
    ++executed_;
    done_cv_.notify_all();
  }
}

int64_t SimEventRecord::position() const {
  std::lock_guard<std::mutex> lock(mu_);
  return position_;
}

void SimEventRecord::set_position(int64_t position) {
  std::lock_guard<std::mutex> lock(mu_);
  position_ = position;
}

void SimEventRecord::Complete() {
  const Clock::time_point now = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    completed_ = true;
    completed_at_ = now;
  }
  cv_.notify_all();
}

bool SimEventRecord::completed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return completed_;
}

void SimEventRecord::Wait() const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return completed_; });
}

SimEventRecord::Clock::time_point SimEventRecord::completed_at() const {
  std::lock_guard<std::mutex> lock(mu_);
  return completed_at_;
}

const SimStream* SimEvent::stream() const {
  std::shared_ptr<const SimEventRecord> last = last_record();
  return last == nullptr ? nullptr : last->stream();
}

int64_t SimEvent::position() const {
  std::shared_ptr<const SimEventRecord> last = last_record();
  return last == nullptr ? 0 : last->position();
}

bool SimEvent::completed() const {
  std::shared_ptr<const SimEventRecord> last = last_record();
  return last == nullptr || last->completed();
}

std::shared_ptr<const SimEventRecord> SimEvent::last_record() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_;
}

void SimEvent::RecordOn(SimStream* stream) {
  auto record = std::make_shared<SimEventRecord>(stream->owner(), stream);
  std::lock_guard<std::mutex> lock(mu_);
  record->set_position(stream->Enqueue([record] {
    record->Complete();
    return absl::OkStatus();
  }));
  last_ = std::move(record);
}

}  // namespace tandem
