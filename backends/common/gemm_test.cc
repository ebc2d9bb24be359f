#include "backends/common/gemm.h"

#include <cmath>
#include <vector>

#include "backends/common/serial_policy.h"
#include "backends/common/testing_policy.h"
#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;

std::vector<double> Values(int64_t n, int seed) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = ((i * 37 + seed * 11) % 23) / 7.0 - 1.5;
  return v;
}

// C = alpha * op(A) * op(B) + beta * C, directly.
void NaiveGemm(const GemmArgs<double>& g) {
  for (int64_t i = 0; i < g.m; ++i) {
    for (int64_t j = 0; j < g.n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < g.k; ++p) {
        const double a = g.trans_a ? g.a[p * g.lda + i] : g.a[i * g.lda + p];
        const double b = g.trans_b ? g.b[j * g.ldb + p] : g.b[p * g.ldb + j];
        s += a * b;
      }
      double& c = g.c[i * g.ldc + j];
      c = g.alpha * s + (g.beta == 0 ? 0 : g.beta * c);
    }
  }
}

template <typename Policy>
void CheckBlockedGemm(int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
  SCOPED_TRACE(testing::Message() << m << "x" << n << "x" << k << " ta=" << ta << " tb=" << tb);
  // Leading dims one longer than the rows: submatrices of larger arrays.
  const int64_t lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 1;
  const std::vector<double> a = Values((ta ? k : m) * lda, 1);
  const std::vector<double> b = Values((tb ? n : k) * ldb, 2);
  std::vector<double> want = Values(m * n, 3), got = want;
  GemmArgs<double> g;
  g.trans_a = ta;
  g.trans_b = tb;
  g.m = m;
  g.n = n;
  g.k = k;
  g.alpha = 0.5;
  g.beta = 2;
  g.a = a.data();
  g.lda = lda;
  g.b = b.data();
  g.ldb = ldb;
  g.ldc = n;
  g.c = want.data();
  NaiveGemm(g);
  g.c = got.data();
  BlockedGemm<double, Policy>(g);
  for (int64_t i = 0; i < m * n; ++i) ASSERT_NEAR(got[i], want[i], 1e-9) << i;
}

TEST(BlockedGemm, MatchesNaiveForOddShapesAndTransposes) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      CheckBlockedGemm<SerialPolicy>(1, 1, 1, ta, tb);
      CheckBlockedGemm<SerialPolicy>(5, 7, 3, ta, tb);
      // Crosses every cache block boundary (64 x 256 x 256).
      CheckBlockedGemm<ChunkingPolicy<1>>(67, 259, 300, ta, tb);
    }
  }
}

TEST(BlockedGemm, BetaZeroIgnoresGarbageInC) {
  const float a[] = {1, 2}, b[] = {3, 4};
  float c[] = {NAN};
  GemmArgs<float> g;
  g.m = 1;
  g.n = 1;
  g.k = 2;
  g.a = a;
  g.lda = 2;
  g.b = b;
  g.ldb = 1;
  g.c = c;
  g.ldc = 1;
  BlockedGemm<float, SerialPolicy>(g);
  EXPECT_EQ(c[0], 11);
}

struct BatchCase {
  bool a_batched, b_batched, c_batched, ta, tb;
};

// BatchedGemm against NaiveGemm per batch (summed when C is shared).
template <typename Policy>
void CheckBatched(const BatchCase& bc, int64_t batch, int64_t m, int64_t n, int64_t k) {
  SCOPED_TRACE(testing::Message() << "batched a/b/c " << bc.a_batched << bc.b_batched
                                  << bc.c_batched << " ta=" << bc.ta << " tb=" << bc.tb << " batch "
                                  << batch);
  const int64_t sa = bc.a_batched ? m * k : 0, sb = bc.b_batched ? k * n : 0;
  const int64_t sc = bc.c_batched ? m * n : 0;
  const std::vector<double> a = Values(std::max<int64_t>(1, batch * sa + m * k), 1);
  const std::vector<double> b = Values(std::max<int64_t>(1, batch * sb + k * n), 2);
  const int64_t c_size = (bc.c_batched ? batch : 1) * m * n;
  std::vector<double> want(c_size, 0), got(c_size, -7);
  GemmArgs<double> g;
  g.trans_a = bc.ta;
  g.trans_b = bc.tb;
  g.m = m;
  g.n = n;
  g.k = k;
  g.alpha = 1.5;
  g.lda = bc.ta ? m : k;
  g.ldb = bc.tb ? k : n;
  g.ldc = n;
  for (int64_t i = 0; i < batch; ++i) {
    GemmArgs<double> gi = g;
    gi.a = a.data() + i * sa;
    gi.b = b.data() + i * sb;
    gi.c = want.data() + i * sc;
    gi.beta = 1;
    NaiveGemm(gi);
  }
  g.a = a.data();
  g.b = b.data();
  g.c = got.data();
  ASSERT_OK((BatchedGemm<double, Policy>(g, batch, sa, sb, sc)));
  for (int64_t i = 0; i < c_size; ++i) ASSERT_NEAR(got[i], want[i], 1e-9) << i;
}

TEST(BatchedGemm, EveryBatchLayoutIncludingFoldedOnes) {
  const std::vector<BatchCase> cases = {
      {true, true, true, false, false},    // both batched
      {true, false, true, false, false},   // shared B: folds into one product
      {true, false, true, true, false},    // shared B, A transposed: no fold
      {false, true, true, false, true},    // shared A
      {true, true, false, true, false},    // summed C, foldable
      {true, true, false, false, true},    // summed C, not foldable
      {false, true, false, false, false},  // summed C, shared A
  };
  for (const BatchCase& c : cases) {
    CheckBatched<SerialPolicy>(c, 3, 4, 5, 6);
    CheckBatched<ChunkingPolicy<2>>(c, 3, 4, 5, 6);
    CheckBatched<SerialPolicy>(c, 0, 4, 5, 6);  // empty batch
    CheckBatched<SerialPolicy>(c, 2, 4, 5, 0);  // k == 0: zeros
  }
}

TEST(BatchedGemm, EmptyInnerDimScalesCByBeta) {
  double c[] = {1, 2, 3, 4};
  GemmArgs<double> g;
  g.m = 2;
  g.n = 2;
  g.k = 0;
  g.ldc = 2;
  g.beta = 3;
  g.c = c;
  ASSERT_OK((BatchedGemm<double, SerialPolicy>(g, 1, 0, 0, 4)));
  EXPECT_THAT(c, ElementsAre(3, 6, 9, 12));
}

}  // namespace
}  // namespace tandem
