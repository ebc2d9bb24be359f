#include "tests/fuzz/infer_shape_fuzz_input.h"

#include <cmath>
#include <string>

#include "framework/program/program_builder.h"
#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

FuzzOp Decode(const std::string& bytes) {
  return DecodeFuzzOp(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

// The metas of `op`'s inputs as the block declares them.
std::map<std::string, std::vector<TensorMeta>> InputMetas(const Block& block, const OpDesc& op) {
  std::map<std::string, std::vector<TensorMeta>> metas;
  for (const auto& [arg, vars] : op.inputs) {
    for (const std::string& v : vars) {
      const VarDesc* d = block.FindVar(v);
      metas[arg].push_back({d->dtype, d->shape, d->kind == VarKind::kSelectedRows});
    }
  }
  return metas;
}

TEST(InferShapeFuzzInput, AnEncodedOpDecodesToItself) {
  ProgramBuilder b;
  Var x = b.Data("x", DataType::kFloat32, Shape({-1, 6, 1 << 20}));
  Var y = b.Data("y", DataType::kFloat32, Shape({-1, 6, 3}));
  Var ids = b.Data("ids", DataType::kInt64, Shape({7}));
  std::vector<Var> parts = b.SplitSections(b.Concat({x, y, x}, 2), {1, 2, 3}, 1);
  b.Transpose(parts[2], {2, 0, 1});
  b.Embedding(ids, {1000, 16}, /*is_sparse=*/true);
  b.Scale(parts[0], 0.25, -1.5);
  ASSERT_OK(b.status());
  const Block& block = b.main_program().block();
  for (const OpDesc& op : block.ops()) {
    SCOPED_TRACE(op.type);
    const std::map<std::string, std::vector<TensorMeta>> metas = InputMetas(block, op);
    FuzzOp decoded = Decode(EncodeFuzzOp(op, metas));
    ASSERT_NE(decoded.schema, nullptr);
    EXPECT_EQ(decoded.op.type, op.type);
    EXPECT_EQ(decoded.op.attrs, op.attrs);  // the builder filled in every default
    EXPECT_EQ(decoded.inputs, metas);
    for (const auto& [arg, vars] : op.outputs) {
      EXPECT_EQ(decoded.op.outputs[arg].size(), vars.size()) << arg;
    }
    for (const auto& [arg, tensors] : decoded.values) {
      for (const Tensor& t : tensors) EXPECT_FALSE(t.initialized()) << arg;
    }
  }
}

TEST(InferShapeFuzzInput, ATypeAloneIsTheOpWithItsDefaults) {
  FuzzOp scale = Decode("scale\n");
  ASSERT_NE(scale.schema, nullptr);
  EXPECT_EQ(scale.op.type, "scale");
  EXPECT_TRUE(scale.op.attrs.empty());  // defaults, filled in by Validate
  ASSERT_EQ(scale.inputs.at("X").size(), 1);
  EXPECT_EQ(scale.inputs.at("X")[0], (TensorMeta{DataType::kFloat32, Shape(), false}));
  EXPECT_THAT(scale.op.outputs.at("Out"), ::testing::ElementsAre("Out.out.0"));
  ASSERT_OK(scale.schema->Validate(&scale.op));
}

TEST(InferShapeFuzzInput, AnUnknownTypePicksARegisteredOp) {
  FuzzOp op = Decode("no such op\n\x01\x02");
  ASSERT_NE(op.schema, nullptr);
  EXPECT_TRUE(OpRegistry::Global().Find(op.op.type).ok()) << op.op.type;
  EXPECT_EQ(Decode("no such op").op.type, op.op.type);  // by the type's hash
}

TEST(InferShapeFuzzInput, SmallIntegerInputsMayCarryValues) {
  // crop_tensor: inputs X and Shape, output Out, attribute offsets.
  const std::string counts("\0\0\0", 3);        // each argument once
  const std::string x("\x00\x02\x03\x03", 4);   // float32, rank 2, dims 4 and 4 (kDims[3])
  const std::string shape("\x02\x01\x00", 3);   // int32, rank 1, dim 2 (kDims[0])
  const std::string values("\x01\x04\x05", 3);  // Shape's values follow: 3 and 4 (kInts)
  FuzzOp op = Decode("crop_tensor\n" + counts + x + shape + values + std::string("\0", 1));
  ASSERT_EQ(op.op.type, "crop_tensor");
  EXPECT_EQ(op.inputs.at("X")[0], (TensorMeta{DataType::kFloat32, Shape({4, 4}), false}));
  EXPECT_EQ(op.inputs.at("Shape")[0], (TensorMeta{DataType::kInt32, Shape({2}), false}));
  const Tensor* sizes = op.ValuePointers().at("Shape")[0];
  ASSERT_NE(sizes, nullptr);
  EXPECT_EQ(sizes->ToVector<int32_t>(), (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(op.ValuePointers().at("X")[0], nullptr);  // float: never values
  EXPECT_TRUE(op.op.attrs.empty());                   // offsets: its default
}

}  // namespace
}  // namespace tandem
