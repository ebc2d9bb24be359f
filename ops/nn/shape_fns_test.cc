#include "ops/nn/shape_fns.h"

#include "framework/op/op_schema.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(LookupTableShape, IdsShapePlusDim) {
  const TensorMeta w{DataType::kFloat32, Shape({10, 4})};
  EXPECT_THAT(LookupTableShape("lookup_table", {DataType::kInt64, Shape({2, 3})}, w),
              IsOkAndHolds(Shape({2, 3, 4})));
  EXPECT_THAT(LookupTableShape("lookup_table", {DataType::kInt64, Shape()}, w),
              IsOkAndHolds(Shape({4})));
  EXPECT_THAT(LookupTableShape("lookup_table", {DataType::kInt64, Shape({-1})}, w),
              IsOkAndHolds(Shape({-1, 4})));
}

TEST(LookupTableShape, BadIdsOrTableIsInvalidArgument) {
  const TensorMeta ids{DataType::kInt64, Shape({2})};
  EXPECT_THAT(LookupTableShape("lookup_table", {DataType::kInt32, Shape({2})},
                               {DataType::kFloat32, Shape({10, 4})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'lookup_table': Ids must be int64, got int32"));
  EXPECT_THAT(LookupTableShape("lookup_table", ids, {DataType::kInt64, Shape({10, 4})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'lookup_table': W must be float32 or float64, got int64"));
  EXPECT_THAT(LookupTableShape("lookup_table", ids, {DataType::kFloat32, Shape({10})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'lookup_table': W must be a [rows, dim] table, got [10]"));
}

TEST(PaddingRow, MinusOneIsNoneOtherNegativesCountFromTheEnd) {
  EXPECT_THAT(PaddingRow("lookup_table", -1, 10), IsOkAndHolds(-1));
  EXPECT_THAT(PaddingRow("lookup_table", 0, 10), IsOkAndHolds(0));
  EXPECT_THAT(PaddingRow("lookup_table", 9, 10), IsOkAndHolds(9));
  EXPECT_THAT(PaddingRow("lookup_table", -2, 10), IsOkAndHolds(8));
  EXPECT_THAT(PaddingRow("lookup_table", -10, 10), IsOkAndHolds(0));
  EXPECT_THAT(PaddingRow("lookup_table", 10, 10),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'lookup_table': attribute 'padding_idx' 10 is out of range for "
                       "a table of 10 rows (need -1 for none, or -10 <= padding_idx < 10)"));
  EXPECT_THAT(PaddingRow("lookup_table", -11, 10),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("-11 is out of range")));
}

OpDesc Op(const std::string& type, std::map<std::string, std::vector<std::string>> inputs,
          std::map<std::string, std::vector<std::string>> outputs) {
  OpDesc op;
  op.type = type;
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  return op;
}

GradContext Wanting(std::vector<std::string> wanted) {
  return GradContext{std::move(wanted), [](const std::string&) { return std::nullopt; }};
}

TEST(LookupTableSchema, InferAndSparseGradientMeta) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* fwd, OpRegistry::Global().Find("lookup_table"));
  OpDesc op = Op("lookup_table", {{"Ids", {"ids"}}, {"W", {"w"}}}, {{"Out", {"emb"}}});
  op.attrs["is_sparse"] = true;
  ASSERT_OK(fwd->Validate(&op));
  const TensorMeta w{DataType::kFloat32, Shape({10, 4})};
  InferShapeContext ctx(op, {{"Ids", {{DataType::kInt64, Shape({3})}}}, {"W", {w}}});
  ASSERT_OK(fwd->infer_shape()(&ctx));
  EXPECT_EQ(ctx.outputs().at("Out")[0], (TensorMeta{DataType::kFloat32, Shape({3, 4})}));

  // Ids get no gradient; W's is SelectedRows when is_sparse.
  ASSERT_OK_AND_ASSIGN(std::vector<OpDesc> none, fwd->grad_maker()(op, Wanting({"ids"})));
  EXPECT_TRUE(none.empty());
  ASSERT_OK_AND_ASSIGN(std::vector<OpDesc> grads, fwd->grad_maker()(op, Wanting({"w"})));
  ASSERT_EQ(grads.size(), 1u);
  OpDesc& g = grads[0];
  EXPECT_EQ(g.type, "lookup_table_grad");
  EXPECT_EQ(g.Input("Out@GRAD"), "emb@GRAD");
  EXPECT_EQ(g.Output("W@GRAD"), "w@GRAD");
  ASSERT_OK_AND_ASSIGN(const OpSchema* bwd, OpRegistry::Global().Find(g.type));
  ASSERT_OK(bwd->Validate(&g));
  InferShapeContext gctx(g, {{"Ids", {{DataType::kInt64, Shape({3})}}},
                             {"W", {w}},
                             {"Out@GRAD", {{DataType::kFloat32, Shape({3, 4})}}}});
  ASSERT_OK(bwd->infer_shape()(&gctx));
  EXPECT_EQ(gctx.outputs().at("W@GRAD")[0],
            (TensorMeta{DataType::kFloat32, Shape({10, 4}), /*selected_rows=*/true}));

  InferShapeContext bad(g, {{"Ids", {{DataType::kInt64, Shape({3})}}},
                            {"W", {w}},
                            {"Out@GRAD", {{DataType::kFloat32, Shape({2, 4})}}}});
  EXPECT_THAT(bwd->infer_shape()(&bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'lookup_table_grad': Out@GRAD is float32[2, 4], expected "
                       "float32[3, 4]"));
}

TEST(LookupTableSchema, PaddingIdxCheckedAgainstTheTable) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* fwd, OpRegistry::Global().Find("lookup_table"));
  OpDesc op = Op("lookup_table", {{"Ids", {"ids"}}, {"W", {"w"}}}, {{"Out", {"emb"}}});
  op.attrs["padding_idx"] = int64_t{12};
  ASSERT_OK(fwd->Validate(&op));
  InferShapeContext ctx(op, {{"Ids", {{DataType::kInt64, Shape({3})}}},
                             {"W", {{DataType::kFloat32, Shape({10, 4})}}}});
  EXPECT_THAT(fwd->infer_shape()(&ctx),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'padding_idx' 12")));
}

TEST(L2NormalizeSchema, AxisCheckedAndGradientReadsOut) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* fwd, OpRegistry::Global().Find("l2_normalize"));
  OpDesc op = Op("l2_normalize", {{"X", {"x"}}}, {{"Out", {"y"}}});
  op.attrs["axis"] = int64_t{2};
  ASSERT_OK(fwd->Validate(&op));
  InferShapeContext ctx(op, {{"X", {{DataType::kFloat64, Shape({2, 3})}}}});
  EXPECT_THAT(fwd->infer_shape()(&ctx),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'l2_normalize': axis 2 is out of range for X [2, 3] "
                       "(need -2 <= axis < 2)"));

  ASSERT_OK_AND_ASSIGN(std::vector<OpDesc> grads, fwd->grad_maker()(op, Wanting({"x"})));
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type, "l2_normalize_grad");
  EXPECT_EQ(grads[0].Input("X"), "x");
  EXPECT_EQ(grads[0].Input("Out"), "y");
  EXPECT_EQ(grads[0].Input("Out@GRAD"), "y@GRAD");
  EXPECT_EQ(grads[0].Output("X@GRAD"), "x@GRAD");
  EXPECT_EQ(std::get<int64_t>(grads[0].attrs.at("axis")), 2);
}

TEST(CheckDropoutProb, ZeroToOne) {
  EXPECT_OK(CheckDropoutProb("dropout", 0));
  EXPECT_OK(CheckDropoutProb("dropout", 1));
  EXPECT_THAT(CheckDropoutProb("dropout", 1.5),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'dropout': attribute dropout_prob is 1.5, need 0 <= dropout_prob <= 1"));
  EXPECT_THAT(CheckDropoutProb("dropout", -0.1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is -0.1")));
}

// A validated conv2d op (attribute defaults filled) with `attrs` set.
OpDesc ConvOp(AttrMap attrs) {
  OpDesc op = Op("conv2d", {{"Input", {"x"}}, {"Filter", {"w"}}}, {{"Output", {"y"}}});
  op.attrs = std::move(attrs);
  EXPECT_OK(OpRegistry::Global().Find("conv2d").value()->Validate(&op));
  return op;
}

TEST(Conv2DShape, OutputSizeWithStridePaddingDilationGroups) {
  ASSERT_OK_AND_ASSIGN(Conv2DParams p, ReadConv2DParams(ConvOp({})));
  ASSERT_OK_AND_ASSIGN(Conv2DGeometry g,
                       Conv2DShape("conv2d", Shape({2, 3, 5, 5}), Shape({4, 3, 3, 3}), p));
  EXPECT_EQ(g.output, Shape({2, 4, 3, 3}));
  ASSERT_OK_AND_ASSIGN(p, ReadConv2DParams(ConvOp({{"strides", std::vector<int64_t>{2, 1}},
                                                   {"paddings", std::vector<int64_t>{1, 0}},
                                                   {"dilations", std::vector<int64_t>{1, 2}},
                                                   {"groups", int64_t{2}}})));
  EXPECT_EQ(p.stride_h, 2);
  EXPECT_EQ(p.dilation_w, 2);
  // oh = (7 + 2 - 3) / 2 + 1 = 4; ow = (8 - (2 * 2 + 1)) / 1 + 1 = 4.
  ASSERT_OK_AND_ASSIGN(g, Conv2DShape("conv2d", Shape({1, 4, 7, 8}), Shape({6, 2, 3, 3}), p));
  EXPECT_EQ(g.output, Shape({1, 6, 4, 4}));
  EXPECT_EQ(g.kh, 3);
  // Unknown batch at build time.
  ASSERT_OK_AND_ASSIGN(g, Conv2DShape("conv2d", Shape({-1, 4, 7, 8}), Shape({6, 2, 3, 3}), p));
  EXPECT_EQ(g.output, Shape({-1, 6, 4, 4}));
}

TEST(Conv2DShape, BadShapesAndAttrsAreInvalidArgument) {
  ASSERT_OK_AND_ASSIGN(Conv2DParams p, ReadConv2DParams(ConvOp({})));
  EXPECT_THAT(Conv2DShape("conv2d", Shape({2, 3, 5}), Shape({4, 3, 3, 3}), p),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'conv2d': Input must be 4-D [N, C, H, W], got [2, 3, 5]"));
  EXPECT_THAT(Conv2DShape("conv2d", Shape({2, 3, 5, 5}), Shape({4, 2, 3, 3}), p),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'conv2d': Input [2, 3, 5, 5] and Filter [4, 2, 3, 3] with groups 1: "
                       "Input's channels must equal Filter.dim(1) * groups"));
  EXPECT_THAT(Conv2DShape("conv2d", Shape({2, 3, 2, 5}), Shape({4, 3, 3, 3}), p),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the (dilated) filter is larger than the padded input")));
  EXPECT_THAT(Conv2DShape("conv2d", Shape({2, 3, 0, 5}), Shape({4, 3, 3, 3}), p),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must not be empty")));
  p.groups = 3;
  EXPECT_THAT(Conv2DShape("conv2d", Shape({2, 3, 5, 5}), Shape({4, 1, 3, 3}), p),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Filter.dim(0) must be a multiple of groups")));
  EXPECT_THAT(ReadConv2DParams(ConvOp({{"strides", std::vector<int64_t>{0, 1}}})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'conv2d': attribute strides [0, 1] must be two values (height, "
                       "width) >= 1"));
  EXPECT_THAT(ReadConv2DParams(ConvOp({{"paddings", std::vector<int64_t>{1}}})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("attribute paddings [1] must be two values")));
  EXPECT_THAT(ReadConv2DParams(ConvOp({{"groups", int64_t{0}}})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'conv2d': attribute groups is 0, need >= 1"));
}

TEST(Conv2DShape, HugeAttributesAndDimsAreErrorsNotOverflow) {
  ASSERT_OK_AND_ASSIGN(
      Conv2DParams p,
      ReadConv2DParams(ConvOp({{"dilations", std::vector<int64_t>{int64_t{1} << 62, 1}}})));
  // The dilated window (2^62 * 2 + 1, past int64) is larger than the input: no output rows.
  EXPECT_THAT(Conv2DShape("conv2d", Shape({1, 1, 5, 5}), Shape({1, 1, 3, 3}), p),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the (dilated) filter is larger than the padded input")));
  ASSERT_OK_AND_ASSIGN(
      p, ReadConv2DParams(ConvOp({{"paddings", std::vector<int64_t>{int64_t{1} << 62, 0}}})));
  // (5 + 2^63 - 1) / 1 + 1 does not fit in int64.
  EXPECT_THAT(Conv2DShape("conv2d", Shape({1, 1, 5, 5}), Shape({1, 1, 1, 1}), p),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'conv2d': the output height of an input height 5 with padding "
                       "4611686018427387904, window 1, dilation 1 and stride 1 does not fit in "
                       "int64"));
  // An unknown filter height leaves the output height unknown whatever the attributes.
  ASSERT_OK_AND_ASSIGN(Conv2DGeometry g,
                       Conv2DShape("conv2d", Shape({1, 1, 5, 5}), Shape({1, 1, -1, 1}), p));
  EXPECT_EQ(g.output, Shape({1, 1, -1, 5}));
}

// A validated pool2d op with `attrs` set.
OpDesc PoolOp(AttrMap attrs) {
  OpDesc op = Op("pool2d", {{"X", {"x"}}}, {{"Out", {"y"}}});
  op.attrs = std::move(attrs);
  EXPECT_OK(OpRegistry::Global().Find("pool2d").value()->Validate(&op));
  return op;
}

TEST(Pool2DShape, WindowsAndGlobalPooling) {
  ASSERT_OK_AND_ASSIGN(Pool2DParams p,
                       ReadPool2DParams(PoolOp({{"ksize", std::vector<int64_t>{3, 2}},
                                                {"strides", std::vector<int64_t>{2, 2}},
                                                {"paddings", std::vector<int64_t>{1, 0}}})));
  EXPECT_TRUE(p.max);
  // oh = (5 + 2 - 3) / 2 + 1 = 3, ow = (6 - 2) / 2 + 1 = 3.
  ASSERT_OK_AND_ASSIGN(Pool2DGeometry g, Pool2DShape("pool2d", Shape({2, 3, 5, 6}), p));
  EXPECT_EQ(g.out, Shape({2, 3, 3, 3}));
  ASSERT_OK_AND_ASSIGN(
      p,
      ReadPool2DParams(PoolOp({{"pooling_type", std::string("avg")}, {"global_pooling", true}})));
  EXPECT_FALSE(p.max);
  ASSERT_OK_AND_ASSIGN(g, Pool2DShape("pool2d", Shape({2, 3, 5, 6}), p));
  EXPECT_EQ(g.out, Shape({2, 3, 1, 1}));
  EXPECT_EQ(g.p.kh, 5);
  EXPECT_EQ(g.p.kw, 6);
}

TEST(Pool2DShape, BadAttrsAreInvalidArgument) {
  EXPECT_THAT(ReadPool2DParams(PoolOp(
                  {{"pooling_type", std::string("min")}, {"ksize", std::vector<int64_t>{2, 2}}})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'pool2d': attribute pooling_type \"min\" must be \"max\" or \"avg\""));
  EXPECT_THAT(ReadPool2DParams(PoolOp({})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("attribute ksize [] must be two values")));
  EXPECT_THAT(ReadPool2DParams(PoolOp({{"ksize", std::vector<int64_t>{2, 2}},
                                       {"paddings", std::vector<int64_t>{2, 0}}})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'pool2d': paddings [2, 0] must be smaller than ksize [2, 2]"));
  ASSERT_OK_AND_ASSIGN(Pool2DParams p,
                       ReadPool2DParams(PoolOp({{"ksize", std::vector<int64_t>{4, 4}}})));
  EXPECT_THAT(Pool2DShape("pool2d", Shape({1, 1, 3, 8}), p),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'pool2d': ksize [4, 4] with paddings [0, 0] does not fit X "
                       "[1, 1, 3, 8]"));
  EXPECT_THAT(Pool2DShape("pool2d", Shape({1, 3, 8}), p),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'pool2d': X must be 4-D [N, C, H, W], got [1, 3, 8]"));
}

TEST(LayerNormShape, RowsAndColumns) {
  ASSERT_OK_AND_ASSIGN(LayerNormDims d, LayerNormShape("layer_norm", Shape({2, 3, 4}), 1));
  EXPECT_EQ(d.rows, 2);
  EXPECT_EQ(d.cols, 12);
  ASSERT_OK_AND_ASSIGN(d, LayerNormShape("layer_norm", Shape({2, 3, 4}), -1));
  EXPECT_EQ(d.axis, 2);
  EXPECT_EQ(d.rows, 6);
  ASSERT_OK_AND_ASSIGN(d, LayerNormShape("layer_norm", Shape({-1, 8}), 1));
  EXPECT_EQ(d.rows, -1);
  EXPECT_EQ(d.cols, 8);
  EXPECT_THAT(LayerNormShape("layer_norm", Shape({2, 0}), 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'layer_norm': X [2, 0] has no elements to normalize from dim 1"));
  EXPECT_THAT(LayerNormShape("layer_norm", Shape({2, 3}), 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'layer_norm': axis 2 is out of range for X [2, 3] (need -2 <= axis "
                       "< 2)"));
}

TEST(AttentionShape, HeadsScaleAndUnknownDims) {
  ASSERT_OK_AND_ASSIGN(AttentionDims d, AttentionShape("self_attention", Shape({2, 5, 24}), 2, 0));
  EXPECT_EQ(d.width, 8);
  EXPECT_EQ(d.head_dim, 4);
  EXPECT_DOUBLE_EQ(d.scale, 0.5);
  EXPECT_EQ(d.OutShape(), Shape({2, 5, 8}));
  EXPECT_EQ(d.LseShape(), Shape({2, 2, 5}));
  ASSERT_OK_AND_ASSIGN(d, AttentionShape("self_attention", Shape({-1, -1, 24}), 1, 0.25));
  EXPECT_EQ(d.OutShape(), Shape({-1, -1, 8}));
  EXPECT_DOUBLE_EQ(d.scale, 0.25);
  ASSERT_OK_AND_ASSIGN(d, AttentionShape("self_attention", Shape({1, 2, -1}), 3, 0));
  EXPECT_EQ(d.head_dim, -1);
  EXPECT_THAT(AttentionShape("self_attention", Shape({1, 2, 0}), 1, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'self_attention': QKV [1, 2, 0]: the last dim must be 3 * width with "
                       "width a positive multiple of num_heads 1, got 0"));
  EXPECT_THAT(AttentionShape("self_attention", Shape({1, 2, 6}), 0, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'self_attention': num_heads must be at least 1, got 0"));
  // A huge head count (a program file's attribute) is refused, not overflowed.
  EXPECT_THAT(AttentionShape("self_attention", Shape({1, 2, 6}), int64_t{1} << 62, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("positive multiple of num_heads 4611686018427387904, got 6")));
}

TEST(NnSchemas, DropoutMaskIsBoolAndGradientReadsIt) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* fwd, OpRegistry::Global().Find("dropout"));
  OpDesc op = Op("dropout", {{"X", {"x"}}}, {{"Out", {"y"}}, {"Mask", {"m"}}});
  ASSERT_OK(fwd->Validate(&op));
  InferShapeContext ctx(op, {{"X", {{DataType::kFloat32, Shape({2, 3})}}}});
  ASSERT_OK(fwd->infer_shape()(&ctx));
  EXPECT_EQ(ctx.outputs().at("Mask")[0], (TensorMeta{DataType::kBool, Shape({2, 3})}));
  ASSERT_OK_AND_ASSIGN(std::vector<OpDesc> grads, fwd->grad_maker()(op, Wanting({"x"})));
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].DebugString(),
            "dropout_grad(Mask=[m], Out@GRAD=[y@GRAD]) -> (X@GRAD=[x@GRAD]) "
            "{dropout_prob=0.5, is_test=false}");
  op.attrs["dropout_prob"] = 2.0;
  InferShapeContext bad(op, {{"X", {{DataType::kFloat32, Shape({2, 3})}}}});
  EXPECT_THAT(fwd->infer_shape()(&bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dropout_prob is 2")));
}

TEST(NnSchemas, Conv2DGradientOutputsOnlyWhatIsWanted) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* fwd, OpRegistry::Global().Find("conv2d"));
  OpDesc op = ConvOp({{"paddings", std::vector<int64_t>{1, 1}}});
  InferShapeContext ctx(op, {{"Input", {{DataType::kFloat32, Shape({-1, 3, 8, 8})}}},
                             {"Filter", {{DataType::kFloat32, Shape({16, 3, 3, 3})}}}});
  ASSERT_OK(fwd->infer_shape()(&ctx));
  EXPECT_EQ(ctx.outputs().at("Output")[0].shape, Shape({-1, 16, 8, 8}));
  InferShapeContext mixed(op, {{"Input", {{DataType::kFloat32, Shape({1, 3, 8, 8})}}},
                               {"Filter", {{DataType::kFloat64, Shape({16, 3, 3, 3})}}}});
  EXPECT_THAT(fwd->infer_shape()(&mixed),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'conv2d': Filter is float64 but Input is float32"));
  ASSERT_OK_AND_ASSIGN(std::vector<OpDesc> grads, fwd->grad_maker()(op, Wanting({"w"})));
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].outputs.size(), 1u);
  EXPECT_EQ(grads[0].Output("Filter@GRAD"), "w@GRAD");
  EXPECT_EQ(grads[0].attrs, op.attrs);
}

TEST(NnSchemas, LayerNormChecksScaleAndBias) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* fwd, OpRegistry::Global().Find("layer_norm"));
  OpDesc op = Op("layer_norm", {{"X", {"x"}}, {"Scale", {"s"}}, {"Bias", {"b"}}},
                 {{"Y", {"y"}}, {"Mean", {"mu"}}, {"Variance", {"var"}}});
  ASSERT_OK(fwd->Validate(&op));
  const TensorMeta x{DataType::kFloat32, Shape({2, 3, 4})};
  const TensorMeta d12{DataType::kFloat32, Shape({12})};
  InferShapeContext ctx(op, {{"X", {x}}, {"Scale", {d12}}, {"Bias", {d12}}});
  ASSERT_OK(fwd->infer_shape()(&ctx));
  EXPECT_EQ(ctx.outputs().at("Y")[0], x);
  EXPECT_EQ(ctx.outputs().at("Variance")[0], (TensorMeta{DataType::kFloat32, Shape({2})}));
  InferShapeContext bad(
      op, {{"X", {x}}, {"Scale", {d12}}, {"Bias", {{DataType::kFloat32, Shape({4})}}}});
  EXPECT_THAT(fwd->infer_shape()(&bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'layer_norm': Bias is float32[4], expected float32[12] for X "
                       "[2, 3, 4] normalized from dim 1"));

  ASSERT_OK_AND_ASSIGN(std::vector<OpDesc> grads, fwd->grad_maker()(op, Wanting({"x", "b"})));
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].DebugString(),
            "layer_norm_grad(Mean=[mu], Scale=[s], Variance=[var], X=[x], Y@GRAD=[y@GRAD]) -> "
            "(Bias@GRAD=[b@GRAD], X@GRAD=[x@GRAD]) {begin_norm_axis=1, epsilon=1e-05}");
  OpDesc no_scale =
      Op("layer_norm", {{"X", {"x"}}}, {{"Y", {"y"}}, {"Mean", {"mu"}}, {"Variance", {"var"}}});
  ASSERT_OK(fwd->Validate(&no_scale));
  ASSERT_OK_AND_ASSIGN(grads, fwd->grad_maker()(no_scale, Wanting({"x"})));
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].inputs.count("Scale"), 0u);
}

}  // namespace
}  // namespace tandem
