// The real Fashion-MNIST files of Debian's dataset-fashion-mnist package
// (`dpkg -L dataset-fashion-mnist`), when installed; skipped otherwise.
#include <unistd.h>

#include <array>

#include "data/data_loader.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

constexpr char kDir[] = "/usr/share/datasets/fashion-mnist";

TEST(FashionMnist, TrainAndTestSplitsLoadWithBalancedLabels) {
  if (access((std::string(kDir) + "/t10k-labels-idx1-ubyte.gz").c_str(), R_OK) != 0) {
    GTEST_SKIP() << kDir << " is missing: apt-get install dataset-fashion-mnist";
  }
  for (bool train : {true, false}) {
    ASSERT_OK_AND_ASSIGN(std::vector<Column> columns, FashionMnistColumns(kDir, train));
    const int64_t n = train ? 60000 : 10000;
    EXPECT_EQ(columns[0].data.dims, (std::vector<int64_t>{n, 28, 28}));
    std::array<int64_t, 10> per_class{};
    for (uint8_t label : columns[1].data.data) {
      ASSERT_LT(label, 10);
      ++per_class[label];
    }
    for (int64_t count : per_class) EXPECT_EQ(count, n / 10);  // balanced classes
    if (train) continue;
    DataLoaderOptions o;
    o.batch_size = 1000;
    o.seed = 1;
    ASSERT_OK_AND_ASSIGN(auto loader, DataLoader::Create(std::move(columns), o));
    int64_t examples = 0;
    float max_pixel = 0;
    for (int b = 0; b < 10; ++b) {
      ASSERT_OK_AND_ASSIGN(Batch batch, loader->Next());
      const Tensor& image = batch.tensors.at("image");
      ASSERT_EQ(image.shape(), Shape({1000, 28, 28}));
      for (int64_t i = 0; i < image.NumElements(); ++i) {
        max_pixel = std::max(max_pixel, image.data<float>()[i]);
      }
      examples += batch.size;
    }
    EXPECT_EQ(examples, 10000);
    EXPECT_EQ(max_pixel, 1.0f);
    EXPECT_TRUE(absl::IsOutOfRange(loader->Next().status()));
  }
}

}  // namespace
}  // namespace tandem
