#include "framework/types/data_type.h"

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace tandem {

const std::vector<DataType>& AllDataTypes() {
  static const auto* all = new std::vector<DataType>{
      DataType::kFloat32, DataType::kFloat64,  DataType::kInt32,  DataType::kInt64,
      DataType::kBool,    DataType::kBFloat16, DataType::kFloat16};
  return *all;
}

absl::string_view DataTypeName(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return "float32";
    case DataType::kFloat64:
      return "float64";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kBool:
      return "bool";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kFloat16:
      return "float16";
  }
  LOG(FATAL) << "bad DataType " << static_cast<int>(t);
}

absl::string_view DataTypeLogName(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return "float";
    case DataType::kFloat64:
      return "double";
    case DataType::kInt32:
      return "int";
    case DataType::kInt64:
      return "int64_t";
    case DataType::kBool:
      return "bool";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kFloat16:
      return "float16";
  }
  LOG(FATAL) << "bad DataType " << static_cast<int>(t);
}

size_t SizeOf(DataType t) {
  return DispatchDataType(t, [](auto tag) { return sizeof(typename decltype(tag)::type); });
}

bool IsFloating(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat64 || IsLowPrecisionFloat(t);
}

bool IsLowPrecisionFloat(DataType t) { return t == DataType::kBFloat16 || t == DataType::kFloat16; }

DataType ComputeDataType(DataType t) { return IsLowPrecisionFloat(t) ? DataType::kFloat32 : t; }

absl::StatusOr<DataType> ParseDataType(absl::string_view name) {
  for (DataType t : AllDataTypes()) {
    if (DataTypeName(t) == name) return t;
  }
  if (name == "float") return DataType::kFloat32;
  if (name == "double") return DataType::kFloat64;
  if (name == "int") return DataType::kInt32;
  if (name == "long") return DataType::kInt64;
  if (name == "bf16") return DataType::kBFloat16;
  if (name == "fp16" || name == "half") return DataType::kFloat16;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown data type '", name,
                   "'; accepted: float32, float64, int32, int64, bool, bfloat16, float16"));
}

std::ostream& operator<<(std::ostream& os, DataType t) { return os << DataTypeName(t); }

}  // namespace tandem
