// Prefetcher: makes the items of a numbered sequence on a background thread,
// up to `depth` ahead of the consumer, so that a trainer's input (a
// synthetic batch, say) is ready when the step that needs it starts.
//
//   Prefetcher<FeedMap> feeds(/*first=*/1, /*last=*/steps, /*depth=*/2,
//                             [&](int64_t step) { return FeedsFor(step); });
//   for (int64_t step = 1; step <= steps; ++step) {
//     FeedMap f = feeds.Take(step);   // made in the background, in order
//     ...
//   }
//
// `make` runs on the prefetcher's thread, once per item from `first` to
// `last` in order, concurrently with the consumer: it must be safe to call
// alongside whatever the consumer does meanwhile. Take(i) must be called
// with first, first + 1, ... (it blocks until item i is made). The
// destructor stops the thread after the item being made (if any). Take is
// for one consumer thread.
#ifndef TANDEM_EXAMPLES_COMMON_PREFETCHER_H_
#define TANDEM_EXAMPLES_COMMON_PREFETCHER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "glog/logging.h"

namespace tandem {

template <typename T>
class Prefetcher {
 public:
  Prefetcher(int64_t first, int64_t last, int depth, std::function<T(int64_t)> make)
      : next_made_(first),
        next_taken_(first),
        last_(last),
        depth_(depth < 1 ? 1 : depth),
        make_(std::move(make)),
        thread_([this] { Produce(); }) {}
  ~Prefetcher() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Item `index`: the next one in order (a different index is a bug).
  T Take(int64_t index) {
    std::unique_lock<std::mutex> lock(mu_);
    CHECK_EQ(index, next_taken_) << "Prefetcher::Take out of order";
    CHECK_LE(index, last_) << "Prefetcher::Take past the last item";
    changed_.wait(lock, [this] { return !ready_.empty(); });
    T item = std::move(ready_.front());
    ready_.pop_front();
    ++next_taken_;
    changed_.notify_all();
    return item;
  }

 private:
  void Produce() {
    while (true) {
      int64_t index;
      {
        std::unique_lock<std::mutex> lock(mu_);
        changed_.wait(lock, [this] {
          return stop_ || next_made_ > last_ || static_cast<int>(ready_.size()) < depth_;
        });
        if (stop_ || next_made_ > last_) return;
        index = next_made_++;
      }
      T item = make_(index);  // outside the lock: the consumer goes on
      {
        std::lock_guard<std::mutex> lock(mu_);
        ready_.push_back(std::move(item));
      }
      changed_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<T> ready_;  // items next_taken_ .. next_made_ - 1
  int64_t next_made_, next_taken_;
  const int64_t last_;
  const int depth_;
  bool stop_ = false;
  std::function<T(int64_t)> make_;
  std::thread thread_;  // last: starts once the rest is set up
};

}  // namespace tandem

#endif  // TANDEM_EXAMPLES_COMMON_PREFETCHER_H_
