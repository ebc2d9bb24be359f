// The sparse-update helpers of the optimizer kernels: duplicate rows merged
// in order, every row visited once, whatever the policy's split.
#include "backends/common/optimizer_kernels.h"

#include <algorithm>
#include <map>
#include <vector>

#include "backends/common/serial_policy.h"
#include "backends/common/testing_policy.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using optimizer_kernels_internal::ForEachMergedRow;
using optimizer_kernels_internal::GroupPositions;
using prologue::GroupRows;
using prologue::RowGroups;

TEST(GroupRows, GroupsPositionsByRowInOrder) {
  const std::vector<int64_t> rows = {5, 1, 5, 0, 1, 5};
  const RowGroups g = GroupRows(rows.data(), 6);
  EXPECT_EQ(g.order, (std::vector<int64_t>{3, 1, 4, 0, 2, 5}));
  EXPECT_EQ(g.starts, (std::vector<int64_t>{0, 1, 3, 6}));
  EXPECT_EQ(g.size(), 3);
  EXPECT_EQ(GroupRows(rows.data(), 0).size(), 0);
}

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

TEST(GroupPositions, GroupsOnlyTheGivenPositions) {
  const std::vector<int64_t> rows = {5, 1, 5, 0, 1, 5};
  const RowGroups g = GroupPositions(rows.data(), {0, 1, 2, 5});
  EXPECT_EQ(g.order, (std::vector<int64_t>{1, 0, 2, 5}));
  EXPECT_EQ(g.starts, (std::vector<int64_t>{0, 1, 4}));
}

// Both ways of sorting (packed keys; pairs, for negative or huge rows) give
// a stable grouping: rows ascending, positions ascending within a row.
TEST(GroupPositions, MatchesAStableSortByRowForAnyRows) {
  for (const int64_t scale : {int64_t{1}, int64_t{1} << 40, int64_t{1} << 56, int64_t{-3}}) {
    SCOPED_TRACE(scale);
    std::vector<int64_t> rows(3000);
    for (size_t i = 0; i < rows.size(); ++i)
      rows[i] = static_cast<int64_t>((i * 7919) % 97) * scale;
    std::vector<int64_t> positions;
    for (int64_t p = 0; p < 3000; p += 1 + p % 3) positions.push_back(p);
    std::vector<int64_t> want = positions;
    std::stable_sort(want.begin(), want.end(),
                     [&](int64_t a, int64_t b) { return rows[a] < rows[b]; });
    const RowGroups g = GroupPositions(rows.data(), positions);
    EXPECT_EQ(g.order, want);
    ASSERT_EQ(g.starts.front(), 0);
    ASSERT_EQ(g.starts.back(), static_cast<int64_t>(want.size()));
    EXPECT_EQ(g.size(), 97);
    for (int64_t k = 0; k < g.size(); ++k) {
      for (int64_t e = g.starts[k]; e < g.starts[k + 1]; ++e) {
        EXPECT_EQ(rows[g.order[e]], rows[g.order[g.starts[k]]]);
      }
    }
  }
}

}  // namespace
}  // namespace tandem
