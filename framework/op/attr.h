// Attribute values of ops.
//
//   AttrMap attrs = {{"scale", 2.0}, {"shape", std::vector<int64_t>{2, 3}},
//                    {"dtype", DataType::kInt64}};
//   ASSIGN_OR_RETURN(double s, GetAttr<double>(attrs, "scale", "scale_op"));
#ifndef TANDEM_FRAMEWORK_OP_ATTR_H_
#define TANDEM_FRAMEWORK_OP_ATTR_H_

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "framework/types/data_type.h"

namespace tandem {

using AttrValue =
    std::variant<bool, int64_t, double, std::string, DataType,
                 std::vector<int64_t>, std::vector<double>,
                 std::vector<std::string>>;
using AttrMap = std::map<std::string, AttrValue>;

enum class AttrType { kBool, kInt, kFloat, kString, kDataType, kInts, kFloats, kStrings };

// "bool", "int", "float", "string", "dtype", "ints", "floats", "strings".
absl::string_view AttrTypeName(AttrType type);
AttrType AttrTypeOf(const AttrValue& value);
// Readable value: 2, 0.5, "abc", float32, [1, 2].
std::string AttrValueToString(const AttrValue& value);

template <typename T>
constexpr AttrType AttrTypeFor() {
  if constexpr (std::is_same_v<T, bool>) return AttrType::kBool;
  else if constexpr (std::is_same_v<T, int64_t>) return AttrType::kInt;
  else if constexpr (std::is_same_v<T, double>) return AttrType::kFloat;
  else if constexpr (std::is_same_v<T, std::string>) return AttrType::kString;
  else if constexpr (std::is_same_v<T, DataType>) return AttrType::kDataType;
  else if constexpr (std::is_same_v<T, std::vector<int64_t>>) return AttrType::kInts;
  else if constexpr (std::is_same_v<T, std::vector<double>>) return AttrType::kFloats;
  else return AttrType::kStrings;
}

// The attribute `name` of op `op_type` as T. NotFound if missing,
// InvalidArgument naming both types if it holds another type.
template <typename T>
absl::StatusOr<T> GetAttr(const AttrMap& attrs, absl::string_view name,
                          absl::string_view op_type) {
  auto it = attrs.find(std::string(name));
  if (it == attrs.end()) {
    return absl::NotFoundError(
        absl::StrCat("op '", op_type, "': missing attribute '", name, "'"));
  }
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  return absl::InvalidArgumentError(absl::StrCat(
      "op '", op_type, "': attribute '", name, "' is ",
      AttrTypeName(AttrTypeOf(it->second)), " ", AttrValueToString(it->second),
      ", expected ", AttrTypeName(AttrTypeFor<T>())));
}

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_OP_ATTR_H_
