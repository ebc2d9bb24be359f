#include "backends/common/box.h"

#include <cstdint>
#include <vector>

#include "backends/common/testing_policy.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "ops/array/shape_fns.h"

namespace tandem {
namespace {

std::vector<int> Iota(int64_t n) {
  std::vector<int> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<int>(i);
  return v;
}

TEST(BoxLoops, CoalescesDimsTheBoxCoversWhole) {
  // [2, 3, 4] keeping rows 1..2 of dim 1, all of dim 2: dims 1 and 2 merge.
  box_internal::BoxLoops l =
      box_internal::MakeBoxLoops(Shape({2, 3, 4}), Box{{0, 1, 0}, Shape({2, 2, 4})});
  EXPECT_EQ(l.dims, DimVector({2, 8}));
  EXPECT_EQ(l.strides, DimVector({12, 1}));
  EXPECT_EQ(l.base, 4);
  EXPECT_EQ(l.num_elements, 16);
  // A whole tensor is one run.
  l = box_internal::MakeBoxLoops(Shape({2, 3, 4}), Box{{0, 0, 0}, Shape({2, 3, 4})});
  EXPECT_EQ(l.dims, DimVector({24}));
  // Rank 0.
  l = box_internal::MakeBoxLoops(Shape(), Box{{}, Shape()});
  EXPECT_EQ(l.dims, DimVector({1}));
  EXPECT_EQ(l.num_elements, 1);
}

template <typename Policy>
void CheckCrop(const Shape& x_shape, const Box& box) {
  SCOPED_TRACE(x_shape.ToString() + " box " + box.shape.ToString());
  const std::vector<int> x = Iota(x_shape.num_elements());
  std::vector<int> out(box.shape.num_elements(), -1);
  ExtractBox<int, Policy>(x.data(), x_shape, box, out.data());
  // Reference: walk the box's indices.
  std::vector<int> want;
  const int rank = x_shape.rank();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t k = 0; k < box.shape.num_elements(); ++k) {
    int64_t off = 0;
    for (int d = 0; d < rank; ++d) off = off * x_shape.dim(d) + box.offsets[d] + idx[d];
    want.push_back(x[off]);
    for (int d = rank - 1; d >= 0 && ++idx[d] == box.shape.dim(d); --d) idx[d] = 0;
  }
  EXPECT_EQ(out, want);

  // InsertBox writes exactly the box back.
  std::vector<int> back(x.size(), -7);
  InsertBox<int, Policy>(out.data(), x_shape, box, back.data());
  int written = 0;
  for (size_t i = 0; i < back.size(); ++i) {
    if (back[i] != -7) {
      EXPECT_EQ(back[i], x[i]) << i;
      ++written;
    }
  }
  EXPECT_EQ(written, box.shape.num_elements());
}

TEST(ExtractAndInsertBox, AgreeWithIndexArithmetic) {
  ASSERT_OK_AND_ASSIGN(Box crop, CropBox("crop_tensor", Shape({1, 3, 8, 8}), {1, 3, 5, 5}, {}));
  CheckCrop<ChunkingPolicy<1>>(Shape({1, 3, 8, 8}), crop);
  CheckCrop<ChunkingPolicy<7>>(Shape({1, 3, 8, 8}), crop);
  ASSERT_OK_AND_ASSIGN(Box slice, SliceBox("slice", Shape({5, 6, 7}), {0, 2}, {1, -4}, {4, 100}));
  CheckCrop<ChunkingPolicy<4>>(Shape({5, 6, 7}), slice);
  ASSERT_OK_AND_ASSIGN(Box rows, SliceBox("slice", Shape({6, 5}), {0}, {2}, {5}));
  CheckCrop<ChunkingPolicy<3>>(Shape({6, 5}), rows);
  CheckCrop<ChunkingPolicy<2>>(Shape(), Box{{}, Shape()});
  ASSERT_OK_AND_ASSIGN(Box empty, SliceBox("slice", Shape({4, 3}), {1}, {2}, {1}));
  CheckCrop<ChunkingPolicy<2>>(Shape({4, 3}), empty);
}

}  // namespace
}  // namespace tandem
