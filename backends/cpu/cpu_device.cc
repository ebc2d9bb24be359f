#include "backends/cpu/cpu_device.h"

#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "framework/device/device_registry.h"

namespace tandem {
namespace {

class CpuDeviceFactory final : public DeviceFactory {
 public:
  int DeviceCount() override { return 1; }
  absl::StatusOr<std::unique_ptr<Device>> CreateDevice(int index) override {
    return std::unique_ptr<Device>(std::make_unique<CpuDevice>());
  }
};

const DeviceFactoryRegistrar cpu_registrar("cpu", "CPUPlace", std::make_unique<CpuDeviceFactory>());

}  // namespace

std::string CpuDevice::Description() const {
  return absl::StrCat("host CPU (", std::thread::hardware_concurrency(), " hardware threads)");
}

absl::StatusOr<std::unique_ptr<Stream>> CpuDevice::CreateStream() {
  return std::make_unique<Stream>();
}

absl::StatusOr<std::unique_ptr<Event>> CpuDevice::CreateEvent() {
  return std::make_unique<Event>();
}

absl::Status CpuDevice::Copy(CopyKind /*kind*/, void* dst, const void* src, size_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
  return absl::OkStatus();
}

absl::Status CpuDevice::CopyAsync(CopyKind kind, void* dst, const void* src, size_t bytes,
                                  Stream* /*stream*/) {
  return Copy(kind, dst, src, bytes);
}

absl::Status CpuDevice::RecordEvent(Event* /*event*/, Stream* /*stream*/) {
  return absl::OkStatus();
}

absl::Status CpuDevice::StreamWaitEvent(Stream* /*stream*/, Event* /*event*/) {
  return absl::OkStatus();
}

absl::Status CpuDevice::SynchronizeEvent(Event* /*event*/) { return absl::OkStatus(); }

absl::Status CpuDevice::SynchronizeStream(Stream* /*stream*/) { return absl::OkStatus(); }

absl::Status CpuDevice::Synchronize() { return absl::OkStatus(); }

}  // namespace tandem
