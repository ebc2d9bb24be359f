#include "data/data_loader.h"

#include <chrono>
#include <set>
#include <thread>

#include "data/idx_testutil.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

// n examples: "x" is uint8 [n, 2] with example i = {i, 100 + i}; "y" is
// uint8 [n] = i.
std::vector<Column> Examples(int n) {
  IdxArray x{IdxType::kUint8, {n, 2}, {}};
  IdxArray y{IdxType::kUint8, {n}, {}};
  for (int i = 0; i < n; ++i) {
    x.data.push_back(static_cast<uint8_t>(i));
    x.data.push_back(static_cast<uint8_t>(100 + i));
    y.data.push_back(static_cast<uint8_t>(i));
  }
  return {{"x", x, DataType::kFloat32, 0.5, 1.0}, {"y", y, DataType::kInt64, 1, 0}};
}

// The example ids of every batch until the end of the epoch, the first
// being batch `first` of the epoch.
std::vector<std::vector<int64_t>> Epoch(DataLoader* loader, int64_t first = 0) {
  std::vector<std::vector<int64_t>> batches;
  while (true) {
    absl::StatusOr<Batch> b = loader->Next();
    if (absl::IsOutOfRange(b.status())) return batches;
    EXPECT_OK(b.status());
    if (!b.ok()) return batches;
    std::vector<int64_t> ids;
    for (double v : ToDoubles(b->tensors.at("y"))) ids.push_back(static_cast<int64_t>(v));
    EXPECT_EQ(b->size, static_cast<int64_t>(ids.size()));
    EXPECT_EQ(b->index, first + static_cast<int64_t>(batches.size()));
    batches.push_back(ids);
  }
}

TEST(DataLoader, BatchesInOrderWithShapesAndConversions) {
  for (bool prefetch : {false, true}) {
    DataLoaderOptions o;
    o.batch_size = 4;
    o.shuffle = false;
    o.prefetch = prefetch;
    ASSERT_OK_AND_ASSIGN(auto loader, DataLoader::Create(Examples(10), o));
    EXPECT_EQ(loader->num_examples(), 10);
    EXPECT_EQ(loader->batches_per_epoch(), 3);
    EXPECT_EQ(loader->allocator(), CpuAllocator::Default());  // no GPU here
    ASSERT_OK_AND_ASSIGN(Batch first, loader->Next());
    EXPECT_EQ(first.epoch, 0);
    const Tensor& x = first.tensors.at("x");
    EXPECT_EQ(x.dtype(), DataType::kFloat32);
    EXPECT_EQ(x.shape(), Shape({4, 2}));
    EXPECT_EQ(x.place(), CPUPlace());
    // value * 0.5 + 1.
    EXPECT_EQ(ToDoubles(x), (std::vector<double>{1, 51, 1.5, 51.5, 2, 52, 2.5, 52.5}));
    EXPECT_EQ(first.tensors.at("y").dtype(), DataType::kInt64);
    EXPECT_EQ(Epoch(loader.get(), 1), (std::vector<std::vector<int64_t>>{{4, 5, 6, 7}, {8, 9}}));
    // The next epoch starts over.
    ASSERT_OK_AND_ASSIGN(Batch again, loader->Next());
    EXPECT_EQ(again.epoch, 1);
    EXPECT_EQ(ToDoubles(again.tensors.at("y")), (std::vector<double>{0, 1, 2, 3}));
  }
}

TEST(DataLoader, DropLastSkipsTheShortBatch) {
  DataLoaderOptions o;
  o.batch_size = 4;
  o.drop_last = true;
  ASSERT_OK_AND_ASSIGN(auto loader, DataLoader::Create(Examples(10), o));
  EXPECT_EQ(loader->batches_per_epoch(), 2);
  const auto batches = Epoch(loader.get());
  ASSERT_EQ(batches.size(), 2u);
  for (const auto& b : batches) EXPECT_EQ(b.size(), 4u);
}

TEST(DataLoader, ShuffleIsASeededPermutationPerEpochWhateverTheThreading) {
  auto epochs = [](uint64_t seed, bool prefetch) {
    DataLoaderOptions o;
    o.batch_size = 7;
    o.seed = seed;
    o.prefetch = prefetch;
    auto loader = DataLoader::Create(Examples(50), o).value();
    std::vector<std::vector<int64_t>> order;
    for (int e = 0; e < 3; ++e) {
      std::vector<int64_t> ids;
      for (const auto& b : Epoch(loader.get())) ids.insert(ids.end(), b.begin(), b.end());
      order.push_back(ids);
    }
    return order;
  };
  const auto a = epochs(7, true);
  for (const auto& ids : a) {
    EXPECT_EQ(std::set<int64_t>(ids.begin(), ids.end()).size(), 50u);  // each example once
    EXPECT_EQ(ids.size(), 50u);
  }
  EXPECT_NE(a[0], a[1]);  // reshuffled per epoch
  std::vector<int64_t> sorted = a[0];
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NE(a[0], sorted);
  EXPECT_EQ(a, epochs(7, false));  // same seed, no thread: same order
  EXPECT_NE(a, epochs(8, true));
}

TEST(DataLoader, DestroyingWithBatchesQueuedReturns) {
  DataLoaderOptions o;
  o.batch_size = 1;
  o.prefetch_batches = 3;
  for (int i = 0; i < 20; ++i) {
    ASSERT_OK_AND_ASSIGN(auto loader, DataLoader::Create(Examples(10), o));
    if (i % 2 == 0) {
      ASSERT_OK(loader->Next().status());
    }
  }
}

TEST(DataLoader, BadColumnsAreInvalidArgument) {
  DataLoaderOptions o;
  std::vector<Column> mismatched = Examples(4);
  mismatched[1].data.dims = {3};
  mismatched[1].data.data.resize(3);
  EXPECT_THAT(DataLoader::Create(mismatched, o),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "DataLoader: every column needs the same, non-zero number of examples, "
                       "got x: 4, y: 3"));
  std::vector<Column> twice = Examples(4);
  twice[1].name = "x";
  EXPECT_THAT(DataLoader::Create(twice, o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("column 'x' appears twice")));
  std::vector<Column> bad_type = Examples(4);
  bad_type[0].dtype = DataType::kBool;
  EXPECT_THAT(DataLoader::Create(bad_type, o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("column 'x' has dtype bool")));
  o.batch_size = 0;
  EXPECT_THAT(DataLoader::Create(Examples(4), o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("batch_size (0)")));
}

TEST(FashionMnistColumns, ReadsGzippedIdxPairsAndChecksTheirDims) {
  const std::string dir = ::testing::TempDir();
  std::string pixels(3 * 2 * 2, '\0');
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<char>(i * 20);
  WriteIdx(dir + "/t10k-images-idx3-ubyte.gz", IdxBytes(0x08, {3, 2, 2}, pixels), true);
  WriteIdx(dir + "/t10k-labels-idx1-ubyte.gz", IdxBytes(0x08, {3}, std::string("\x07\x00\x09", 3)),
           true);
  ASSERT_OK_AND_ASSIGN(std::vector<Column> columns, FashionMnistColumns(dir, /*train=*/false));
  DataLoaderOptions o;
  o.batch_size = 3;
  o.shuffle = false;
  ASSERT_OK_AND_ASSIGN(auto loader, DataLoader::Create(std::move(columns), o));
  ASSERT_OK_AND_ASSIGN(Batch b, loader->Next());
  EXPECT_EQ(b.tensors.at("image").shape(), Shape({3, 2, 2}));
  EXPECT_FLOAT_EQ(b.tensors.at("image").data<float>()[11], 220.0f / 255);
  EXPECT_EQ(ToDoubles(b.tensors.at("label")), (std::vector<double>{7, 0, 9}));

  WriteIdx(dir + "/t10k-labels-idx1-ubyte.gz", IdxBytes(0x08, {2}, std::string("\x07\x00", 2)),
           true);
  EXPECT_THAT(FashionMnistColumns(dir, false),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("t10k-images-idx3-ubyte.gz' (type 0x8, dims [3, 2, 2])"),
                             HasSubstr("t10k-labels-idx1-ubyte.gz' (type 0x8, dims [2])"))));
  EXPECT_THAT(FashionMnistColumns(dir + "/nowhere", true),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("train-images-idx3-ubyte.gz")));
}

// The loader's own batches, the prefetch thread's queue full and one more
// made, are what MaxBytesHeld says: 16 bytes per example (x float32 [2], y
// int64); 10 examples in batches of 4: the first three batches (4 + 4 + 2
// examples); 8 examples: two batches and an end-of-epoch mark; nothing
// without prefetch.
TEST(DataLoader, MaxBytesHeldIsWhatThePrefetchThreadHolds) {
  struct Case {
    int examples;
    bool prefetch;
    int64_t held;
  };
  for (const Case& c : {Case{10, true, 160}, Case{8, true, 128}, Case{10, false, 0}}) {
    const int64_t before = CpuAllocator::Default()->GetStats().bytes_in_use;
    DataLoaderOptions o;
    o.batch_size = 4;
    o.prefetch = c.prefetch;
    ASSERT_OK_AND_ASSIGN(auto loader, DataLoader::Create(Examples(c.examples), o));
    EXPECT_EQ(loader->MaxBytesHeld(), c.held) << c.examples << " examples";
    // Wait (at most 10 s) for the thread to fill its queue, then for it to stay put.
    auto held = [&] { return CpuAllocator::Default()->GetStats().bytes_in_use - before; };
    for (int i = 0; i < 10000 && held() < c.held; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(held(), c.held) << c.examples << " examples";
  }
}

}  // namespace
}  // namespace tandem
