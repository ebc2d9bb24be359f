#include "profiler/concurrency_testutil.h"

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <thread>
#include <utility>

#include "framework/device/device_registry.h"
#include "framework/memory/cpu_allocator.h"
#include "glog/logging.h"
#include "profiler/profiler.h"

namespace tandem {
namespace profiler {
namespace {

thread_local int64_t t_fake_now_ns = 0;

// A thread that runs one posted task at a time, kept for the process (like
// the executor's pool: the same thread, hence the same profiler thread,
// every run). Never destroyed.
class TestWorker {
 public:
  TestWorker() : thread_([this] { Loop(); }) {}

  void Post(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mu_);
    task_ = std::move(task);
    done_ = false;
    cv_.notify_all();
  }

  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
  }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return task_ != nullptr; });
        task = std::move(task_);
        task_ = nullptr;
      }
      task();
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> task_;  // guarded by mu_
  bool done_ = true;            // guarded by mu_
  std::thread thread_;
};

class QueueEvent final : public Event {
 public:
  int64_t at_ns = 0;
};

struct Ops {
  OpDesc matmul, lookup, sum, copy, relu;
  Ops() {
    matmul.type = "matmul";
    matmul.outputs["Out"] = {"x"};
    lookup.type = "lookup_table";
    lookup.outputs["Out"] = {"e"};
    sum.type = "sum";
    sum.outputs["Out"] = {"s"};
    copy.type = "memcpy_d2h";
    relu.type = "relu";
    relu.outputs["Out"] = {"r"};
  }
};

OpEvent Step(const OpDesc* op, int index, Device* device, Stream* stream, int worker) {
  OpEvent e;
  e.op = op;
  e.index = index;
  e.place = device->place();
  e.device = device;
  e.stream = stream;
  e.worker = worker;
  return e;
}

Device* Host() {
  absl::StatusOr<Device*> host = DeviceRegistry::Global().GetDevice(CPUPlace());
  CHECK(host.ok()) << host.status();
  return *host;
}

void Dispatcher(ExecutionObserver* obs, QueueDevice* device, const Ops& ops, int64_t t0) {
  const OpEvent matmul = Step(&ops.matmul, 1, device, device->compute_stream(), -1);
  FakeClock::SetUs(t0 + 10);
  obs->OnOpBegin(matmul);
  device->Run(device->compute_stream(), 30);
  FakeClock::SetUs(t0 + 12);
  obs->OnOpEnd(matmul);
  const OpEvent relu = Step(&ops.relu, 5, device, device->compute_stream(), -1);
  FakeClock::SetUs(t0 + 62);
  obs->OnOpBegin(relu);
  device->Run(device->compute_stream(), 20);
  FakeClock::SetUs(t0 + 63);
  obs->OnOpEnd(relu);
}

void Worker0(ExecutionObserver* obs, const Ops& ops, int64_t t0) {
  const OpEvent lookup = Step(&ops.lookup, 2, Host(), Host()->compute_stream(), 0);
  FakeClock::SetUs(t0 + 2);
  obs->OnWaitBegin(lookup);
  FakeClock::SetUs(t0 + 5);
  obs->OnWaitEnd(lookup);
  obs->OnOpBegin(lookup);
  FakeClock::SetUs(t0 + 35);
  obs->OnOpEnd(lookup);
}

void Worker1(ExecutionObserver* obs, QueueDevice* device, const Ops& ops, int64_t t0) {
  const OpEvent sum = Step(&ops.sum, 3, Host(), Host()->compute_stream(), 1);
  OpEvent copy = Step(&ops.copy, 4, device, device->copy_stream(), 1);
  copy.is_copy = true;
  copy.copy_kind = CopyKind::kDeviceToHost;
  copy.sync = true;
  copy.bytes = 64;
  copy.var = "y";
  FakeClock::SetUs(t0 + 20);
  obs->OnOpBegin(sum);
  FakeClock::SetUs(t0 + 45);
  obs->OnOpBegin(copy);
  device->Run(device->copy_stream(), 10);
  FakeClock::SetUs(t0 + 55);
  obs->OnOpEnd(copy);
  FakeClock::SetUs(t0 + 60);
  obs->OnOpEnd(sum);
}

}  // namespace

FakeClock::FakeClock() {
  t_fake_now_ns = 0;
  SetClockForTesting(&FakeClock::NowNs);
}
FakeClock::~FakeClock() { SetClockForTesting(nullptr); }
void FakeClock::SetUs(int64_t us) { t_fake_now_ns = us * 1000; }
int64_t FakeClock::NowNs() { return t_fake_now_ns; }

void QueueDevice::Run(Stream* stream, int64_t us) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t& busy = busy_until_ns_[stream];
  busy = std::max(busy, t_fake_now_ns) + us * 1000;
}

Allocator* QueueDevice::allocator() { return CpuAllocator::Default(); }
Allocator* QueueDevice::host_allocator() { return CpuAllocator::Default(); }

absl::StatusOr<std::unique_ptr<Stream>> QueueDevice::CreateStream() {
  return std::make_unique<Stream>();
}

absl::StatusOr<std::unique_ptr<Event>> QueueDevice::CreateEvent() {
  return std::unique_ptr<Event>(new QueueEvent());
}

absl::StatusOr<double> QueueDevice::EventElapsedMs(Event* start, Event* end) {
  return static_cast<double>(static_cast<QueueEvent*>(end)->at_ns -
                             static_cast<QueueEvent*>(start)->at_ns) *
         1e-6;
}

absl::Status QueueDevice::RecordEvent(Event* event, Stream* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  static_cast<QueueEvent*>(event)->at_ns = std::max(busy_until_ns_[stream], t_fake_now_ns);
  return absl::OkStatus();
}

void FeedConcurrentRun(QueueDevice* device, int64_t offset_us) {
  ExecutionObserver* obs = GetExecutionObserver();
  CHECK(obs != nullptr) << "start the profiler first";
  static const Ops* ops = new Ops();
  static TestWorker* w0 = new TestWorker();
  static TestWorker* w1 = new TestWorker();
  FakeClock::SetUs(offset_us);
  obs->OnRunBegin();
  w0->Post([=] { Worker0(obs, *ops, offset_us); });
  w1->Post([=] { Worker1(obs, device, *ops, offset_us); });
  Dispatcher(obs, device, *ops, offset_us);
  w0->Wait();
  w1->Wait();
  const OpEvent end_wait = Step(nullptr, -1, device, nullptr, -1);
  FakeClock::SetUs(offset_us + 83);
  obs->OnWaitBegin(end_wait);
  FakeClock::SetUs(offset_us + 90);
  obs->OnWaitEnd(end_wait);
  RunStats stats;
  stats.ops = 4;
  stats.copies_d2h = 1;
  stats.sync_copies = 1;
  FakeClock::SetUs(offset_us + 100);
  obs->OnRunEnd(stats);
}

}  // namespace profiler
}  // namespace tandem
