#include "backends/cuda/region_plan.h"

#include <vector>

#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace cuda {
namespace {

std::vector<int64_t> Dims(const RegionGeometry& g) {
  return std::vector<int64_t>(g.dims, g.dims + g.rank);
}
std::vector<int64_t> Strides(const RegionGeometry& g) {
  return std::vector<int64_t>(g.strides, g.strides + g.rank);
}

// Every element of the region, by brute force over the full tensor,
// against the geometry's index formula.
void ExpectCoversBox(const Shape& full, const Box& box, const RegionGeometry& g) {
  std::vector<int64_t> want;
  for (int64_t i = 0; i < full.num_elements(); ++i) {
    int64_t rest = i;
    bool inside = true;
    for (int d = full.rank() - 1; d >= 0; --d) {
      const int64_t c = rest % full.dim(d);
      rest /= full.dim(d);
      inside = inside && c >= box.offsets[d] && c < box.offsets[d] + box.shape.dim(d);
    }
    if (inside) want.push_back(i);
  }
  std::vector<int64_t> got;
  for (int64_t i = 0; i < g.count; ++i) {
    int64_t rest = i, at = g.offset;
    for (int d = g.rank - 1; d >= 0; --d) {
      at += (rest % g.dims[d]) * g.strides[d];
      rest /= g.dims[d];
    }
    got.push_back(at);
  }
  EXPECT_EQ(got, want);
}

TEST(PlanRegion, MergesContiguousDimsAndDropsOnes) {
  const Shape full({2, 3, 8, 8});
  const Box box{{0, 1, 0, 0}, Shape({2, 2, 8, 8})};  // dims 2, 3 whole: merge
  ASSERT_OK_AND_ASSIGN(RegionGeometry g, PlanRegion("slice", full, box));
  EXPECT_EQ(g.count, 256);
  EXPECT_EQ(g.offset, 64);
  EXPECT_EQ(Dims(g), (std::vector<int64_t>{2, 128}));
  EXPECT_EQ(Strides(g), (std::vector<int64_t>{192, 1}));
  ExpectCoversBox(full, box, g);
}

TEST(PlanRegion, CropOfTheSeedWorkload) {
  const Shape full({1, 3, 8, 8});
  const Box box{{0, 0, 0, 0}, Shape({1, 3, 5, 5})};
  ASSERT_OK_AND_ASSIGN(RegionGeometry g, PlanRegion("crop_tensor", full, box));
  EXPECT_EQ(Dims(g), (std::vector<int64_t>{3, 5, 5}));
  EXPECT_EQ(Strides(g), (std::vector<int64_t>{64, 8, 1}));
  ExpectCoversBox(full, box, g);
}

TEST(PlanRegion, WholeTensorIsOneRun) {
  const Shape full({4, 5, 6});
  const Box box{{0, 0, 0}, full};
  ASSERT_OK_AND_ASSIGN(RegionGeometry g, PlanRegion("slice", full, box));
  EXPECT_EQ(Dims(g), (std::vector<int64_t>{120}));
  EXPECT_EQ(Strides(g), (std::vector<int64_t>{1}));
}

TEST(PlanRegion, ScalarsSingleElementsAndEmpty) {
  ASSERT_OK_AND_ASSIGN(RegionGeometry scalar, PlanRegion("slice", Shape(), Box{{}, Shape()}));
  EXPECT_EQ(scalar.rank, 0);
  EXPECT_EQ(scalar.count, 1);
  EXPECT_EQ(scalar.offset, 0);
  const Shape full({3, 4});
  ASSERT_OK_AND_ASSIGN(RegionGeometry one, PlanRegion("slice", full, Box{{2, 1}, Shape({1, 1})}));
  EXPECT_EQ(one.rank, 0);
  EXPECT_EQ(one.count, 1);
  EXPECT_EQ(one.offset, 9);
  ASSERT_OK_AND_ASSIGN(RegionGeometry empty, PlanRegion("slice", full, Box{{1, 0}, Shape({0, 4})}));
  EXPECT_EQ(empty.count, 0);
}

TEST(PlanRegion, ManyDimsAndRandomBoxes) {
  const Shape full({3, 1, 4, 2, 5});
  for (int64_t a = 0; a < 3; ++a) {
    for (int64_t b = 0; b < 4; ++b) {
      for (int64_t c = 0; c < 5; ++c) {
        const Box box{{a, 0, b, 0, c}, Shape({3 - a, 1, 4 - b, 2, 5 - c})};
        ASSERT_OK_AND_ASSIGN(RegionGeometry g, PlanRegion("slice", full, box));
        ExpectCoversBox(full, box, g);
      }
    }
  }
}

TEST(PlanRegion, TooManySeparateDimsIsUnimplemented) {
  std::vector<int64_t> dims(9, 3), offsets(9, 1), sizes(9, 2);
  const Shape full(dims);
  EXPECT_THAT(PlanRegion("slice", full, Box{offsets, Shape(sizes)}),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("op 'slice' on gpu: the region [2, 2, 2, 2, 2, 2, 2, 2, 2]")));
  std::vector<int64_t> ok_sizes = sizes;
  ok_sizes[8] = 3;  // the last dim whole: it merges, leaving 8
  std::vector<int64_t> ok_offsets = offsets;
  ok_offsets[8] = 0;
  ASSERT_OK_AND_ASSIGN(RegionGeometry g,
                       PlanRegion("slice", full, Box{ok_offsets, Shape(ok_sizes)}));
  EXPECT_EQ(g.rank, 8);
}

// Element i of the transpose reads x at the coordinates of i in the output,
// permuted back.
TEST(PlanTranspose, GathersThePermutedElements) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{2, 3}, {1, 0}},
      {{2, 3, 4}, {0, 2, 1}},
      {{2, 3, 4}, {2, 0, 1}},
      {{2, 3, 4}, {0, 1, 2}},
      {{1, 3, 1, 4}, {3, 2, 1, 0}},
      {{5}, {0}},
      {{}, {}},
      {{2, 3, 4, 5}, {0, 1, 3, 2}},
  };
  for (const auto& [dims, axis] : cases) {
    const Shape x(dims);
    SCOPED_TRACE(x.ToString());
    ASSERT_OK_AND_ASSIGN(RegionGeometry g, PlanTranspose("transpose", x, axis));
    ASSERT_EQ(g.count, x.num_elements());
    std::vector<int64_t> x_strides(x.rank(), 1);
    for (int d = x.rank() - 2; d >= 0; --d) x_strides[d] = x_strides[d + 1] * x.dim(d + 1);
    for (int64_t i = 0; i < g.count; ++i) {
      int64_t rest = i, at = g.offset, want = 0;
      for (int d = g.rank - 1; d >= 0; --d) {
        at += (rest % g.dims[d]) * g.strides[d];
        rest /= g.dims[d];
      }
      rest = i;
      for (int k = x.rank() - 1; k >= 0; --k) {
        want += (rest % x.dim(axis[k])) * x_strides[axis[k]];
        rest /= x.dim(axis[k]);
      }
      EXPECT_EQ(at, want) << i;
    }
  }
  // The identity permutation is one contiguous run.
  ASSERT_OK_AND_ASSIGN(RegionGeometry id, PlanTranspose("transpose", Shape({2, 3, 4}), {0, 1, 2}));
  EXPECT_EQ(id.rank, 1);
}

}  // namespace
}  // namespace cuda
}  // namespace tandem
