#include "backends/cuda/row_groups.h"

#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace tandem {
namespace cuda {
namespace {

struct Grouped {
  std::vector<int64_t> rows;                 // per group
  std::vector<std::vector<int32_t>> chains;  // per group, following head and next
};

Grouped GroupAll(RowGrouper* grouper, const std::vector<int64_t>& rows) {
  const int32_t n = static_cast<int32_t>(rows.size());
  std::vector<int64_t> out_rows(n, -7);
  std::vector<int32_t> head(n, -7), next(n, -7);
  const int32_t groups = grouper->Group(rows.data(), n, out_rows.data(), head.data(), next.data());
  Grouped g;
  for (int32_t k = 0; k < groups; ++k) {
    g.rows.push_back(out_rows[k]);
    std::vector<int32_t> chain;
    for (int32_t p = head[k]; p >= 0; p = next[p]) {
      chain.push_back(p);
      if (chain.size() > rows.size()) break;  // a cycle would be a bug
    }
    g.chains.push_back(chain);
  }
  return g;
}

TEST(RowGrouper, GroupsInFirstOccurrenceOrderWithPositionsInOrder) {
  RowGrouper grouper;
  const Grouped g = GroupAll(&grouper, {7, 3, 7, 1, 7, 3});
  EXPECT_EQ(g.rows, (std::vector<int64_t>{7, 3, 1}));
  EXPECT_EQ(g.chains, (std::vector<std::vector<int32_t>>{{0, 2, 4}, {1, 5}, {3}}));
}

TEST(RowGrouper, EmptyAndSingle) {
  RowGrouper grouper;
  EXPECT_TRUE(GroupAll(&grouper, {}).rows.empty());
  const Grouped one = GroupAll(&grouper, {0});
  EXPECT_EQ(one.rows, (std::vector<int64_t>{0}));
  EXPECT_EQ(one.chains, (std::vector<std::vector<int32_t>>{{0}}));
}

// Rows that collide in the hash table (multiples of a power of two), one row
// repeated throughout, and random batches against a std::map, reusing one
// grouper across sizes.
TEST(RowGrouper, MatchesAMapOnCollidingRepeatedAndRandomRows) {
  RowGrouper grouper;
  std::mt19937_64 rng(3);
  std::vector<std::vector<int64_t>> cases;
  std::vector<int64_t> strided;
  for (int64_t i = 0; i < 300; ++i) strided.push_back((i % 97) << 20);
  cases.push_back(strided);
  cases.push_back(std::vector<int64_t>(1000, 42));
  for (int n : {5, 64, 4096}) {
    std::vector<int64_t> rows(n);
    for (int64_t& r : rows) r = static_cast<int64_t>(rng() % (2 * n));
    cases.push_back(rows);
  }
  for (const std::vector<int64_t>& rows : cases) {
    SCOPED_TRACE(rows.size());
    std::vector<int64_t> first_order;
    std::map<int64_t, std::vector<int32_t>> want;
    for (size_t p = 0; p < rows.size(); ++p) {
      if (want.count(rows[p]) == 0) first_order.push_back(rows[p]);
      want[rows[p]].push_back(static_cast<int32_t>(p));
    }
    const Grouped g = GroupAll(&grouper, rows);
    ASSERT_EQ(g.rows, first_order);
    for (size_t k = 0; k < g.rows.size(); ++k) EXPECT_EQ(g.chains[k], want[g.rows[k]]);
  }
}

}  // namespace
}  // namespace cuda
}  // namespace tandem
