#include "backends/common/rows.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/common/serial_policy.h"
#include "backends/common/testing_policy.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(CopyRows, CopiesOrZeroesEachRow) {
  const std::vector<float> table = {1, 2, 3, 4, 5, 6};  // [3, 2]
  const std::vector<int64_t> ids = {2, 0, 1, 2};
  std::vector<float> out(8, -1);
  CopyRows<float, ChunkingPolicy<1>>(
      4, 2, [&](int64_t i) -> const float* { return ids[i] == 1 ? nullptr : &table[ids[i] * 2]; },
      out.data());
  EXPECT_EQ(out, std::vector<float>({5, 6, 1, 2, 0, 0, 5, 6}));
}

TEST(CopyRows, LongRunsOfRowsWhateverTheTaskSplit) {
  // More rows per task than the prefetch distance.
  const int64_t height = 50, width = 3, n = 200;
  std::vector<double> table(height * width);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<double>(i);
  std::vector<double> want(n * width);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < width; ++j) {
      want[i * width + j] = i % 9 == 0 ? 0 : table[(i * 13) % height * width + j];
    }
  }
  auto source = [&](int64_t i) -> const double* {
    return i % 9 == 0 ? nullptr : &table[(i * 13) % height * width];
  };
  std::vector<double> serial(n * width, -1), chunked(n * width, -1);
  CopyRows<double, SerialPolicy>(n, width, source, serial.data());
  CopyRows<double, ChunkingPolicy<30>>(n, width, source, chunked.data());
  EXPECT_EQ(serial, want);
  EXPECT_EQ(chunked, want);
}

// table[rows[i]] += scale * values[i], serially in order of i.
std::vector<double> Naive(const std::vector<int64_t>& rows, const std::vector<double>& values,
                          int64_t width, double scale, std::vector<double> table) {
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int64_t j = 0; j < width; ++j) table[rows[i] * width + j] += scale * values[i * width + j];
  }
  return table;
}

TEST(ScatterAddRows, DuplicatesAccumulateWhateverTheTaskSplit) {
  const int64_t height = 10, width = 3;
  const std::vector<int64_t> rows = {7, 2, 7, 0, 9, 7, 2};
  std::vector<double> values(rows.size() * width);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.25 * static_cast<double>(i) - 1;
  std::vector<double> start(height * width);
  for (size_t i = 0; i < start.size(); ++i) start[i] = static_cast<double>(i);
  const std::vector<double> want = Naive(rows, values, width, -0.5, start);

  std::vector<double> serial = start;
  ScatterAddRows<double, SerialPolicy>(rows.data(), rows.size(), values.data(), width, -0.5,
                                       serial.data(), height);
  EXPECT_EQ(serial, want);
  // Tasks of one, three and four table rows: every duplicate of a row is
  // applied by the task owning that row.
  std::vector<double> ones = start, threes = start, fours = start;
  ScatterAddRows<double, ChunkingPolicy<1>>(rows.data(), rows.size(), values.data(), width, -0.5,
                                            ones.data(), height);
  ScatterAddRows<double, ChunkingPolicy<3>>(rows.data(), rows.size(), values.data(), width, -0.5,
                                            threes.data(), height);
  ScatterAddRows<double, ChunkingPolicy<4>>(rows.data(), rows.size(), values.data(), width, -0.5,
                                            fours.data(), height);
  EXPECT_EQ(ones, want);
  EXPECT_EQ(threes, want);
  EXPECT_EQ(fours, want);
}

TEST(ScatterAddRows, ManyRowsMatchTheSerialOrderBitwise) {
  // More updates per task than the prefetch distance, many ranges, some
  // repeated rows, and values whose sums round differently by order.
  const int64_t height = 997, width = 5, n = 4000;
  std::vector<int64_t> rows(n);
  for (int64_t i = 0; i < n; ++i) rows[i] = (i * 7919) % height;
  std::vector<double> values(n * width);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 1.0 / static_cast<double>(i + 3);
  const std::vector<double> start(height * width, 0.1);
  const std::vector<double> want = Naive(rows, values, width, -0.3, start);
  std::vector<double> serial = start, ones = start, sevens = start;
  ScatterAddRows<double, SerialPolicy>(rows.data(), n, values.data(), width, -0.3, serial.data(),
                                       height);
  ScatterAddRows<double, ChunkingPolicy<1>>(rows.data(), n, values.data(), width, -0.3, ones.data(),
                                            height);
  ScatterAddRows<double, ChunkingPolicy<7>>(rows.data(), n, values.data(), width, -0.3,
                                            sevens.data(), height);
  EXPECT_EQ(serial, want);
  EXPECT_EQ(ones, want);
  EXPECT_EQ(sevens, want);
}

TEST(ScatterAddRows, HotRowsAreSplitIntoColumnBlocks) {
  // 100 updates of 1024-wide rows, most to row 3: that row's bucket has
  // about 3 tasks' worth of updates, so it is split into column blocks.
  // Integer values keep every sum exact.
  const int64_t height = 5, width = 1024, n = 100;
  std::vector<int64_t> rows(n);
  for (int64_t i = 0; i < n; ++i) rows[i] = i % 10 == 0 ? i % 5 : 3;
  std::vector<double> values(n * width);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i % 7);
  const std::vector<double> start(height * width, 1.0);
  const std::vector<double> want = Naive(rows, values, width, -2.0, start);
  std::vector<double> serial = start, chunked = start;
  ScatterAddRows<double, SerialPolicy>(rows.data(), n, values.data(), width, -2.0, serial.data(),
                                       height);
  ScatterAddRows<double, ChunkingPolicy<1>>(rows.data(), n, values.data(), width, -2.0,
                                            chunked.data(), height);
  EXPECT_EQ(serial, want);
  EXPECT_EQ(chunked, want);
}

TEST(ColumnBoundary, SharesCoverTheRowAndSplitOnCacheLines) {
  alignas(64) float row[64 + 150];
  for (int64_t offset : {0, 1, 5, 15, 16}) {
    for (int64_t of : {1, 2, 3, 9, 12, 1000}) {
      SCOPED_TRACE(testing::Message() << "offset " << offset << " of " << of);
      EXPECT_EQ(rows_internal::ColumnBoundary(row + offset, 150, 0, of), 0);
      EXPECT_EQ(rows_internal::ColumnBoundary(row + offset, 150, of, of), 150);
      int64_t previous = 0;
      for (int64_t x = 1; x < of; ++x) {
        const int64_t b = rows_internal::ColumnBoundary(row + offset, 150, x, of);
        EXPECT_GE(b, previous) << "x " << x;
        EXPECT_EQ((offset + b) % 16, 0) << "x " << x;
        previous = b;
      }
    }
  }
  // Halves of a row starting on a line: 150 floats touch 10 lines, so the
  // middle boundary is line 5 (column 80); thirds at lines 3 and 6.
  EXPECT_EQ(rows_internal::ColumnBoundary(row, 150, 1, 2), 80);
  EXPECT_EQ(rows_internal::ColumnBoundary(row, 150, 1, 3), 48);
  EXPECT_EQ(rows_internal::ColumnBoundary(row, 150, 2, 3), 96);
}

// Runs ScatterAddRows with `Policy` on a copy of `start`.
template <typename Policy>
std::vector<double> Scattered(const std::vector<int64_t>& rows, const std::vector<double>& values,
                              int64_t width, double scale, std::vector<double> table) {
  ScatterAddRows<double, Policy>(rows.data(), rows.size(), values.data(), width, scale,
                                 table.data(), static_cast<int64_t>(table.size()) / width);
  return table;
}

// Values whose sums round differently by order (1 / (i + 3)).
std::vector<double> OrderSensitiveValues(int64_t n) {
  std::vector<double> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = 1.0 / static_cast<double>(i + 3);
  return values;
}

TEST(ScatterAddRows, EveryIdEqualMatchesTheSerialOrderBitwise) {
  // 5000 updates of one row: more than two tasks' worth (218 updates of
  // 150 elements), so the row is shared by columns among the tasks (chunks
  // of 100 and 3000 updates), each applying every update to its columns in
  // order.
  const int64_t height = 1000, width = 150, n = 5000;
  const std::vector<int64_t> rows(n, 777);
  const std::vector<double> values = OrderSensitiveValues(n * width);
  const std::vector<double> start(height * width, 0.5);
  const std::vector<double> want = Naive(rows, values, width, -0.01, start);
  EXPECT_EQ(Scattered<SerialPolicy>(rows, values, width, -0.01, start), want);
  EXPECT_EQ(Scattered<ChunkingPolicy<100>>(rows, values, width, -0.01, start), want);
  EXPECT_EQ(Scattered<ChunkingPolicy<3000>>(rows, values, width, -0.01, start), want);
}

TEST(ScatterAddRows, DistinctRowsAcrossManyBucketsAndChunks) {
  // 40000 updates of a 100000-row table (9 chunks of positions, 391
  // buckets), mostly distinct rows, every 50th to the last row: whatever
  // the task split, each element gets its updates in order.
  const int64_t height = 100000, width = 3, n = 40000;
  std::vector<int64_t> rows(n);
  for (int64_t i = 0; i < n; ++i) rows[i] = i % 50 == 0 ? height - 1 : (i * 2654435761) % height;
  const std::vector<double> values = OrderSensitiveValues(n * width);
  const std::vector<double> start(height * width, 0.25);
  const std::vector<double> want = Naive(rows, values, width, 0.7, start);
  EXPECT_EQ(Scattered<SerialPolicy>(rows, values, width, 0.7, start), want);
  EXPECT_EQ(Scattered<ChunkingPolicy<1>>(rows, values, width, 0.7, start), want);
  EXPECT_EQ(Scattered<ChunkingPolicy<777>>(rows, values, width, 0.7, start), want);
}

TEST(ScatterAddRows, OneUpdate) {
  const std::vector<double> start = {1, 2, 3, 4, 5, 6};  // [3, 2]
  EXPECT_EQ(Scattered<ChunkingPolicy<1>>({2}, {10, 20}, 2, 0.5, start),
            std::vector<double>({1, 2, 3, 4, 10, 16}));
}

TEST(ScatterAddRows, NothingToDo) {
  std::vector<float> table = {1, 2};
  ScatterAddRows<float, SerialPolicy>(nullptr, 0, nullptr, 2, 1.0f, table.data(), 1);
  const std::vector<int64_t> rows = {0};
  ScatterAddRows<float, SerialPolicy>(rows.data(), 1, nullptr, 0, 1.0f, nullptr, 1);
  EXPECT_EQ(table, std::vector<float>({1, 2}));
}

TEST(GroupRows, GroupsPositionsByRowInOrder) {
  const std::vector<int64_t> rows = {5, 1, 5, 0, 1, 5};
  const RowGroups g = GroupRows(rows.data(), 6);
  EXPECT_EQ(g.order, (std::vector<int64_t>{3, 1, 4, 0, 2, 5}));
  EXPECT_EQ(g.starts, (std::vector<int64_t>{0, 1, 3, 6}));
  EXPECT_EQ(g.size(), 3);
  EXPECT_EQ(GroupRows(rows.data(), 0).size(), 0);
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
