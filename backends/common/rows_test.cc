#include "backends/common/rows.h"

#include <cstdint>
#include <vector>

#include "backends/common/serial_policy.h"
#include "backends/common/testing_policy.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(FirstOutOfRange, FirstBadPositionOrMinusOne) {
  const std::vector<int64_t> ids = {0, 9, 3, 10, -1};
  EXPECT_EQ(FirstOutOfRange(ids.data(), 3, 10), -1);
  EXPECT_EQ(FirstOutOfRange(ids.data(), 5, 10), 3);
  EXPECT_EQ(FirstOutOfRange(ids.data() + 4, 1, 10), 0);
  EXPECT_EQ(FirstOutOfRange(ids.data(), 0, 0), -1);
}

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
  ScatterAddRows<double, ChunkingPolicy<1>>(rows.data(), n, values.data(), width, -0.3,
                                            ones.data(), height);
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

TEST(ColumnBlock, BlocksCoverTheRowAndSplitOnCacheLines) {
  alignas(64) float row[64 + 150];
  for (int64_t offset : {0, 1, 5, 15, 16}) {
    for (int64_t blocks : {1, 2, 3, 9, 12}) {
      SCOPED_TRACE(testing::Message() << "offset " << offset << " blocks " << blocks);
      int64_t expected_begin = 0;
      for (int64_t k = 0; k < blocks; ++k) {
        const auto [lo, hi] = rows_internal::ColumnBlock(row + offset, 150, k, blocks);
        EXPECT_EQ(lo, expected_begin);
        EXPECT_LE(lo, hi);
        if (k > 0 && lo < 150) {
          EXPECT_EQ((offset + lo) % 16, 0) << "block " << k;
        }
        expected_begin = hi;
      }
      EXPECT_EQ(expected_begin, 150);
    }
  }
}

TEST(ScatterAddRows, NothingToDo) {
  std::vector<float> table = {1, 2};
  ScatterAddRows<float, SerialPolicy>(nullptr, 0, nullptr, 2, 1.0f, table.data(), 1);
  const std::vector<int64_t> rows = {0};
  ScatterAddRows<float, SerialPolicy>(rows.data(), 1, nullptr, 0, 1.0f, nullptr, 1);
  EXPECT_EQ(table, std::vector<float>({1, 2}));
}

}  // namespace
}  // namespace tandem
