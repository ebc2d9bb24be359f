// Element types of tensors.
//
//   DataType t = DataTypeOf<float>();         // DataType::kFloat32
//   DataTypeOf<bfloat16>();                   // DataType::kBFloat16 (float16.h)
//   SizeOf(t);                                // 4
//   ASSIGN_OR_RETURN(DataType d, ParseDataType("int64"));
//   DispatchDataType(t, [&](auto tag) { using T = typename decltype(tag)::type; ... });
#ifndef TANDEM_FRAMEWORK_TYPES_DATA_TYPE_H_
#define TANDEM_FRAMEWORK_TYPES_DATA_TYPE_H_

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "framework/types/float16.h"

namespace tandem {

enum class DataType : uint8_t {
  kFloat32 = 0,
  kFloat64 = 1,
  kInt32 = 2,
  kInt64 = 3,
  kBool = 4,
  kBFloat16 = 5,
  kFloat16 = 6,
};

// Every data type, in enum order.
const std::vector<DataType>& AllDataTypes();
// "float32", "float64", "int32", "int64", "bool", "bfloat16", "float16".
absl::string_view DataTypeName(DataType t);
// Short name used in logs in the reference format: "float", "double",
// "int", "int64_t", "bool".
absl::string_view DataTypeLogName(DataType t);
size_t SizeOf(DataType t);
// float32, float64, bfloat16 and float16.
bool IsFloating(DataType t);
// bfloat16 and float16.
bool IsLowPrecisionFloat(DataType t);
// The dtype a floating `t` computes and reports statistics in (the DataType
// form of ComputeTypeOf<T>): float32 for bfloat16 and float16, `t` otherwise.
DataType ComputeDataType(DataType t);
// Accepts the names above plus "float"/"double"/"int"/"long" and
// "bf16"/"fp16"/"half"; anything else is InvalidArgument listing the
// accepted names.
absl::StatusOr<DataType> ParseDataType(absl::string_view name);
std::ostream& operator<<(std::ostream& os, DataType t);

template <typename T>
struct DataTypeTraits;
#define TANDEM_DATA_TYPE_TRAIT(cpp, enum_value)   \
  template <>                                     \
  struct DataTypeTraits<cpp> {                    \
    static constexpr DataType value = enum_value; \
  };
TANDEM_DATA_TYPE_TRAIT(float, DataType::kFloat32)
TANDEM_DATA_TYPE_TRAIT(double, DataType::kFloat64)
TANDEM_DATA_TYPE_TRAIT(int32_t, DataType::kInt32)
TANDEM_DATA_TYPE_TRAIT(int64_t, DataType::kInt64)
TANDEM_DATA_TYPE_TRAIT(bool, DataType::kBool)
TANDEM_DATA_TYPE_TRAIT(bfloat16, DataType::kBFloat16)
TANDEM_DATA_TYPE_TRAIT(float16, DataType::kFloat16)
#undef TANDEM_DATA_TYPE_TRAIT

template <typename T>
constexpr DataType DataTypeOf() {
  return DataTypeTraits<T>::value;
}

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls fn(TypeTag<T>{}) with the C++ type for `t`; returns what fn returns.
template <typename Fn>
auto DispatchDataType(DataType t, Fn&& fn) {
  switch (t) {
    case DataType::kFloat32:
      return fn(TypeTag<float>{});
    case DataType::kFloat64:
      return fn(TypeTag<double>{});
    case DataType::kInt32:
      return fn(TypeTag<int32_t>{});
    case DataType::kInt64:
      return fn(TypeTag<int64_t>{});
    case DataType::kBFloat16:
      return fn(TypeTag<bfloat16>{});
    case DataType::kFloat16:
      return fn(TypeTag<float16>{});
    case DataType::kBool:
      break;
  }
  return fn(TypeTag<bool>{});
}

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_TYPES_DATA_TYPE_H_
