#include "ops/array/shape_fns.h"

#include <limits>

#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "framework/tensor/tensor.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;

TEST(ShapeValues, DimsAsInt32) {
  EXPECT_THAT(ShapeValues("shape", Shape({1, 3, 5, 5})), IsOkAndHolds(ElementsAre(1, 3, 5, 5)));
  EXPECT_THAT(ShapeValues("shape", Shape()), IsOkAndHolds(ElementsAre()));
  EXPECT_THAT(ShapeValues("shape", Shape({2, int64_t{3} << 31})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'shape': dim 1 of Input [2, 6442450944] does not fit in int32"));
}

TEST(SliceBox, ClampsNumpyStyle) {
  ASSERT_OK_AND_ASSIGN(Box b, SliceBox("slice", Shape({4}), {0}, {0}, {4}));
  EXPECT_EQ(b.shape, Shape({4}));
  EXPECT_THAT(b.offsets, ElementsAre(0));
  // Negative start and end add the dim; out-of-range ends clamp.
  ASSERT_OK_AND_ASSIGN(b, SliceBox("slice", Shape({3, 10}), {1}, {-3}, {-1}));
  EXPECT_EQ(b.shape, Shape({3, 2}));
  EXPECT_THAT(b.offsets, ElementsAre(0, 7));
  ASSERT_OK_AND_ASSIGN(b, SliceBox("slice", Shape({3, 10}), {1, 0}, {-100, 1}, {1000, 1000}));
  EXPECT_EQ(b.shape, Shape({2, 10}));
  EXPECT_THAT(b.offsets, ElementsAre(1, 0));
  // end <= start, or a start past the end: an empty dim.
  ASSERT_OK_AND_ASSIGN(b, SliceBox("slice", Shape({5}), {0}, {3}, {2}));
  EXPECT_EQ(b.shape, Shape({0}));
  ASSERT_OK_AND_ASSIGN(b, SliceBox("slice", Shape({5}), {-1}, {7}, {9}));
  EXPECT_EQ(b.shape, Shape({0}));
  EXPECT_THAT(b.offsets, ElementsAre(5));
  // Unknown dims stay unknown.
  ASSERT_OK_AND_ASSIGN(b, SliceBox("slice", Shape({-1, 4}), {0, 1}, {1, 1}, {2, 3}));
  EXPECT_EQ(b.shape, Shape({-1, 2}));
  EXPECT_THAT(b.offsets, ElementsAre(-1, 1));
}

TEST(SliceBox, BadAttributesAreInvalidArgument) {
  EXPECT_THAT(SliceBox("slice", Shape({4}), {0}, {0, 1}, {4}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'slice': axes, starts and ends must have the same length, got "
                       "1, 2 and 1"));
  EXPECT_THAT(SliceBox("slice", Shape({4, 2}), {2}, {0}, {1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'slice': axis 2 is out of range for Input [4, 2] "
                       "(need -2 <= axis < 2)"));
  EXPECT_THAT(SliceBox("slice", Shape({4, 2}), {1, -1}, {0, 0}, {1, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'slice': axis 1 appears twice in axes [1, -1] for Input [4, 2]"));
}

TEST(CropBox, SizesOffsetsAndMinusOne) {
  ASSERT_OK_AND_ASSIGN(Box b, CropBox("crop_tensor", Shape({1, 3, 8, 8}), {1, 3, 5, 5}, {}));
  EXPECT_EQ(b.shape, Shape({1, 3, 5, 5}));
  EXPECT_THAT(b.offsets, ElementsAre(0, 0, 0, 0));
  ASSERT_OK_AND_ASSIGN(b, CropBox("crop_tensor", Shape({4, 8}), {2, -1}, {1, 3}));
  EXPECT_EQ(b.shape, Shape({2, 5}));
  EXPECT_THAT(b.offsets, ElementsAre(1, 3));
  ASSERT_OK_AND_ASSIGN(b, CropBox("crop_tensor", Shape({4, 8}), {0, -1}, {4, 8}));
  EXPECT_EQ(b.shape, Shape({0, 0}));
  ASSERT_OK_AND_ASSIGN(b, CropBox("crop_tensor", Shape({-1, 8}), {-1, 3}, {}));
  EXPECT_EQ(b.shape, Shape({-1, 3}));
}

TEST(CropBox, TooLargeOrNegativeIsInvalidArgument) {
  EXPECT_THAT(CropBox("crop_tensor", Shape({1, 3, 8, 8}), {1, 9, 8, 8}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'crop_tensor': crop of size 9 at offset 0 exceeds dim 1 of X "
                       "[1, 3, 8, 8]"));
  EXPECT_THAT(CropBox("crop_tensor", Shape({1, 3, 8, 8}), {1, 3, 5, 5}, {0, 0, 4, 0}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'crop_tensor': crop of size 5 at offset 4 exceeds dim 2 of X "
                       "[1, 3, 8, 8]"));
  EXPECT_THAT(CropBox("crop_tensor", Shape({4}), {-1}, {5}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'crop_tensor': crop of size -1 at offset 5 exceeds dim 0 of X [4]"));
  EXPECT_THAT(CropBox("crop_tensor", Shape({4}), {-2}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'crop_tensor': crop of size -2 at offset 0 is invalid for dim 0 of "
                       "X [4]: sizes must be >= 0 or -1, offsets >= 0"));
  EXPECT_THAT(CropBox("crop_tensor", Shape({4}), {1}, {-1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at offset -1 is invalid")));
  EXPECT_THAT(CropBox("crop_tensor", Shape({4}), {1}, {int64_t{1} << 62}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("exceeds dim 0")));
  EXPECT_THAT(CropBox("crop_tensor", Shape({1, 3, 8, 8}), {3, 5, 5}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'crop_tensor': Shape has 3 values but X [1, 3, 8, 8] has rank 4"));
  EXPECT_THAT(CropBox("crop_tensor", Shape({8, 8}), {5, 5}, {1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'crop_tensor': attribute 'offsets' has 1 values but X [8, 8] has "
                       "rank 2"));
}

OpDesc CropOp() {
  OpDesc op;
  op.type = "crop_tensor";
  op.inputs = {{"X", {"data1"}}, {"Shape", {"shape"}}};
  op.outputs = {{"Out", {"out"}}};
  return op;
}

TEST(CropTensorSchema, UsesShapeValuesWhenKnown) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* crop, OpRegistry::Global().Find("crop_tensor"));
  OpDesc op = CropOp();
  ASSERT_OK(crop->Validate(&op));
  const std::map<std::string, std::vector<TensorMeta>> metas = {
      {"X", {{DataType::kFloat32, Shape({1, 3, 8, 8})}}},
      {"Shape", {{DataType::kInt32, Shape({4})}}}};
  InferShapeContext unknown(op, metas);
  ASSERT_OK(crop->infer_shape()(&unknown));
  EXPECT_EQ(unknown.outputs().at("Out")[0],
            (TensorMeta{DataType::kFloat32, Shape({-1, -1, -1, -1})}));

  const Tensor values = Tensor::FromVector<int32_t>(Shape({4}), {1, 3, 5, 5});
  InferShapeContext known(op, metas, {{"Shape", {&values}}});
  ASSERT_OK(crop->infer_shape()(&known));
  EXPECT_EQ(known.outputs().at("Out")[0], (TensorMeta{DataType::kFloat32, Shape({1, 3, 5, 5})}));

  const Tensor too_big = Tensor::FromVector<int32_t>(Shape({4}), {1, 9, 8, 8});
  InferShapeContext bad(op, metas, {{"Shape", {&too_big}}});
  EXPECT_THAT(crop->infer_shape()(&bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'crop_tensor': crop of size 9 at offset 0 exceeds dim 1 of X "
                       "[1, 3, 8, 8]"));

  // Rank from Shape's length when known, else X's.
  InferShapeContext unknown_len(op, {{"X", {{DataType::kFloat32, Shape({2, 2})}}},
                                     {"Shape", {{DataType::kInt32, Shape({-1})}}}});
  ASSERT_OK(crop->infer_shape()(&unknown_len));
  EXPECT_EQ(unknown_len.outputs().at("Out")[0].shape, Shape({-1, -1}));
  InferShapeContext wrong_len(op, {{"X", {{DataType::kFloat32, Shape({2, 2})}}},
                                   {"Shape", {{DataType::kInt32, Shape({3})}}}});
  EXPECT_THAT(crop->infer_shape()(&wrong_len),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Shape has 3 values")));
  InferShapeContext int64_shape(op, {{"X", {{DataType::kFloat32, Shape({2, 2})}}},
                                     {"Shape", {{DataType::kInt64, Shape({2})}}}});
  EXPECT_THAT(crop->infer_shape()(&int64_shape),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'crop_tensor': Shape must be a 1-D int32 tensor, got int64[2]"));
}

TEST(ArraySchemas, ShapeSliceAndGradients) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* shape, OpRegistry::Global().Find("shape"));
  OpDesc s;
  s.type = "shape";
  s.inputs = {{"Input", {"data2"}}};
  s.outputs = {{"Out", {"shape"}}};
  ASSERT_OK(shape->Validate(&s));
  InferShapeContext sctx(s, {{"Input", {{DataType::kBool, Shape({1, 3, 5, 5})}}}});
  ASSERT_OK(shape->infer_shape()(&sctx));
  EXPECT_EQ(sctx.outputs().at("Out")[0], (TensorMeta{DataType::kInt32, Shape({4})}));
  EXPECT_FALSE(shape->grad_maker());

  ASSERT_OK_AND_ASSIGN(const OpSchema* slice, OpRegistry::Global().Find("slice"));
  OpDesc op;
  op.type = "slice";
  op.inputs = {{"Input", {"x"}}};
  op.outputs = {{"Out", {"y"}}};
  op.attrs = {{"axes", std::vector<int64_t>{1}},
              {"starts", std::vector<int64_t>{1}},
              {"ends", std::vector<int64_t>{-1}}};
  ASSERT_OK(slice->Validate(&op));
  InferShapeContext ctx(op, {{"Input", {{DataType::kInt64, Shape({2, 5})}}}});
  ASSERT_OK(slice->infer_shape()(&ctx));
  EXPECT_EQ(ctx.outputs().at("Out")[0], (TensorMeta{DataType::kInt64, Shape({2, 3})}));

  GradContext want_x{{"x"}, [](const std::string&) { return std::nullopt; }};
  ASSERT_OK_AND_ASSIGN(std::vector<OpDesc> grads, slice->grad_maker()(op, want_x));
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type, "slice_grad");
  EXPECT_EQ(grads[0].Output("Input@GRAD"), "x@GRAD");

  ASSERT_OK_AND_ASSIGN(const OpSchema* crop, OpRegistry::Global().Find("crop_tensor"));
  OpDesc c = CropOp();
  ASSERT_OK(crop->Validate(&c));
  GradContext want_data1{{"data1"}, [](const std::string&) { return std::nullopt; }};
  ASSERT_OK_AND_ASSIGN(grads, crop->grad_maker()(c, want_data1));
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type, "crop_tensor_grad");
  EXPECT_EQ(grads[0].Input("Shape"), "shape");
  EXPECT_EQ(grads[0].Output("X@GRAD"), "data1@GRAD");
  GradContext want_shape{{"shape"}, [](const std::string&) { return std::nullopt; }};
  ASSERT_OK_AND_ASSIGN(grads, crop->grad_maker()(c, want_shape));
  EXPECT_TRUE(grads.empty());
}

TEST(ReshapeShape, ZeroCopiesAndMinusOneInfers) {
  EXPECT_THAT(ReshapeShape("reshape", Shape({2, 3}), {3, 2}), IsOkAndHolds(Shape({3, 2})));
  EXPECT_THAT(ReshapeShape("reshape", Shape({2, 3, 4}), {-1}), IsOkAndHolds(Shape({24})));
  EXPECT_THAT(ReshapeShape("reshape", Shape({2, 3, 4}), {0, -1}), IsOkAndHolds(Shape({2, 12})));
  EXPECT_THAT(ReshapeShape("reshape", Shape({5}), {1, 5, 1}), IsOkAndHolds(Shape({1, 5, 1})));
  EXPECT_THAT(ReshapeShape("reshape", Shape(), {1, 1}), IsOkAndHolds(Shape({1, 1})));
  EXPECT_THAT(ReshapeShape("reshape", Shape({0, 4}), {-1, 2}), IsOkAndHolds(Shape({0, 2})));
  // Unknown dims (build time) stay unknown where they matter.
  EXPECT_THAT(ReshapeShape("reshape", Shape({-1, 3, 4}), {0, -1}), IsOkAndHolds(Shape({-1, -1})));
  EXPECT_THAT(ReshapeShape("reshape", Shape({-1, 3, 4}), {-1, 12}), IsOkAndHolds(Shape({-1, 12})));
}

TEST(ReshapeShape, BadShapesNameBothShapesAndCounts) {
  EXPECT_THAT(ReshapeShape("reshape", Shape({2, 3}), {4, 2}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'reshape': cannot reshape X [2, 3] (6 elements) to [4, 2] "
                       "(8 elements)"));
  EXPECT_THAT(ReshapeShape("reshape", Shape({2, 3}), {4, -1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'reshape': cannot reshape X [2, 3] (6 elements) to [4, -1]: 6 "
                       "elements are not a multiple of the other dims' product 4"));
  EXPECT_THAT(ReshapeShape("reshape", Shape({3, 0}), {-1, 0}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the -1 is undefined when the other dims' product is 0")));
  EXPECT_THAT(ReshapeShape("reshape", Shape({6}), {-1, -1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'reshape': attribute shape [-1, -1] has more than one -1"));
  EXPECT_THAT(ReshapeShape("reshape", Shape({6}), {2, -3}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'reshape': attribute shape [2, -3] has invalid dim -3 at index 1 "
                       "(need >= -1)"));
  EXPECT_THAT(ReshapeShape("reshape", Shape({6}), {6, 0}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'reshape': attribute shape [6, 0] has 0 (copy X's dim) at index 1 "
                       "but X [6] has rank 1"));
  EXPECT_THAT(ReshapeShape("reshape", Shape({6}), {int64_t{1} << 40, int64_t{1} << 40}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than 2^63")));
}

TEST(TransposeShape, PermutesAndRejectsNonPermutations) {
  EXPECT_THAT(TransposeShape("transpose", Shape({2, 3, 4}), {2, 0, 1}),
              IsOkAndHolds(Shape({4, 2, 3})));
  EXPECT_THAT(TransposeShape("transpose", Shape(), {}), IsOkAndHolds(Shape()));
  EXPECT_THAT(InversePermutation({2, 0, 1}), ElementsAre(1, 2, 0));
  for (const std::vector<int64_t>& bad :
       {std::vector<int64_t>{0, 0, 1}, std::vector<int64_t>{0, 1}, std::vector<int64_t>{0, 1, 3},
        std::vector<int64_t>{-1, 0, 1}}) {
    EXPECT_THAT(TransposeShape("transpose", Shape({2, 3, 4}), bad),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("is not a permutation of the 3 dims of X [2, 3, 4] (need "
                                   "each of 0..2 once)")));
  }
}

TEST(ConcatGeometry, JoinsAlongAxis) {
  ASSERT_OK_AND_ASSIGN(AxisPieces p,
                       ConcatGeometry("concat", {Shape({2, 3, 4}), Shape({2, 5, 4})}, 1));
  EXPECT_EQ(p.axis, 1);
  EXPECT_EQ(p.whole, Shape({2, 8, 4}));
  EXPECT_EQ(p.outer, 2);
  EXPECT_EQ(p.inner, 4);
  EXPECT_THAT(p.sizes, ElementsAre(3, 5));
  EXPECT_EQ(PieceShape(p, 1), Shape({2, 5, 4}));
  ASSERT_OK_AND_ASSIGN(p, ConcatGeometry("concat", {Shape({2, 3}), Shape({2, 0})}, -1));
  EXPECT_EQ(p.whole, Shape({2, 3}));
  // Unknown dims: the axis dim becomes unknown, others take a known value.
  ASSERT_OK_AND_ASSIGN(p, ConcatGeometry("concat", {Shape({-1, 3}), Shape({4, -1})}, 1));
  EXPECT_EQ(p.whole, Shape({4, -1}));
  EXPECT_EQ(p.inner, 1);
}

TEST(ConcatGeometry, MismatchesNameTheOffendingX) {
  EXPECT_THAT(ConcatGeometry("concat", {Shape({2, 3}), Shape({3, 3})}, 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'concat': X[1] [3, 3] differs from X[0] [2, 3] in dim 0 (only the "
                       "concatenation axis 1 may differ)"));
  EXPECT_THAT(ConcatGeometry("concat", {Shape({2, 3}), Shape({3})}, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'concat': X[1] [3] has rank 1 but X[0] [2, 3] has rank 2"));
  EXPECT_THAT(ConcatGeometry("concat", {Shape({2, 3})}, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'concat': axis 2 is out of range for X[0] [2, 3] (need -2 <= axis "
                       "< 2)"));
  EXPECT_THAT(ConcatGeometry("concat", {}, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, "op 'concat': X is an empty list"));
}

TEST(SplitGeometry, NumOrSections) {
  ASSERT_OK_AND_ASSIGN(AxisPieces p, SplitGeometry("split", Shape({6, 2}), 0, 3, {}));
  EXPECT_THAT(p.sizes, ElementsAre(2, 2, 2));
  EXPECT_EQ(p.outer, 1);
  EXPECT_EQ(p.inner, 2);
  ASSERT_OK_AND_ASSIGN(p, SplitGeometry("split", Shape({2, 6}), -1, 0, {1, -1, 2}));
  EXPECT_THAT(p.sizes, ElementsAre(1, 3, 2));
  EXPECT_EQ(PieceShape(p, 1), Shape({2, 3}));
  ASSERT_OK_AND_ASSIGN(p, SplitGeometry("split", Shape({2, 6}), 1, 0, {6, 0}));
  EXPECT_THAT(p.sizes, ElementsAre(6, 0));
  ASSERT_OK_AND_ASSIGN(p, SplitGeometry("split", Shape({-1, 4}), 0, 2, {}));
  EXPECT_THAT(p.sizes, ElementsAre(-1, -1));
}

TEST(SplitGeometry, BadAttributesAreInvalidArgument) {
  EXPECT_THAT(SplitGeometry("split", Shape({5, 2}), 0, 2, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'split': num 2 does not divide dim 5 for X [5, 2] along axis 0"));
  EXPECT_THAT(SplitGeometry("split", Shape({5}), 0, 0, {2, 2}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'split': sections [2, 2] add up to 4, not dim 5 for X [5] along "
                       "axis 0"));
  EXPECT_THAT(SplitGeometry("split", Shape({5}), 0, 0, {4, -1, 2}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("sections [4, -1, 2] add up to 6 (plus the -1), not dim 5")));
  EXPECT_THAT(SplitGeometry("split", Shape({5}), 0, 0, {-1, -1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("sections [-1, -1] is invalid for X [5] along axis 0")));
  EXPECT_THAT(SplitGeometry("split", Shape({5}), 0, 0, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'split': give either num > 0 or sections, got num 0 and sections []"));
  EXPECT_THAT(SplitGeometry("split", Shape({4}), 0, 2, {2, 2}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("give either num")));
}

// Found by //tests/fuzz:infer_shape_fuzzer (signed overflow, a 2^62-element vector).
TEST(SplitGeometry, HugeAttributesAreInvalidArgumentNotOverflow) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_THAT(SplitGeometry("split", Shape({0, 2}), 0, int64_t{1} << 62, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("num 4611686018427387904 is more pieces than the 65536 a split "
                                 "may make for X [0, 2] along axis 0")));
  EXPECT_THAT(SplitGeometry("split", Shape({-1}), 0, 0, {max, 3}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("add up to more than int64 holds for X [-1] along axis 0")));
}

TEST(ConcatGeometry, AnOverflowingAxisIsInvalidArgument) {
  const int64_t half = int64_t{1} << 62;
  EXPECT_THAT(ConcatGeometry("concat", {Shape({half, 1}), Shape({half, 1})}, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("X[1] [4611686018427387904, 1] makes the concatenated dim 0 "
                                 "overflow int64")));
}

TEST(GradPositions, EmptyMeansAll) {
  EXPECT_THAT(GradPositions("concat_grad", {}, 3), IsOkAndHolds(ElementsAre(0, 1, 2)));
  EXPECT_THAT(GradPositions("concat_grad", {0, 2}, 3), IsOkAndHolds(ElementsAre(0, 2)));
  EXPECT_THAT(GradPositions("concat_grad", {2, 0}, 3),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'concat_grad': attribute grad_positions [2, 0] must be strictly "
                       "increasing positions in [0, 3)"));
  EXPECT_THAT(GradPositions("concat_grad", {3}, 3),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("in [0, 3)")));
}

// Runs `type`'s shape inference on `op` with the given input metas.
absl::StatusOr<std::map<std::string, std::vector<TensorMeta>>> Infer(
    OpDesc op, std::map<std::string, std::vector<TensorMeta>> inputs) {
  ASSIGN_OR_RETURN(const OpSchema* schema, OpRegistry::Global().Find(op.type));
  RETURN_IF_ERROR(schema->Validate(&op));
  InferShapeContext ctx(op, std::move(inputs));
  RETURN_IF_ERROR(schema->infer_shape()(&ctx));
  return ctx.outputs();
}

TensorMeta F32(const Shape& s) { return TensorMeta{DataType::kFloat32, s}; }

TEST(LayoutSchemas, ReshapeAndTranspose) {
  OpDesc r;
  r.type = "reshape";
  r.inputs = {{"X", {"x"}}};
  r.outputs = {{"Out", {"y"}}};
  r.attrs = {{"shape", std::vector<int64_t>{0, -1}}};
  ASSERT_OK_AND_ASSIGN(auto out, Infer(r, {{"X", {F32(Shape({2, 3, 4}))}}}));
  EXPECT_EQ(out.at("Out")[0], F32(Shape({2, 12})));
  ASSERT_OK_AND_ASSIGN(const OpSchema* reshape, OpRegistry::Global().Find("reshape"));
  GradContext want_x{{"x"}, [](const std::string&) { return std::nullopt; }};
  ASSERT_OK_AND_ASSIGN(std::vector<OpDesc> grads, reshape->grad_maker()(r, want_x));
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].DebugString(), "reshape_grad(Out@GRAD=[y@GRAD], X=[x]) -> (X@GRAD=[x@GRAD])");
  EXPECT_THAT(Infer(grads[0], {{"X", {F32(Shape({2, 3, 4}))}}, {"Out@GRAD", {F32(Shape({4, 5}))}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'reshape_grad': Out@GRAD float32[4, 5] does not match X "
                       "float32[2, 3, 4] (same dtype and element count needed)"));

  OpDesc t;
  t.type = "transpose";
  t.inputs = {{"X", {"x"}}};
  t.outputs = {{"Out", {"y"}}};
  t.attrs = {{"axis", std::vector<int64_t>{1, 2, 0}}};
  ASSERT_OK_AND_ASSIGN(out, Infer(t, {{"X", {F32(Shape({2, 3, 4}))}}}));
  EXPECT_EQ(out.at("Out")[0], F32(Shape({3, 4, 2})));
  ASSERT_OK_AND_ASSIGN(const OpSchema* transpose, OpRegistry::Global().Find("transpose"));
  ASSERT_OK_AND_ASSIGN(grads, transpose->grad_maker()(t, want_x));
  ASSERT_EQ(grads.size(), 1u);
  ASSERT_OK_AND_ASSIGN(out, Infer(grads[0], {{"Out@GRAD", {F32(Shape({3, 4, 2}))}}}));
  EXPECT_EQ(out.at("X@GRAD")[0], F32(Shape({2, 3, 4})));
}

TEST(LayoutSchemas, ConcatAndItsPartialGradient) {
  OpDesc c;
  c.type = "concat";
  c.inputs = {{"X", {"a", "b", "c"}}};
  c.outputs = {{"Out", {"y"}}};
  c.attrs = {{"axis", int64_t{1}}};
  ASSERT_OK_AND_ASSIGN(
      auto out, Infer(c, {{"X", {F32(Shape({2, 1})), F32(Shape({2, 2})), F32(Shape({2, 3}))}}}));
  EXPECT_EQ(out.at("Out")[0], F32(Shape({2, 6})));
  EXPECT_THAT(Infer(c, {{"X",
                         {F32(Shape({2, 1})), TensorMeta{DataType::kInt32, Shape({2, 2})},
                          F32(Shape({2, 3}))}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'concat': X[1] is int32 but X[0] is float32"));

  ASSERT_OK_AND_ASSIGN(const OpSchema* concat, OpRegistry::Global().Find("concat"));
  GradContext want_ac{{"a", "c"}, [](const std::string&) { return std::nullopt; }};
  ASSERT_OK_AND_ASSIGN(std::vector<OpDesc> grads, concat->grad_maker()(c, want_ac));
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].DebugString(),
            "concat_grad(Out@GRAD=[y@GRAD], X=[a, b, c]) -> (X@GRAD=[a@GRAD, c@GRAD]) "
            "{axis=1, grad_positions=[0, 2]}");
  ASSERT_OK_AND_ASSIGN(
      out, Infer(grads[0], {{"X", {F32(Shape({2, 1})), F32(Shape({2, 2})), F32(Shape({2, 3}))}},
                            {"Out@GRAD", {F32(Shape({2, 6}))}}}));
  ASSERT_EQ(out.at("X@GRAD").size(), 2u);
  EXPECT_EQ(out.at("X@GRAD")[1], F32(Shape({2, 3})));
  GradContext want_all{{"a", "b", "c"}, [](const std::string&) { return std::nullopt; }};
  ASSERT_OK_AND_ASSIGN(grads, concat->grad_maker()(c, want_all));
  EXPECT_EQ(grads[0].attrs.at("grad_positions"), AttrValue(std::vector<int64_t>{}));
  GradContext want_none{{}, [](const std::string&) { return std::nullopt; }};
  ASSERT_OK_AND_ASSIGN(grads, concat->grad_maker()(c, want_none));
  EXPECT_TRUE(grads.empty());
}

TEST(LayoutSchemas, SplitBindsOneVariablePerPiece) {
  OpDesc s;
  s.type = "split";
  s.inputs = {{"X", {"x"}}};
  s.outputs = {{"Out", {"p0", "p1", "p2"}}};
  s.attrs = {{"axis", int64_t{-1}}, {"sections", std::vector<int64_t>{1, -1, 1}}};
  ASSERT_OK_AND_ASSIGN(auto out, Infer(s, {{"X", {F32(Shape({2, 5}))}}}));
  ASSERT_EQ(out.at("Out").size(), 3u);
  EXPECT_EQ(out.at("Out")[1], F32(Shape({2, 3})));
  OpDesc two = s;
  two.outputs["Out"] = {"p0", "p1"};
  EXPECT_THAT(Infer(two, {{"X", {F32(Shape({2, 5}))}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'split': Out has 2 variables but X [2, 5] is split into 3 pieces"));

  // Only the pieces whose gradients exist feed split_grad; the rest are zeros.
  ASSERT_OK_AND_ASSIGN(const OpSchema* split, OpRegistry::Global().Find("split"));
  ASSERT_OK(split->Validate(&s));
  GradContext ctx{{"x"}, [](const std::string& var) -> std::optional<TensorMeta> {
                    if (var == "p2@GRAD") return F32(Shape({2, 1}));
                    return std::nullopt;
                  }};
  ASSERT_OK_AND_ASSIGN(std::vector<OpDesc> grads, split->grad_maker()(s, ctx));
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].DebugString(),
            "split_grad(Out@GRAD=[p2@GRAD], X=[x]) -> (X@GRAD=[x@GRAD]) {axis=-1, "
            "grad_positions=[2], num=0, sections=[1, -1, 1]}");
  ASSERT_OK_AND_ASSIGN(
      out, Infer(grads[0], {{"X", {F32(Shape({2, 5}))}}, {"Out@GRAD", {F32(Shape({2, 1}))}}}));
  EXPECT_EQ(out.at("X@GRAD")[0], F32(Shape({2, 5})));
  EXPECT_THAT(Infer(grads[0], {{"X", {F32(Shape({2, 5}))}}, {"Out@GRAD", {F32(Shape({2, 3}))}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'split_grad': Out@GRAD[0] is float32[2, 3], expected float32[2, 1]"));
  GradContext none{{"x"}, [](const std::string&) { return std::nullopt; }};
  EXPECT_THAT(split->grad_maker()(s, none),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no gradient")));
}

}  // namespace
}  // namespace tandem
