#include "framework/testing/fake_devices.h"

#include <atomic>
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "framework/device/device_registry.h"
#include "framework/memory/cpu_allocator.h"
#include "glog/logging.h"

namespace tandem {
namespace {

constexpr int kTestDevCount = 2;

struct Counter {
  std::atomic<int64_t> copies{0}, bytes{0};
};
Counter& CounterFor(CopyKind kind) {
  static Counter counters[3];
  return counters[static_cast<int>(kind)];
}

// A device whose work is done by the time each call returns.
class SyncDevice : public Device {
 public:
  Stream* compute_stream() override { return &stream_; }
  Stream* copy_stream() override { return &stream_; }
  absl::StatusOr<std::unique_ptr<Stream>> CreateStream() override {
    return std::make_unique<Stream>();
  }
  absl::StatusOr<std::unique_ptr<Event>> CreateEvent() override {
    return std::make_unique<Event>();
  }
  absl::Status Copy(CopyKind kind, void* dst, const void* src, size_t bytes) override {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status CopyAsync(CopyKind kind, void* dst, const void* src, size_t bytes,
                         Stream* /*stream*/) override {
    return Copy(kind, dst, src, bytes);
  }
  absl::Status RecordEvent(Event*, Stream*) override { return absl::OkStatus(); }
  absl::Status StreamWaitEvent(Stream*, Event*) override { return absl::OkStatus(); }
  absl::Status SynchronizeEvent(Event*) override { return absl::OkStatus(); }
  absl::Status SynchronizeStream(Stream*) override { return absl::OkStatus(); }
  absl::Status Synchronize() override { return absl::OkStatus(); }

 private:
  Stream stream_;
};

class HostDevice final : public SyncDevice {
 public:
  Place place() const override { return CPUPlace(); }
  std::string Description() const override { return "host (framework test device)"; }
  Allocator* allocator() override { return CpuAllocator::Default(); }
  Allocator* host_allocator() override { return CpuAllocator::Default(); }
};

// Host memory of its own, reported as the device's place.
class TestDevAllocator final : public Allocator {
 public:
  explicit TestDevAllocator(Place place) : place_(place) {}
  std::string Name() const override { return place_.ToString(); }
  Place place() const override { return place_; }
  absl::StatusOr<void*> Allocate(size_t bytes) override { return memory_.Allocate(bytes); }
  void Deallocate(void* ptr, size_t bytes) override { memory_.Deallocate(ptr, bytes); }
  AllocatorStats GetStats() const override { return memory_.GetStats(); }
  void SetBytesLimit(int64_t bytes) override { memory_.SetBytesLimit(bytes); }
  void ResetPeak() override { memory_.ResetPeak(); }

 private:
  const Place place_;
  CpuAllocator memory_;
};

class TestDevice final : public SyncDevice {
 public:
  explicit TestDevice(Place place) : place_(place), memory_(place) {}
  Place place() const override { return place_; }
  std::string Description() const override { return "synchronous test accelerator"; }
  Allocator* allocator() override { return &memory_; }
  Allocator* host_allocator() override { return CpuAllocator::Default(); }
  absl::Status Copy(CopyKind kind, void* dst, const void* src, size_t bytes) override {
    Counter& c = CounterFor(kind);
    c.copies.fetch_add(1);
    c.bytes.fetch_add(static_cast<int64_t>(bytes));
    return SyncDevice::Copy(kind, dst, src, bytes);
  }

 private:
  const Place place_;
  TestDevAllocator memory_;
};

class HostFactory final : public DeviceFactory {
 public:
  int DeviceCount() override { return 1; }
  absl::StatusOr<std::unique_ptr<Device>> CreateDevice(int) override {
    return std::unique_ptr<Device>(std::make_unique<HostDevice>());
  }
};

class TestDevFactory final : public DeviceFactory {
 public:
  int DeviceCount() override { return kTestDevCount; }
  absl::StatusOr<std::unique_ptr<Device>> CreateDevice(int index) override {
    return std::unique_ptr<Device>(std::make_unique<TestDevice>(TestDevPlace(index)));
  }
};

const DeviceFactoryRegistrar host_registrar("cpu", "CPUPlace", std::make_unique<HostFactory>());
const DeviceFactoryRegistrar testdev_registrar("testdev", "TestDevPlace",
                                               std::make_unique<TestDevFactory>());

}  // namespace

Place TestDevPlace(int index) {
  CHECK(index >= 0 && index < kTestDevCount) << "testdev:" << index << " does not exist";
  static const DeviceType type = *DeviceType::FromName("testdev");
  return Place(type, index);
}

FakeCopyCount FakeDeviceCounters::Get(CopyKind kind) {
  const Counter& c = CounterFor(kind);
  return {c.copies.load(), c.bytes.load()};
}

void FakeDeviceCounters::Reset() {
  for (CopyKind kind :
       {CopyKind::kHostToDevice, CopyKind::kDeviceToHost, CopyKind::kDeviceToDevice}) {
    CounterFor(kind).copies.store(0);
    CounterFor(kind).bytes.store(0);
  }
}

}  // namespace tandem
