#include "ops/array/shape_fns.h"

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

}  // namespace
}  // namespace tandem
