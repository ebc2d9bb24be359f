#include "framework/device/device_registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/base/status_macros.h"
#include "glog/logging.h"

namespace tandem {

DeviceRegistry& DeviceRegistry::Global() {
  static DeviceRegistry* registry = new DeviceRegistry;
  return *registry;
}

void DeviceRegistry::RegisterFactory(DeviceType type, std::unique_ptr<DeviceFactory> factory) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& entry : factories_) {
    CHECK(entry.first != type) << "two device factories registered for device type '" << type.name()
                               << "': is a backend linked twice?";
  }
  CHECK_LT(type.id(), kMaxDeviceTypes)
      << "device type '" << type.name() << "' has id " << type.id()
      << ", beyond the registry's table of " << kMaxDeviceTypes << " types";
  factory_by_type_[type.id()].store(factory.get(), std::memory_order_release);
  factories_.emplace_back(type, std::move(factory));
}

DeviceFactory* DeviceRegistry::FactoryFor(DeviceType type) {
  if (type.id() < 0 || type.id() >= kMaxDeviceTypes) return nullptr;
  return factory_by_type_[type.id()].load(std::memory_order_acquire);
}

std::vector<DeviceType> DeviceRegistry::LinkedTypes() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<DeviceType> types;
  for (const auto& entry : factories_) types.push_back(entry.first);
  return types;
}

int DeviceRegistry::DeviceCount(DeviceType type) {
  DeviceFactory* f = FactoryFor(type);
  return f == nullptr ? 0 : f->DeviceCount();
}

absl::StatusOr<Device*> DeviceRegistry::GetDevice(const Place& place) {
  DeviceFactory* factory = FactoryFor(place.type());
  if (factory == nullptr) {
    std::vector<std::string> linked;
    for (DeviceType t : LinkedTypes()) linked.push_back(t.name());
    return absl::NotFoundError(absl::StrCat("no backend for device type '", place.type().name(),
                                            "' (place ", place.ToString(),
                                            ") is linked into this program; linked: ",
                                            linked.empty() ? "none" : absl::StrJoin(linked, ", ")));
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = devices_.find(place);
  if (it != devices_.end()) return it->second.get();
  const int count = factory->DeviceCount();
  if (place.index() < 0 || place.index() >= count) {
    // Named with its index, "cpu:1" too (a host place of index 0 is "cpu").
    return absl::InvalidArgumentError(
        absl::StrCat("place ", place.type().name(), ":", place.index(), " does not exist: ", count,
                     " ", place.type().name(), " device(s) available",
                     count > 0 ? absl::StrCat(" (", place.type().name(), ":0 .. ",
                                              place.type().name(), ":", count - 1, ")")
                               : std::string()));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Device> device, factory->CreateDevice(place.index()));
  Device* raw = device.get();
  devices_.emplace(place, std::move(device));
  return raw;
}

std::vector<Place> DeviceRegistry::AvailablePlaces() {
  std::vector<Place> places = {CPUPlace()};
  for (DeviceType t : LinkedTypes()) {
    if (t == DeviceType::CPU()) continue;
    const int n = DeviceCount(t);
    for (int i = 0; i < n; ++i) places.emplace_back(t, i);
  }
  return places;
}

DeviceFactoryRegistrar::DeviceFactoryRegistrar(absl::string_view type_name,
                                               absl::string_view log_prefix,
                                               std::unique_ptr<DeviceFactory> factory) {
  DeviceRegistry::Global().RegisterFactory(DeviceType::Register(type_name, log_prefix),
                                           std::move(factory));
}

DeviceGuard::DeviceGuard(const Place& place)
    : factory_(DeviceRegistry::Global().FactoryFor(place.type())) {
  CHECK(factory_ != nullptr || place.is_host())
      << "DeviceGuard for " << place << ": backend not linked";
  if (factory_ == nullptr) return;
  previous_ = factory_->ExchangeCurrentDevice(place.index());
  if (previous_ == place.index()) factory_ = nullptr;  // already current
}

DeviceGuard::~DeviceGuard() {
  if (factory_ != nullptr) factory_->ExchangeCurrentDevice(previous_);
}

}  // namespace tandem
