// DeviceRegistry: the devices of every linked backend, and DeviceGuard.
//
//   // In a backend's .cc file:
//   static DeviceFactoryRegistrar reg("sim", std::make_unique<SimFactory>());
//
//   // Anywhere:
//   ASSIGN_OR_RETURN(Device* d, DeviceRegistry::Global().GetDevice(place));
//   {
//     DeviceGuard guard(GPUPlace(1));   // current device is gpu:1 here
//     ...
//   }                                   // previous device restored
//
// Thread-safe. Devices are created on first use and never destroyed;
// factories are registered at static-initialisation time and never removed.
// DeviceGuard takes no lock: it reads the factory from a table indexed by
// device type and skips the restore when the device was already current, so
// it costs two virtual calls at most and is what every caller that switches
// devices should use.
#ifndef TANDEM_FRAMEWORK_DEVICE_DEVICE_REGISTRY_H_
#define TANDEM_FRAMEWORK_DEVICE_DEVICE_REGISTRY_H_

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/device/device.h"
#include "framework/place/place.h"

namespace tandem {

// Implemented by each backend for its device type.
class DeviceFactory {
 public:
  virtual ~DeviceFactory() = default;
  // Devices present; 0 when the driver or hardware is missing.
  virtual int DeviceCount() = 0;
  virtual absl::StatusOr<std::unique_ptr<Device>> CreateDevice(int index) = 0;
  // Makes `index` the calling thread's current device and returns the
  // previous one. Types without a notion of a current device return 0.
  virtual int ExchangeCurrentDevice(int index) { return 0; }
};

class DeviceRegistry {
 public:
  static DeviceRegistry& Global();

  // CHECK-fails on a second factory for the same type (a link-time bug).
  void RegisterFactory(DeviceType type, std::unique_ptr<DeviceFactory> factory);

  // NotFound if no backend for the type is linked; InvalidArgument if the
  // index does not exist (naming how many devices of that type there are).
  absl::StatusOr<Device*> GetDevice(const Place& place);
  // 0 if the backend is not linked or has no devices.
  int DeviceCount(DeviceType type);
  // Every usable place: cpu first, then each device of each linked backend.
  std::vector<Place> AvailablePlaces();
  // Types with a registered factory, in registration order.
  std::vector<DeviceType> LinkedTypes();
  // The factory of `type`; nullptr when the type is not linked. Lock-free
  // (one atomic load), so DeviceGuard can call it per kernel.
  DeviceFactory* FactoryFor(DeviceType type);

  // How many device types can have a factory (DeviceType ids 0 .. N-1).
  static constexpr int kMaxDeviceTypes = 32;

 private:
  std::mutex mu_;
  std::vector<std::pair<DeviceType, std::unique_ptr<DeviceFactory>>> factories_;
  // factories_ by DeviceType id, written once at registration.
  std::array<std::atomic<DeviceFactory*>, kMaxDeviceTypes> factory_by_type_{};
  std::map<Place, std::unique_ptr<Device>> devices_;
};

struct DeviceFactoryRegistrar {
  DeviceFactoryRegistrar(absl::string_view type_name, absl::string_view log_prefix,
                         std::unique_ptr<DeviceFactory> factory);
};

// Makes `place` the current device of its type for this thread while it
// lives, and restores the previous one (when it differs) at the end.
// Synchronous, lock-free, affects only the calling thread. Not copyable or
// movable. The place must exist (see GetDevice); a host place is a no-op.
class DeviceGuard {
 public:
  explicit DeviceGuard(const Place& place);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  DeviceGuard(DeviceGuard&&) = delete;

 private:
  DeviceFactory* factory_;  // nullptr: nothing to restore
  int previous_ = 0;
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_DEVICE_DEVICE_REGISTRY_H_
