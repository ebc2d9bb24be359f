#include "backends/common/layout.h"

#include <vector>

#include "backends/common/serial_policy.h"
#include "backends/common/testing_policy.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

std::vector<int> Iota(int n) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}

TEST(Transpose, HandComputedAndChunkedAlike) {
  // [2, 3] -> [3, 2].
  const std::vector<int> x = Iota(6);
  std::vector<int> out(6);
  Transpose<int, ChunkingPolicy<1>>(x.data(), Shape({2, 3}), {1, 0}, out.data());
  EXPECT_EQ(out, (std::vector<int>{0, 3, 1, 4, 2, 5}));
  // [2, 3, 4] by [1, 2, 0]: dims 1 and 2 stay adjacent (one merged run).
  const std::vector<int> y = Iota(24);
  std::vector<int> serial(24), chunked(24);
  Transpose<int, SerialPolicy>(y.data(), Shape({2, 3, 4}), {1, 2, 0}, serial.data());
  Transpose<int, ChunkingPolicy<5>>(y.data(), Shape({2, 3, 4}), {1, 2, 0}, chunked.data());
  EXPECT_EQ(serial, chunked);
  // Out[j, k, i] = x[i, j, k] = i * 12 + j * 4 + k.
  EXPECT_EQ(serial[(2 * 4 + 3) * 2 + 1], 1 * 12 + 2 * 4 + 3);
  // Size-1 dims and the identity.
  std::vector<int> same(24);
  Transpose<int, SerialPolicy>(y.data(), Shape({2, 1, 12}), {1, 0, 2}, same.data());
  EXPECT_EQ(same, y);
}

TEST(Pieces, JoinAndCutAlongAnAxis) {
  ASSERT_OK_AND_ASSIGN(AxisPieces p,
                       ConcatGeometry("concat", {Shape({2, 1, 2}), Shape({2, 2, 2})}, 1));
  const std::vector<int> a = {0, 1, 10, 11};
  const std::vector<int> b = {2, 3, 4, 5, 12, 13, 14, 15};
  std::vector<int> whole(12);
  JoinPieces<int, ChunkingPolicy<1>>(p, {a.data(), b.data()}, whole.data());
  EXPECT_EQ(whole, (std::vector<int>{0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15}));
  // A null piece joins as zeros; a null destination is skipped.
  JoinPieces<int, SerialPolicy>(p, {nullptr, b.data()}, whole.data());
  EXPECT_EQ(whole, (std::vector<int>{0, 0, 2, 3, 4, 5, 0, 0, 12, 13, 14, 15}));
  std::vector<int> cut(8, -1);
  CutPieces<int, ChunkingPolicy<1>>(p, whole.data(), {nullptr, cut.data()});
  EXPECT_EQ(cut, b);
}

}  // namespace
}  // namespace tandem
