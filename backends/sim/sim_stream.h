// The queues and markers of the sim backend: SimStream (a FIFO of device
// operations executed by its own worker thread), SimEventRecord (one record
// of an event at a queue position) and SimEvent. SimDevice (sim_device.h)
// builds copies, event records and event waits out of them.
//
//   SimStream stream(device, &delay_ns, /*set=*/nullptr);
//   int64_t at = stream.Enqueue([] { ...; return absl::OkStatus(); });
//   SimEvent event(/*timing=*/false);
//   event.RecordOn(&stream);            // completes after the op above
//   event.last_record()->Wait();        // blocks until the worker got there
//   RETURN_IF_ERROR(stream.Drain());    // waits for everything queued so far
//
// All classes are thread-safe: any thread may enqueue, wait or drain. Ops
// run one at a time, in enqueue order, on the stream's worker thread; an op
// may block (an event wait blocks on another stream's record), but must not
// drain its own stream.
#ifndef TANDEM_BACKENDS_SIM_SIM_STREAM_H_
#define TANDEM_BACKENDS_SIM_SIM_STREAM_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "absl/status/status.h"
#include "framework/device/device.h"

namespace tandem {

class SimStream;

// The live streams of one device, so that Device::Synchronize can drain
// them all. Owned by the device; outlives its streams. Thread-safe.
class SimStreamSet {
 public:
  void Add(SimStream* stream);
  void Remove(SimStream* stream);
  // Drains every live stream; the first error any of them reported.
  absl::Status DrainAll();

 private:
  std::mutex mu_;                 // held while draining: a stream is not destroyed meanwhile
  std::set<SimStream*> streams_;  // guarded by mu_
};

// A FIFO of operations and the worker thread that executes them. The worker
// starts on the first enqueue. The destructor waits for the queued work and
// joins the worker, so a stream that lives until exit (a device's own
// streams: devices are never destroyed) keeps an idle worker blocked on a
// condition variable, which touches nothing static: exit does not wait for
// it and static destruction cannot race with it, as long as nobody exits
// with work still queued (work running during exit may use destroyed
// statics, e.g. glog).
class SimStream final : public Stream {
 public:
  // Returns the op's outcome; errors are kept until the next Drain.
  using Op = std::function<absl::Status()>;

  // `delay_ns`: how long the worker sleeps before each delayed op, read as
  // the op starts (the device's knob, SetSimStreamDelay); must outlive the
  // stream. `set` (may be null): registered with while the stream lives.
  SimStream(const Device* owner, const std::atomic<int64_t>* delay_ns, SimStreamSet* set);
  SimStream(const SimStream&) = delete;
  SimStream& operator=(const SimStream&) = delete;
  ~SimStream() override;

  const Device* owner() const { return owner_; }

  // Queues `op` and returns its position: 1 for the stream's first op, then
  // 2, 3, ... Returns at once. `delayed` false: the delay knob is skipped
  // (bookkeeping such as deferred frees, not device work).
  int64_t Enqueue(Op op, bool delayed = true);
  // Runs `fn` now when nothing is queued or running, else queues it (not
  // delayed) behind the current work. Used to free memory in stream order.
  void RunAfterQueued(std::function<void()> fn);
  // Blocks until every op enqueued before the call has executed. Returns
  // the first error an op reported since the last Drain (and forgets it),
  // else OK. CHECK-fails on the worker thread itself (it would deadlock).
  absl::Status Drain();

  // Ops enqueued so far, and executed so far (executed() <= enqueued()).
  int64_t enqueued() const;
  int64_t executed() const;

 private:
  struct Item {
    Op op;
    bool delayed = true;
  };
  void WorkerLoop();

  const Device* const owner_;
  const std::atomic<int64_t>* const delay_ns_;
  SimStreamSet* const set_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // queue_ not empty, or stopping_
  std::condition_variable done_cv_;  // executed_ advanced
  std::deque<Item> queue_;           // guarded by mu_ (and the fields below)
  int64_t enqueued_ = 0;
  int64_t executed_ = 0;
  absl::Status error_;
  bool stopping_ = false;
  std::thread worker_;
};

// One record of an event: a position in a stream's queue, completed when
// the stream's worker gets there. Shared by the event and by whoever waits
// on it, so a waiter keeps waiting for the record it saw even when the
// event is recorded again meanwhile. Thread-safe.
class SimEventRecord {
 public:
  using Clock = std::chrono::steady_clock;

  SimEventRecord(const Device* device, const SimStream* stream)
      : device_(device), stream_(stream) {}

  const Device* device() const { return device_; }
  // The recording stream, for comparison only: a created stream may be gone.
  const SimStream* stream() const { return stream_; }
  // Position in the stream (SimStream::Enqueue); 0 until queued.
  int64_t position() const;
  void set_position(int64_t position);

  // Called by the worker: stamps the time and wakes the waiters.
  void Complete();
  bool completed() const;
  // Blocks until completed.
  void Wait() const;
  // When the worker executed the record (valid once completed).
  Clock::time_point completed_at() const;

 private:
  const Device* const device_;
  const SimStream* const stream_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  int64_t position_ = 0;  // guarded by mu_ (and the fields below)
  bool completed_ = false;
  Clock::time_point completed_at_;
};

// A sim event: its last record. `timing` events (CreateTimingEvent) may be
// passed to EventElapsedMs; every record is time-stamped either way.
class SimEvent final : public Event {
 public:
  explicit SimEvent(bool timing) : timing_(timing) {}

  bool timing() const { return timing_; }
  bool recorded() const { return last_record() != nullptr; }
  // The stream of the last record (compare only), nullptr if never recorded.
  const SimStream* stream() const;
  // The position of the last record in its stream, 0 if never recorded.
  int64_t position() const;
  // True when the last record has executed, or the event was never
  // recorded (cudaEventQuery's answer).
  bool completed() const;
  // The last record; nullptr if never recorded.
  std::shared_ptr<const SimEventRecord> last_record() const;

  // Records the event at the end of `stream`'s queue: a new record replaces
  // the last one (which its waiters keep).
  void RecordOn(SimStream* stream);

 private:
  const bool timing_;
  mutable std::mutex mu_;                 // held while enqueueing, so records keep stream order
  std::shared_ptr<SimEventRecord> last_;  // guarded by mu_
};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_SIM_SIM_STREAM_H_
