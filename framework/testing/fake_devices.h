// Devices for framework/ tests, which may not link a backend: linking
// //framework/testing:fake_devices registers a "cpu" device (the host) and
// two "testdev" accelerators, testdev:0 and testdev:1.
//
//   ASSIGN_OR_RETURN(Device* dev, DeviceRegistry::Global().GetDevice(TestDevPlace(0)));
//   FakeDeviceCounters::Reset();
//   ... run a plan that copies one float to testdev:0 ...
//   FakeDeviceCounters::Get(CopyKind::kHostToDevice);   // {1 copy, 4 bytes}
//
// Every device is synchronous: kernels compute on the calling thread, every
// copy (Async ones included) is a memcpy that has completed when the call
// returns, and event waits return at once. A testdev has its own memory
// (a CpuAllocator of its own, so its statistics and limit are separate from
// the host's; host code can read it, which tests must not rely on) and
// counts the copies it is asked to make, per direction. The "cpu" device
// conflicts with //backends/cpu (two factories for one type): framework/
// tests link this instead. Thread-safe.
#ifndef TANDEM_FRAMEWORK_TESTING_FAKE_DEVICES_H_
#define TANDEM_FRAMEWORK_TESTING_FAKE_DEVICES_H_

#include <cstdint>

#include "framework/device/device.h"
#include "framework/place/place.h"

namespace tandem {

// testdev:index (index 0 or 1).
Place TestDevPlace(int index);

// Copies the testdev devices were asked to make since the last Reset, all
// devices together.
struct FakeCopyCount {
  int64_t copies = 0;
  int64_t bytes = 0;
};
class FakeDeviceCounters {
 public:
  static FakeCopyCount Get(CopyKind kind);
  static void Reset();
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_TESTING_FAKE_DEVICES_H_
