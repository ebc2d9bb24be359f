#include "framework/tensor/tensor.h"

#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(Tensor, FromVectorRoundTripsAndSharesOnCopy) {
  Tensor t = Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(t.dtype(), DataType::kFloat32);
  EXPECT_EQ(t.NumBytes(), 16u);
  EXPECT_EQ(t.place(), CPUPlace());
  Tensor alias = t;
  alias.data<float>()[0] = 9;
  EXPECT_EQ(t.ToVector<float>(), (std::vector<float>{9, 2, 3, 4}));
  Tensor flat = t.Reshaped({4});
  EXPECT_EQ(flat.shape(), Shape({4}));
  EXPECT_EQ(flat.raw_data(), t.raw_data());
  EXPECT_EQ(t.DebugString(), "float[2, 2]");
}

TEST(Tensor, BadShapesAreInvalidArgument) {
  EXPECT_THAT(Tensor::Allocate(CpuAllocator::Default(), DataType::kFloat32, {2, -1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("negative")));
  const int64_t huge = int64_t{1} << 62;
  EXPECT_THAT(Tensor::Allocate(CpuAllocator::Default(), DataType::kFloat64, {huge}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows")));
}

TEST(Tensor, OverLimitIsResourceExhausted) {
  CpuAllocator small(/*bytes_limit=*/64);
  EXPECT_THAT(Tensor::Allocate(&small, DataType::kInt64, {9}),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("requested 72 bytes")));
}

TEST(Tensor, EmptyAndScalar) {
  ASSERT_OK_AND_ASSIGN(Tensor e, Tensor::Allocate(CpuAllocator::Default(),
                                                  DataType::kInt32, {0, 3}));
  EXPECT_EQ(e.NumElements(), 0);
  EXPECT_TRUE(e.initialized());
  Tensor s = Tensor::Scalar<int64_t>(7);
  EXPECT_EQ(s.shape().rank(), 0);
  EXPECT_EQ(s.ToVector<int64_t>(), std::vector<int64_t>{7});
}

}  // namespace
}  // namespace tandem
