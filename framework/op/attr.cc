#include "framework/op/attr.h"

#include "absl/strings/str_join.h"

namespace tandem {

absl::string_view AttrTypeName(AttrType type) {
  switch (type) {
    case AttrType::kBool: return "bool";
    case AttrType::kInt: return "int";
    case AttrType::kFloat: return "float";
    case AttrType::kString: return "string";
    case AttrType::kDataType: return "dtype";
    case AttrType::kInts: return "ints";
    case AttrType::kFloats: return "floats";
    case AttrType::kStrings: return "strings";
  }
  return "?";
}

AttrType AttrTypeOf(const AttrValue& value) {
  return static_cast<AttrType>(value.index());
}

std::string AttrValueToString(const AttrValue& value) {
  struct Printer {
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(int64_t v) const { return absl::StrCat(v); }
    std::string operator()(double v) const { return absl::StrCat(v); }
    std::string operator()(const std::string& v) const {
      return absl::StrCat("\"", v, "\"");
    }
    std::string operator()(DataType v) const {
      return std::string(DataTypeName(v));
    }
    std::string operator()(const std::vector<int64_t>& v) const {
      return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
    }
    std::string operator()(const std::vector<double>& v) const {
      return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
    }
    std::string operator()(const std::vector<std::string>& v) const {
      return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
    }
  };
  return std::visit(Printer{}, value);
}

}  // namespace tandem
