#include "framework/types/data_type.h"

#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(DataType, NamesSizesAndRoundTrip) {
  EXPECT_EQ(SizeOf(DataType::kFloat32), 4u);
  EXPECT_EQ(SizeOf(DataType::kFloat64), 8u);
  EXPECT_EQ(SizeOf(DataType::kInt32), 4u);
  EXPECT_EQ(SizeOf(DataType::kInt64), 8u);
  EXPECT_EQ(SizeOf(DataType::kBool), 1u);
  EXPECT_EQ(SizeOf(DataType::kBFloat16), 2u);
  EXPECT_EQ(SizeOf(DataType::kFloat16), 2u);
  EXPECT_EQ(AllDataTypes().size(), 7u);
  for (DataType t : AllDataTypes()) {
    EXPECT_THAT(ParseDataType(DataTypeName(t)), IsOkAndHolds(t));
  }
  EXPECT_EQ(DataTypeLogName(DataType::kFloat32), "float");
  EXPECT_EQ(DataTypeOf<int64_t>(), DataType::kInt64);
  EXPECT_TRUE(IsFloating(DataType::kFloat64));
  EXPECT_FALSE(IsFloating(DataType::kInt32));
  EXPECT_TRUE(IsFloating(DataType::kBFloat16));
  EXPECT_TRUE(IsLowPrecisionFloat(DataType::kFloat16));
  EXPECT_FALSE(IsLowPrecisionFloat(DataType::kFloat32));
  // Statistics of 16-bit values are kept in float32, float64 ones in float64.
  EXPECT_EQ(ComputeDataType(DataType::kBFloat16), DataType::kFloat32);
  EXPECT_EQ(ComputeDataType(DataType::kFloat16), DataType::kFloat32);
  EXPECT_EQ(ComputeDataType(DataType::kFloat64), DataType::kFloat64);
  EXPECT_EQ(ComputeDataType(DataType::kFloat32), DataType::kFloat32);
  EXPECT_EQ(DataTypeOf<bfloat16>(), DataType::kBFloat16);
  EXPECT_EQ(DataTypeOf<float16>(), DataType::kFloat16);
  EXPECT_THAT(ParseDataType("bf16"), IsOkAndHolds(DataType::kBFloat16));
  EXPECT_THAT(ParseDataType("half"), IsOkAndHolds(DataType::kFloat16));
  EXPECT_THAT(ParseDataType("fp16"), IsOkAndHolds(DataType::kFloat16));
  EXPECT_EQ(DataTypeName(DataType::kBFloat16), "bfloat16");
}

TEST(DataType, UnknownNameIsInvalidArgument) {
  EXPECT_THAT(ParseDataType("float8"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown data type 'float8'; accepted: float32, float64, int32, "
                                 "int64, bool, bfloat16, float16")));
}

}  // namespace
}  // namespace tandem
