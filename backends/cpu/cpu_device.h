// CpuDevice: the host as a Device, for the "cpu" device type (one device,
// CPUPlace()). Linking //backends/cpu registers its factory and kernels.
//
//   ASSIGN_OR_RETURN(Device* cpu, DeviceRegistry::Global().GetDevice(CPUPlace()));
//   RETURN_IF_ERROR(cpu->Copy(CopyKind::kHostToDevice, dst, src, n));  // memcpy
//
// Memory comes from CpuAllocator::Default(), for tensors and staging alike.
// Kernels on cpu run synchronously on the calling thread (OpenMP inside), so
// streams and events are trivial: every call, Async ones included, returns
// with its work complete, and waits return at once. Copies of any kind are
// memcpy. Owned by the DeviceRegistry; thread-safe.
#ifndef TANDEM_BACKENDS_CPU_CPU_DEVICE_H_
#define TANDEM_BACKENDS_CPU_CPU_DEVICE_H_

#include <memory>
#include <string>

#include "framework/device/device.h"
#include "framework/memory/cpu_allocator.h"

namespace tandem {

class CpuDevice final : public Device {
 public:
  Place place() const override { return CPUPlace(); }
  // "host CPU (N hardware threads)"
  std::string Description() const override;
  Allocator* allocator() override { return CpuAllocator::Default(); }
  Allocator* host_allocator() override { return CpuAllocator::Default(); }

  Stream* compute_stream() override { return &stream_; }
  Stream* copy_stream() override { return &stream_; }
  absl::StatusOr<std::unique_ptr<Stream>> CreateStream() override;
  absl::StatusOr<std::unique_ptr<Event>> CreateEvent() override;

  absl::Status Copy(CopyKind kind, void* dst, const void* src, size_t bytes) override;
  absl::Status CopyAsync(CopyKind kind, void* dst, const void* src, size_t bytes,
                         Stream* stream) override;

  absl::Status RecordEvent(Event* event, Stream* stream) override;
  absl::Status StreamWaitEvent(Stream* stream, Event* event) override;
  absl::Status SynchronizeEvent(Event* event) override;
  absl::Status SynchronizeStream(Stream* stream) override;
  absl::Status Synchronize() override;

 private:
  Stream stream_;  // the one stream compute and copies "run" on
};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_CPU_CPU_DEVICE_H_
