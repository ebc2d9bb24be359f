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
  for (DataType t : AllDataTypes()) {
    EXPECT_THAT(ParseDataType(DataTypeName(t)), IsOkAndHolds(t));
  }
  EXPECT_EQ(DataTypeLogName(DataType::kFloat32), "float");
  EXPECT_EQ(DataTypeOf<int64_t>(), DataType::kInt64);
  EXPECT_TRUE(IsFloating(DataType::kFloat64));
  EXPECT_FALSE(IsFloating(DataType::kInt32));
}

TEST(DataType, UnknownNameIsInvalidArgument) {
  EXPECT_THAT(ParseDataType("float16"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown data type 'float16'; accepted: float32")));
}

}  // namespace
}  // namespace tandem
