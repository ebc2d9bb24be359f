// Test helpers for the profiler's concurrency figures: a per-thread fake
// clock, a device whose timing events follow scripted device work, and a
// concurrent run fed to the installed observer from three threads.
//
//   FakeClock clock;                      // installs it (SetClockForTesting)
//   QueueDevice gpu(GPUPlace(0));
//   ASSERT_OK(StartProfiler({ProfilerState::kAll, 0}));
//   FeedConcurrentRun(&gpu);              // the timeline below
//   ASSERT_OK_AND_ASSIGN(Profile p, CollectProfile());
//
// Thread safety: the fake clock is per thread (each thread sets its own
// time); QueueDevice is thread-safe. Test-only.
#ifndef TANDEM_PROFILER_CONCURRENCY_TESTUTIL_H_
#define TANDEM_PROFILER_CONCURRENCY_TESTUTIL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "framework/device/device.h"
#include "framework/runtime/execution_observer.h"

namespace tandem {
namespace profiler {

// While alive, the profiler's clock reads the calling thread's fake time.
// Create it before StartProfiler: it sets the creating thread's time to 0
// (the profiler's epoch); other threads set theirs before their first hook.
class FakeClock {
 public:
  FakeClock();
  ~FakeClock();
  FakeClock(const FakeClock&) = delete;
  FakeClock& operator=(const FakeClock&) = delete;

  // Sets the calling thread's time, in microseconds.
  static void SetUs(int64_t us);
  static int64_t NowNs();
};

// A device with two streams and timing events on the fake clock. Work
// queued on a stream (Run) occupies it; a timing event recorded on a
// stream completes when the work queued before it has, or at once (the
// recording thread's fake time) when the stream is idle, like a GPU.
class QueueDevice final : public Device {
 public:
  explicit QueueDevice(Place place) : place_(place) {}

  // Queues `us` microseconds of work on `stream`, at the calling thread's
  // fake time.
  void Run(Stream* stream, int64_t us);

  Place place() const override { return place_; }
  std::string Description() const override { return "queue test device"; }
  Allocator* allocator() override;
  Allocator* host_allocator() override;
  Stream* compute_stream() override { return &compute_; }
  Stream* copy_stream() override { return &copy_; }
  absl::StatusOr<std::unique_ptr<Stream>> CreateStream() override;
  absl::StatusOr<std::unique_ptr<Event>> CreateEvent() override;
  absl::Status Copy(CopyKind, void*, const void*, size_t) override { return absl::OkStatus(); }
  absl::Status CopyAsync(CopyKind, void*, const void*, size_t, Stream*) override {
    return absl::OkStatus();
  }
  absl::StatusOr<std::unique_ptr<Event>> CreateTimingEvent() override { return CreateEvent(); }
  absl::StatusOr<double> EventElapsedMs(Event* start, Event* end) override;
  absl::Status RecordEvent(Event* event, Stream* stream) override;
  absl::Status StreamWaitEvent(Stream*, Event*) override { return absl::OkStatus(); }
  absl::Status SynchronizeEvent(Event*) override { return absl::OkStatus(); }
  absl::Status SynchronizeStream(Stream*) override { return absl::OkStatus(); }
  absl::Status Synchronize() override { return absl::OkStatus(); }

 private:
  Place place_;
  Stream compute_, copy_;
  std::mutex mu_;
  std::map<Stream*, int64_t> busy_until_ns_;  // guarded by mu_
};

// One run of a concurrent executor, fed to the installed observer (times
// in us from the profiler's start at fake time 0; run 0..100):
//   dispatcher: matmul #1 on device compute: launched 10..12, runs 10..40
//               relu #5 on device compute:   launched 62..63, runs 62..82
//               waits for the devices at the end of the run 83..90
//   host worker 0: waits for device data 2..5 (for lookup_table #2),
//               lookup_table #2 on cpu 5..35
//   host worker 1: sum #3 on cpu 20..60; inside it, a sync D2H copy #4 of
//               'y' on the device's copy stream 45..55 (no consumer given)
// Host busy 5..45 and 55..60 (45 us); device busy 10..40, 45..55 and
// 62..82 (60 us); overlap 10..40 (30 us); device idle while the host is
// busy 15 us; host waiting 2..5 and 83..90 (10 us). Before its last work
// the device idles 0..10, 40..45 and 55..62: 5 us during lookup_table, 10
// us during sum. `offset_us` shifts every time (for later runs).
void FeedConcurrentRun(QueueDevice* device, int64_t offset_us = 0);

}  // namespace profiler
}  // namespace tandem

#endif  // TANDEM_PROFILER_CONCURRENCY_TESTUTIL_H_
