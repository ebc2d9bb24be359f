#include "framework/runtime/dependency_graph.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(DependencyGraphTest, ReadAfterWrite) {
  // 0: a = ..; 1: b = f(a); 2: c = g(b)
  DependencyGraph g = BuildDependencyGraph({{{}, {0}}, {{0}, {1}}, {{1}, {2}}});
  EXPECT_THAT(g.preds[0], IsEmpty());
  EXPECT_THAT(g.preds[1], ElementsAre(0));
  EXPECT_THAT(g.preds[2], ElementsAre(1));
  EXPECT_THAT(g.succs[0], ElementsAre(1));
  EXPECT_THAT(g.succs[1], ElementsAre(2));
}

TEST(DependencyGraphTest, IndependentBranchesHaveNoEdges) {
  // 0: a = ..; 1: b = ..; 2: c = f(a); 3: d = g(b); 4: e = c + d
  DependencyGraph g =
      BuildDependencyGraph({{{}, {0}}, {{}, {1}}, {{0}, {2}}, {{1}, {3}}, {{2, 3}, {4}}});
  EXPECT_THAT(g.preds[2], ElementsAre(0));
  EXPECT_THAT(g.preds[3], ElementsAre(1));
  EXPECT_THAT(g.preds[4], ElementsAre(2, 3));
}

TEST(DependencyGraphTest, WriteAfterReadWaitsForEveryReaderSinceTheWrite) {
  // 0: w = ..; 1: x = f(w); 2: y = g(w); 3: w = sgd(w, x) in place; 4: z = h(w)
  DependencyGraph g =
      BuildDependencyGraph({{{}, {0}}, {{0}, {1}}, {{0}, {2}}, {{0, 1}, {0}}, {{0}, {3}}});
  EXPECT_THAT(g.preds[3], ElementsAre(0, 1, 2));  // RAW on w and x, WAR on w (step 2)
  EXPECT_THAT(g.preds[4], ElementsAre(3));        // reads the updated w only
  EXPECT_THAT(g.succs[2], ElementsAre(3));
}

TEST(DependencyGraphTest, WriteAfterWrite) {
  // 0: a = ..; 1: a = .. again; 2: b = f(a)
  DependencyGraph g = BuildDependencyGraph({{{}, {0}}, {{}, {0}}, {{0}, {1}}});
  EXPECT_THAT(g.preds[1], ElementsAre(0));
  EXPECT_THAT(g.preds[2], ElementsAre(1));
}

TEST(DependencyGraphTest, DuplicateAccessesGiveOneEdgeAndNoSelfEdge) {
  // 0: a = ..; 1: a = a + a (reads a twice, writes it)
  DependencyGraph g = BuildDependencyGraph({{{}, {0}}, {{0, 0}, {0, 0}}});
  EXPECT_THAT(g.preds[1], ElementsAre(0));
  EXPECT_THAT(g.succs[1], IsEmpty());
}

TEST(DependencyGraphTest, ReadersAfterAWriteDoNotDependOnEarlierReaders) {
  // 0: a = ..; 1: f(a); 2: g(a) -- two readers, no edge between them
  DependencyGraph g = BuildDependencyGraph({{{}, {0}}, {{0}, {1}}, {{0}, {2}}});
  EXPECT_THAT(g.preds[2], ElementsAre(0));
  EXPECT_THAT(g.succs[0], ElementsAre(1, 2));
}

}  // namespace
}  // namespace tandem
