// The sparse-update helpers of the optimizer kernels: duplicate rows merged
// in order, every row visited once, whatever the policy's split.
#include "backends/common/optimizer_kernels.h"

#include <map>
#include <vector>

#include "backends/common/serial_policy.h"
#include "backends/common/testing_policy.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using optimizer_kernels_internal::ForEachMergedRow;

// The merged rows of `g`, whose rows are `width` wide, by row.
template <typename Policy>
std::map<int64_t, std::vector<double>> Merged(const SelectedRows& g, int64_t width = 2) {
  std::map<int64_t, std::vector<double>> out;
  ForEachMergedRow<double, Policy>(g, width, {}, [&](int64_t row, const double* v) {
    EXPECT_EQ(out.count(row), 0u) << "row " << row << " visited twice";
    out[row] = std::vector<double>(v, v + width);
  });
  return out;
}

TEST(ForEachMergedRow, SumsDuplicatesOnceEachWhateverTheSplit) {
  const SelectedRows g(
      8, {5, 1, 5, 0, 1, 5},
      Tensor::FromVector<double>(Shape({6, 2}), {1, 2, 10, 20, 100, 200, 3, 4, 30, 40, 0.5, 0.25}));
  const std::map<int64_t, std::vector<double>> want = {
      {0, {3, 4}}, {1, {40, 60}}, {5, {101.5, 202.25}}};
  EXPECT_EQ(Merged<SerialPolicy>(g), want);
  EXPECT_EQ(Merged<ChunkingPolicy<1>>(g), want);
  EXPECT_EQ(Merged<ChunkingPolicy<2>>(g), want);
  const SelectedRows empty(8, {}, Tensor::FromVector<double>(Shape({0, 2}), {}));
  EXPECT_TRUE(Merged<ChunkingPolicy<1>>(empty).empty());
}

TEST(ForEachMergedRow, ManyRowRangesMergeInPositionOrder) {
  // 70000 one-wide updates of 1000 rows in 500 buckets and 16 chunks of
  // positions; under ChunkingPolicy<1> each bucket is merged by the
  // one-update task holding its first update. Sums whose rounding depends
  // on the order.
  const int64_t height = 1000, n = 70000;
  std::vector<int64_t> rows(n);
  std::vector<double> values(n);
  std::map<int64_t, std::vector<double>> want;
  for (int64_t i = 0; i < n; ++i) {
    rows[i] = (i * 7919) % height;
    values[i] = 1.0 / static_cast<double>(i + 3);
    auto [it, fresh] = want.try_emplace(rows[i], std::vector<double>{values[i]});
    if (!fresh) it->second[0] += values[i];
  }
  const SelectedRows g(height, rows, Tensor::FromVector<double>(Shape({n, 1}), values));
  EXPECT_EQ(Merged<SerialPolicy>(g, 1), want);
  EXPECT_EQ(Merged<ChunkingPolicy<1>>(g, 1), want);
}

}  // namespace
}  // namespace tandem
