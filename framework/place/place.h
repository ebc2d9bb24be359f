// Place: where a tensor lives or an op runs. A small value type.
//
//   ASSIGN_OR_RETURN(Place p, ParsePlace("gpu:1"));   // {gpu, 1}
//   p.ToString();      // "gpu:1"
//   p.LogName();       // "CUDAPlace(1)", PaddlePaddle's spelling
//   if (p.is_host()) ...
//
// Device types are interned names. "cpu" and "gpu" always exist; a backend
// adds its own ("sim") with a static DeviceTypeRegistrar in its .cc file, so a
// new backend needs no framework change. Thread-safe: registration happens
// during static initialisation; lookups afterwards only read.
//
// Place strings (ParsePlace; --place flags, device_guard, tandem.Place) are
// exactly
//
//   place := type | type ":" index
//   type  := a registered device type, as registered: lower-case ("cpu", "gpu", "sim")
//   index := "0" | [1-9][0-9]*   (decimal, at most INT_MAX: no sign, no leading zero)
//
// A type alone means index 0 (in a device_guard, the executor's place when it
// has that type), and the host has one place: "cpu" (or "cpu:0"). Nothing else
// is accepted: not "GPU", "Gpu:0", " cpu", "cpu ", "gpu:01", "gpu:+1", "gpu:"
// or "cpu:1". ToString() gives the canonical spelling ("cpu", "gpu:0"), which
// parses back to the same place.
#ifndef TANDEM_FRAMEWORK_PLACE_PLACE_H_
#define TANDEM_FRAMEWORK_PLACE_PLACE_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem {

// An interned device-type name ("cpu", "gpu", "sim", ...).
class DeviceType {
 public:
  static DeviceType CPU() { return DeviceType(0); }
  static DeviceType GPU() { return DeviceType(1); }

  // Returns the type registered under `name`; NotFound if none.
  static absl::StatusOr<DeviceType> FromName(absl::string_view name);
  // Registers `name` (idempotent) with `log_prefix` used by LogName, e.g.
  // "SimPlace" gives "SimPlace(0)"; an empty prefix leaves it to a later
  // registration. Call from static initialisers.
  static DeviceType Register(absl::string_view name,
                             absl::string_view log_prefix);
  // All registered names, in registration order.
  static std::vector<std::string> RegisteredNames();

  const std::string& name() const;
  const std::string& log_prefix() const;
  int id() const { return id_; }

  friend bool operator==(DeviceType a, DeviceType b) { return a.id_ == b.id_; }
  friend bool operator!=(DeviceType a, DeviceType b) { return a.id_ != b.id_; }
  friend bool operator<(DeviceType a, DeviceType b) { return a.id_ < b.id_; }
  template <typename H>
  friend H AbslHashValue(H h, DeviceType t) {
    return H::combine(std::move(h), t.id_);
  }

 private:
  explicit DeviceType(int id) : id_(id) {}
  int id_;
};

// Registers a backend's device type at static-initialisation time:
//   static DeviceTypeRegistrar sim_type("sim", "SimPlace");
struct DeviceTypeRegistrar {
  DeviceTypeRegistrar(absl::string_view name, absl::string_view log_prefix) {
    DeviceType::Register(name, log_prefix);
  }
};

class Place {
 public:
  // The host CPU.
  Place() : type_(DeviceType::CPU()), index_(0) {}
  Place(DeviceType type, int index) : type_(type), index_(index) {}

  DeviceType type() const { return type_; }
  int index() const { return index_; }
  // True for the host CPU: memory a plain pointer dereference can read.
  bool is_host() const { return type_ == DeviceType::CPU(); }

  // "cpu", "gpu:0", "sim:1" (a host place of another index, which no device
  // backs, prints with it: "cpu:1").
  std::string ToString() const;
  // Reference-system spelling for logs: "CPUPlace", "CUDAPlace(0)".
  std::string LogName() const;

  friend bool operator==(const Place& a, const Place& b) {
    return a.type_ == b.type_ && a.index_ == b.index_;
  }
  friend bool operator!=(const Place& a, const Place& b) { return !(a == b); }
  friend bool operator<(const Place& a, const Place& b) {
    return a.type_ != b.type_ ? a.type_ < b.type_ : a.index_ < b.index_;
  }
  template <typename H>
  friend H AbslHashValue(H h, const Place& p) {
    return H::combine(std::move(h), p.type_, p.index_);
  }

 private:
  DeviceType type_;
  int index_;
};

inline Place CPUPlace() { return Place(); }
inline Place GPUPlace(int index) { return Place(DeviceType::GPU(), index); }

std::ostream& operator<<(std::ostream& os, const Place& p);

// Parses a place string of the grammar above: "cpu", "<type>" (index 0) or
// "<type>:<index>" for any registered type. Anything else is InvalidArgument
// naming the string, what is wrong with it and the accepted form:
//   place "Gpu:0" is not valid: device type 'Gpu' is not lower-case (write 'gpu');
//   expected "cpu", "<type>" or "<type>:<index>" with a lower-case registered type
//   (cpu, gpu, sim) and a non-negative index without sign or leading zeros
// Whether the device exists is checked later, by the DeviceRegistry.
absl::StatusOr<Place> ParsePlace(absl::string_view text);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_PLACE_PLACE_H_
