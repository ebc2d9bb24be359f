#include "framework/place/place.h"

#include <deque>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"

namespace tandem {
namespace {

struct TypeInfo {
  std::string name;
  std::string log_prefix;
};

// Registered types; a deque keeps references stable while it grows.
struct TypeTable {
  std::mutex mu;
  std::deque<TypeInfo> types{{"cpu", "CPUPlace"}, {"gpu", "CUDAPlace"}};
};

TypeTable& Table() {
  static TypeTable* table = new TypeTable;
  return *table;
}

}  // namespace

absl::StatusOr<DeviceType> DeviceType::FromName(absl::string_view name) {
  TypeTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mu);
  for (size_t i = 0; i < t.types.size(); ++i) {
    if (t.types[i].name == name) return DeviceType(static_cast<int>(i));
  }
  return absl::NotFoundError(absl::StrCat("unknown device type '", name, "'"));
}

DeviceType DeviceType::Register(absl::string_view name,
                                absl::string_view log_prefix) {
  CHECK(!name.empty() && absl::AsciiStrToLower(name) == name &&
        name.find(':') == absl::string_view::npos)
      << "device type names are lower-case words, got '" << name << "'";
  TypeTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mu);
  for (size_t i = 0; i < t.types.size(); ++i) {
    if (t.types[i].name != name) continue;
    // Kernels may register a type before its device does; the device's
    // registration supplies the log prefix.
    if (t.types[i].log_prefix.empty()) t.types[i].log_prefix = std::string(log_prefix);
    return DeviceType(static_cast<int>(i));
  }
  t.types.push_back({std::string(name), std::string(log_prefix)});
  return DeviceType(static_cast<int>(t.types.size() - 1));
}

std::vector<std::string> DeviceType::RegisteredNames() {
  TypeTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mu);
  std::vector<std::string> names;
  for (const TypeInfo& info : t.types) names.push_back(info.name);
  return names;
}

const std::string& DeviceType::name() const {
  TypeTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.types[id_].name;
}

const std::string& DeviceType::log_prefix() const {
  TypeTable& t = Table();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.types[id_].log_prefix;
}

std::string Place::ToString() const {
  // The host place is "cpu"; a host place with another index (which no
  // device backs) keeps its index, so that messages about it say which.
  if (is_host() && index_ == 0) return "cpu";
  return absl::StrCat(type_.name(), ":", index_);
}

std::string Place::LogName() const {
  if (is_host()) return "CPUPlace";
  const std::string& prefix = type_.log_prefix();
  return absl::StrCat(prefix.empty() ? type_.name() : prefix, "(", index_, ")");
}

std::ostream& operator<<(std::ostream& os, const Place& p) {
  return os << p.ToString();
}

absl::StatusOr<Place> ParsePlace(absl::string_view text) {
  auto reject = [&](absl::string_view why) {
    std::vector<std::string> types = {"cpu"};
    for (const std::string& name : DeviceType::RegisteredNames()) {
      if (name != "cpu") types.push_back(name);
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "place \"", absl::CHexEscape(text), "\" is not valid: ", why,
        "; expected \"cpu\", \"<type>\" or \"<type>:<index>\" with a lower-case registered type (",
        absl::StrJoin(types, ", "), ") and a non-negative index without sign or leading zeros"));
  };
  if (text.empty()) return reject("it is empty");
  if (absl::ascii_isspace(static_cast<unsigned char>(text.front())) ||
      absl::ascii_isspace(static_cast<unsigned char>(text.back()))) {
    return reject("it has leading or trailing whitespace");
  }
  const size_t colon = text.find(':');
  const absl::string_view type_name = text.substr(0, colon);
  if (type_name.empty()) return reject("the device type is empty");
  absl::StatusOr<DeviceType> type = DeviceType::FromName(type_name);
  if (!type.ok()) {
    const std::string lowered = absl::AsciiStrToLower(type_name);
    if (lowered != type_name && DeviceType::FromName(lowered).ok()) {
      return reject(absl::StrCat("device type '", absl::CHexEscape(type_name),
                                 "' is not lower-case (write '", lowered, "')"));
    }
    return reject(absl::StrCat("unknown device type '", absl::CHexEscape(type_name), "'"));
  }
  if (colon == absl::string_view::npos) return Place(*type, 0);
  const absl::string_view digits = text.substr(colon + 1);
  int index = 0;
  if (digits.empty()) return reject("the device index after ':' is empty");
  if (digits.find_first_not_of("0123456789") != absl::string_view::npos) {
    return reject(absl::StrCat("bad device index '", absl::CHexEscape(digits),
                               "': only decimal digits are allowed"));
  }
  if (digits.size() > 1 && digits[0] == '0') {
    return reject(absl::StrCat("bad device index '", digits, "': leading zero"));
  }
  if (!absl::SimpleAtoi(digits, &index)) {
    return reject(absl::StrCat("bad device index '", digits, "': too large"));
  }
  if (*type == DeviceType::CPU() && index != 0) {
    return reject("the host has a single cpu place (\"cpu\" or \"cpu:0\")");
  }
  return Place(*type, index);
}

}  // namespace tandem
