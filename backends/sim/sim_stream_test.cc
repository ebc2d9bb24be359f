// The sim streams are asynchronous: queued work runs on each stream's worker
// thread, in order, after the waits queued before it. Most tests hold a
// stream's worker at a Gate, so what has and has not run is known without
// timing; the delay knob's tests only rely on work being late, never early.
#include "backends/sim/sim_stream.h"

#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "backends/sim/sim_device.h"
#include "framework/device/device_registry.h"
#include "framework/program/program_builder.h"
#include "framework/runtime/executor.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

SimDevice* GetSim(int index) {
  absl::StatusOr<Device*> d = DeviceRegistry::Global().GetDevice(SimPlace(index));
  CHECK(d.ok()) << d.status();
  return static_cast<SimDevice*>(*d);
}

// Holds `stream`'s worker until Open (or destruction): nothing queued on the
// stream after the gate runs before that. (std::mutex, not absl::Notification:
// ThreadSanitizer sees through the former only, Abseil is not instrumented.)
class Gate {
 public:
  explicit Gate(Stream* stream) : state_(std::make_shared<State>()) {
    static_cast<SimStream*>(stream)->Enqueue([state = state_] {
      std::unique_lock<std::mutex> lock(state->mu);
      state->cv.wait(lock, [&] { return state->open; });
      return absl::OkStatus();
    });
  }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  ~Gate() { Open(); }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->open = true;
    }
    state_->cv.notify_all();
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool open = false;
  };
  std::shared_ptr<State> state_;
};

// A block of sim memory holding one int64_t, freed at the end of the scope.
class DeviceInt {
 public:
  DeviceInt(SimDevice* device, int64_t value) : device_(device) {
    absl::StatusOr<void*> p = device->allocator()->Allocate(sizeof(int64_t));
    CHECK(p.ok()) << p.status();
    ptr_ = static_cast<int64_t*>(*p);
    CHECK(device->Copy(CopyKind::kHostToDevice, ptr_, &value, sizeof(value)).ok());
  }
  ~DeviceInt() {
    if (ptr_ != nullptr) Free();
  }
  int64_t* get() const { return ptr_; }
  // The value, read on the host as it is now (sim memory is addressable).
  int64_t Peek() const {
    int64_t v;
    std::memcpy(&v, ptr_, sizeof(v));
    return v;
  }
  void Free() {
    device_->allocator()->Deallocate(ptr_, sizeof(int64_t));
    ptr_ = nullptr;
  }

 private:
  SimDevice* device_;
  int64_t* ptr_ = nullptr;
};

class SimStreamTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (int i = 0; i < 2; ++i) {
      ASSERT_OK(SetSimStreamDelay(SimPlace(i), absl::ZeroDuration()));
      EXPECT_OK(GetSim(i)->Synchronize());
    }
  }
};

TEST_F(SimStreamTest, AsyncCopyRunsWhenItsWorkerGetsThere) {
  SimDevice* sim = GetSim(0);
  sim->ResetCounters();
  DeviceInt d(sim, 7);
  const int64_t src = 42;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> done, sim->CreateEvent());
  {
    Gate gate(sim->copy_stream());
    ASSERT_OK(sim->CopyAsync(CopyKind::kHostToDevice, d.get(), &src, 8, sim->copy_stream()));
    ASSERT_OK(sim->RecordEvent(done.get(), sim->copy_stream()));
    EXPECT_EQ(d.Peek(), 7);  // queued behind the gate
    EXPECT_FALSE(static_cast<SimEvent*>(done.get())->completed());
    EXPECT_EQ(sim->Counters().Async(CopyKind::kHostToDevice).copies, 1);  // counted when issued
    gate.Open();
    ASSERT_OK(sim->SynchronizeEvent(done.get()));
    EXPECT_EQ(d.Peek(), 42);
    EXPECT_TRUE(static_cast<SimEvent*>(done.get())->completed());
  }
}

TEST_F(SimStreamTest, DelayKeepsAnAsyncCopyPendingUntilSynchronized) {
  SimDevice* sim = GetSim(0);
  ASSERT_OK(SetSimStreamDelay(SimPlace(0), absl::Milliseconds(200)));
  EXPECT_EQ(sim->stream_delay(), absl::Milliseconds(200));
  DeviceInt d(sim, 7);
  const int64_t src = 42;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> done, sim->CreateEvent());
  ASSERT_OK(sim->CopyAsync(CopyKind::kHostToDevice, d.get(), &src, 8, sim->copy_stream()));
  ASSERT_OK(sim->RecordEvent(done.get(), sim->copy_stream()));
  // Not run yet: the worker sleeps 200 ms before the copy. (Seen through the
  // event and the stream: reading the destination now would race with it.)
  EXPECT_FALSE(static_cast<SimEvent*>(done.get())->completed());
  auto* copy_stream = static_cast<SimStream*>(sim->copy_stream());
  EXPECT_LT(copy_stream->executed(), copy_stream->enqueued());
  ASSERT_OK(sim->SynchronizeEvent(done.get()));
  EXPECT_EQ(d.Peek(), 42);

  EXPECT_THAT(SetSimStreamDelay(SimPlace(0), absl::Milliseconds(-1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be >= 0")));
  EXPECT_THAT(SetSimStreamDelay(CPUPlace(), absl::ZeroDuration()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "stream delays exist for sim places only, got cpu"));
}

TEST_F(SimStreamTest, StreamWaitEventOrdersTwoStreams) {
  SimDevice* sim = GetSim(0);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> consumer, sim->CreateStream());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> produced, sim->CreateEvent());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> consumed, sim->CreateEvent());
  DeviceInt a(sim, 1), b(sim, 2);
  const int64_t src = 42;
  Gate gate(sim->copy_stream());
  // copy stream: a = 42; consumer: wait, then b = a.
  ASSERT_OK(sim->CopyAsync(CopyKind::kHostToDevice, a.get(), &src, 8, sim->copy_stream()));
  ASSERT_OK(sim->RecordEvent(produced.get(), sim->copy_stream()));
  ASSERT_OK(sim->StreamWaitEvent(consumer.get(), produced.get()));
  ASSERT_OK(sim->CopyAsync(CopyKind::kDeviceToDevice, b.get(), a.get(), 8, consumer.get()));
  ASSERT_OK(sim->RecordEvent(consumed.get(), consumer.get()));
  EXPECT_EQ(b.Peek(), 2);  // the consumer waits for the gated producer
  EXPECT_FALSE(static_cast<SimEvent*>(consumed.get())->completed());
  gate.Open();
  ASSERT_OK(sim->SynchronizeStream(consumer.get()));
  EXPECT_EQ(b.Peek(), 42);
  EXPECT_EQ(a.Peek(), 42);
}

TEST_F(SimStreamTest, StreamWaitEventOrdersTwoDevices) {
  SimDevice* sim0 = GetSim(0);
  SimDevice* sim1 = GetSim(1);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> on_host, sim0->CreateEvent());
  DeviceInt d0(sim0, 42), d1(sim1, 5);
  int64_t host = 0;
  Gate gate(sim0->copy_stream());
  // sim:0: host = d0; sim:1: wait, then d1 = host.
  ASSERT_OK(sim0->CopyAsync(CopyKind::kDeviceToHost, &host, d0.get(), 8, sim0->copy_stream()));
  ASSERT_OK(sim0->RecordEvent(on_host.get(), sim0->copy_stream()));
  ASSERT_OK(sim1->StreamWaitEvent(sim1->copy_stream(), on_host.get()));
  ASSERT_OK(sim1->CopyAsync(CopyKind::kHostToDevice, d1.get(), &host, 8, sim1->copy_stream()));
  EXPECT_EQ(d1.Peek(), 5);
  gate.Open();
  ASSERT_OK(sim1->SynchronizeStream(sim1->copy_stream()));
  EXPECT_EQ(d1.Peek(), 42);
}

TEST_F(SimStreamTest, WaitsKeepTheRecordTheySawWhenTheEventIsRecordedAgain) {
  SimDevice* sim = GetSim(0);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> waiter, sim->CreateStream());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> free_stream, sim->CreateStream());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> event, sim->CreateEvent());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> waited, sim->CreateEvent());
  auto* sim_event = static_cast<SimEvent*>(event.get());
  Gate gate(sim->copy_stream());
  ASSERT_OK(sim->RecordEvent(event.get(), sim->copy_stream()));  // behind the gate
  const std::shared_ptr<const SimEventRecord> first = sim_event->last_record();
  ASSERT_OK(sim->StreamWaitEvent(waiter.get(), event.get()));
  ASSERT_OK(sim->RecordEvent(waited.get(), waiter.get()));
  // A host thread waits on the event too, then it is recorded again on an
  // idle stream: the newer record completes, the first one does not.
  std::thread host_waiter([&] { EXPECT_OK(sim->SynchronizeEvent(event.get())); });
  ASSERT_OK(sim->RecordEvent(event.get(), free_stream.get()));
  ASSERT_OK(sim->SynchronizeStream(free_stream.get()));
  EXPECT_TRUE(sim_event->completed());
  EXPECT_EQ(sim_event->stream(), free_stream.get());
  EXPECT_FALSE(first->completed());
  EXPECT_FALSE(static_cast<SimEvent*>(waited.get())->completed());  // still on the first record
  gate.Open();
  host_waiter.join();  // released by whichever record it saw: no deadlock
  ASSERT_OK(sim->SynchronizeEvent(waited.get()));
  EXPECT_TRUE(first->completed());
}

TEST_F(SimStreamTest, ConcurrentEnqueuersKeepTheirOwnOrder) {
  SimDevice* sim = GetSim(1);
  ASSERT_OK(SetSimStreamDelay(SimPlace(1), absl::Microseconds(10)));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> stream, sim->CreateStream());
  constexpr int kThreads = 8, kCopies = 100;
  ASSERT_OK_AND_ASSIGN(void* slots, sim->allocator()->Allocate(kThreads * sizeof(int64_t)));
  auto* slot = static_cast<int64_t*>(slots);
  std::vector<int64_t> values(kThreads * kCopies);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int64_t>(i);
  sim->ResetCounters();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Thread t writes its values in increasing order into its own slot,
      // half on the shared stream, half on the device's copy stream.
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> event, sim->CreateEvent());
      for (int i = 0; i < kCopies; ++i) {
        Stream* s = t % 2 == 0 ? stream.get() : sim->copy_stream();
        ASSERT_OK(
            sim->CopyAsync(CopyKind::kHostToDevice, slot + t, &values[t * kCopies + i], 8, s));
        ASSERT_OK(sim->RecordEvent(event.get(), s));
      }
      ASSERT_OK(sim->SynchronizeEvent(event.get()));
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_OK(sim->Synchronize());
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(slot[t], (t + 1) * kCopies - 1) << t;
  EXPECT_EQ(sim->Counters().Async(CopyKind::kHostToDevice).copies, kThreads * kCopies);
  EXPECT_EQ(sim->Counters().Async(CopyKind::kHostToDevice).bytes, kThreads * kCopies * 8);
  sim->allocator()->Deallocate(slots, kThreads * sizeof(int64_t));
}

TEST_F(SimStreamTest, SyncCopyWaitsForTheComputeStream) {
  SimDevice* sim = GetSim(0);
  ASSERT_OK(SetSimStreamDelay(SimPlace(0), absl::Milliseconds(50)));
  DeviceInt d(sim, 7);
  const int64_t src = 42;
  int64_t host = 0;
  ASSERT_OK(sim->CopyAsync(CopyKind::kHostToDevice, d.get(), &src, 8, sim->compute_stream()));
  ASSERT_OK(sim->Copy(CopyKind::kDeviceToHost, &host, d.get(), 8));
  EXPECT_EQ(host, 42);  // not 7: the queued H2D ran first
}

TEST_F(SimStreamTest, FreesWaitForTheComputeStream) {
  SimDevice* sim = GetSim(0);
  SimAllocator* memory = sim->sim_allocator();
  const int64_t in_use = memory->GetStats().bytes_in_use;
  DeviceInt d(sim, 7);
  int64_t host = 0;
  Gate gate(sim->compute_stream());
  ASSERT_OK(sim->CopyAsync(CopyKind::kDeviceToHost, &host, d.get(), 8, sim->compute_stream()));
  int64_t* ptr = d.get();
  d.Free();  // legal: the read is queued on the compute stream
  EXPECT_EQ(memory->GetStats().bytes_in_use, in_use);
  EXPECT_FALSE(memory->Owns(ptr, 8));
  EXPECT_TRUE(memory->Holds(ptr, 8));  // until the compute stream gets past the copy
  gate.Open();
  ASSERT_OK(sim->SynchronizeStream(sim->compute_stream()));
  EXPECT_EQ(host, 7);
  EXPECT_FALSE(memory->Holds(ptr, 8));
}

TEST_F(SimStreamTest, CopyFromMemoryFreedBeforeItRunsFailsAtTheNextDrain) {
  SimDevice* sim = GetSim(0);
  DeviceInt d(sim, 7);
  int64_t host = 1;
  Gate gate(sim->copy_stream());
  ASSERT_OK(sim->CopyAsync(CopyKind::kDeviceToHost, &host, d.get(), 8, sim->copy_stream()));
  d.Free();  // a bug: nothing orders the free after the copy stream
  gate.Open();
  EXPECT_THAT(sim->SynchronizeStream(sim->copy_stream()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("D2H copy of 8 bytes (")));
  EXPECT_EQ(host, 1);                                     // skipped, not read from freed memory
  EXPECT_OK(sim->SynchronizeStream(sim->copy_stream()));  // reported once
}

TEST_F(SimStreamTest, TimingEventsMeasureTheWorkBetweenTheirRecords) {
  SimDevice* sim = GetSim(0);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> start, sim->CreateTimingEvent());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> end, sim->CreateTimingEvent());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> plain, sim->CreateEvent());
  EXPECT_THAT(sim->EventElapsedMs(start.get(), end.get()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("never recorded")));
  ASSERT_OK(sim->RecordEvent(start.get(), sim->compute_stream()));
  ASSERT_OK(SetSimStreamDelay(SimPlace(0), absl::Milliseconds(30)));
  DeviceInt d(sim, 7);
  const int64_t src = 42;
  ASSERT_OK(sim->CopyAsync(CopyKind::kHostToDevice, d.get(), &src, 8, sim->compute_stream()));
  ASSERT_OK(sim->RecordEvent(end.get(), sim->compute_stream()));
  // Waits for `end`: two delayed operations (the copy, the record) between.
  ASSERT_OK_AND_ASSIGN(double ms, sim->EventElapsedMs(start.get(), end.get()));
  EXPECT_GE(ms, 60.0);
  EXPECT_EQ(d.Peek(), 42);
  ASSERT_OK_AND_ASSIGN(double back, sim->EventElapsedMs(end.get(), start.get()));
  EXPECT_DOUBLE_EQ(back, -ms);

  ASSERT_OK(sim->RecordEvent(plain.get(), sim->compute_stream()));
  EXPECT_THAT(sim->EventElapsedMs(start.get(), plain.get()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a timing event")));
  SimDevice* sim1 = GetSim(1);
  EXPECT_THAT(sim1->EventElapsedMs(start.get(), end.get()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the start event was recorded on SimPlace(0)")));
}

// The executor queues the feed's H2D copy on the compute stream and runs the
// sim kernels right after: with every queued operation 20 ms late, the
// kernels still see the fed values, run after run.
TEST_F(SimStreamTest, KernelsAfterAnAsyncUploadSeeTheData) {
  ASSERT_OK(SetSimStreamDelay(SimPlace(0), absl::Milliseconds(20)));
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({2, 2}));
  Var y = b.ElementwiseAdd(b.Scale(x, 2.0), b.Scale(x, 0.5, /*bias=*/1.0));
  ASSERT_OK(b.status());
  Executor exe(SimPlace(0));
  Scope scope;
  ASSERT_OK_AND_ASSIGN(auto plan, exe.Prepare(b.main_program(), scope, {"x"}, {y.name}));
  for (int run = 1; run <= 3; ++run) {
    FeedMap feed = {{"x", MakeTensor(DataType::kFloat32, {2, 2}, {1.0 * run, 2, 3, 4})}};
    RunStats stats;
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, exe.Run(plan.get(), &scope, feed, &stats));
    EXPECT_EQ(stats.async_copies, 1);
    EXPECT_EQ(ToDoubles(out[0]), (std::vector<double>{2.5 * run + 1, 6, 8.5, 11})) << run;
  }
}

}  // namespace
}  // namespace tandem
