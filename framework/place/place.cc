#include "framework/place/place.h"

#include <deque>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
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
  if (is_host()) return "cpu";
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
  const std::string lowered = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  std::vector<absl::string_view> parts = absl::StrSplit(lowered, ':');
  auto reject = [&](absl::string_view why) {
    std::vector<std::string> forms = {"cpu"};
    for (const std::string& name : DeviceType::RegisteredNames()) {
      if (name == "cpu") continue;
      forms.push_back(name);
      forms.push_back(name + ":N");
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid place '", text, "': ", why, "; accepted forms: ",
        absl::StrJoin(forms, ", "), " (N a device index >= 0)"));
  };
  if (parts.size() > 2 || parts[0].empty()) return reject("malformed");
  absl::StatusOr<DeviceType> type = DeviceType::FromName(parts[0]);
  if (!type.ok()) return reject(absl::StrCat("unknown device type '", parts[0], "'"));
  int index = 0;
  if (parts.size() == 2) {
    if (!absl::SimpleAtoi(parts[1], &index) || index < 0 ||
        parts[1].find_first_not_of("0123456789") != absl::string_view::npos) {
      return reject(absl::StrCat("bad device index '", parts[1], "'"));
    }
    if (*type == DeviceType::CPU() && index != 0) {
      return reject("the host has a single cpu place");
    }
  }
  return Place(*type, index);
}

}  // namespace tandem
