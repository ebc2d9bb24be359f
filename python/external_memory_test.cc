#include "python/external_memory.h"

#include <vector>

#include "gtest/gtest.h"

namespace tandem {
namespace python {
namespace {

TEST(ExternalTensorTest, SharesTheMemoryAndReleasesItOnceWhenTheLastCopyGoes) {
  std::vector<float> memory = {1, 2, 3, 4, 5, 6};
  int releases = 0;
  {
    Tensor t = ExternalTensor(memory.data(), DataType::kFloat32, Shape({2, 3}), CPUPlace(),
                              [&releases] { ++releases; });
    EXPECT_EQ(t.raw_data(), memory.data());
    EXPECT_EQ(t.shape(), Shape({2, 3}));
    EXPECT_EQ(t.NumBytes(), 24u);
    EXPECT_TRUE(t.place().is_host());
    t.data<float>()[4] = 50;
    Tensor copy = t.Reshaped(Shape({6}));
    t = Tensor();
    EXPECT_EQ(releases, 0);
    EXPECT_EQ(copy.ToVector<float>(), (std::vector<float>{1, 2, 3, 4, 50, 6}));
  }
  EXPECT_EQ(releases, 1);
  EXPECT_EQ(memory[4], 50);
}

TEST(ExternalTensorTest, ReportsTheGivenPlace) {
  int64_t value = 7;
  Tensor t = ExternalTensor(&value, DataType::kInt64, Shape(), GPUPlace(1), nullptr);
  EXPECT_EQ(t.place(), GPUPlace(1));
  EXPECT_EQ(t.buffer()->allocator()->Name(), "external");
}

}  // namespace
}  // namespace python
}  // namespace tandem
