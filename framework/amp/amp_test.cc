// ApplyAmp on hand-built blocks (the rewrite reads no op schemas): which ops
// go low precision, the casts inserted and shared, what is left alone. The
// training runs in tests/training/amp_training_test.cc.
#include "framework/amp/amp.h"

#include <string>
#include <vector>

#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;

void Declare(Block* b, const std::string& name, DataType dtype, const Shape& shape,
             bool parameter = false) {
  VarDesc v;
  v.name = name;
  v.dtype = dtype;
  v.shape = shape;
  v.persistable = v.is_parameter = parameter;
  ASSERT_OK(b->AddVar(v));
}

OpDesc Op(const std::string& type, std::map<std::string, std::vector<std::string>> in,
          const std::string& out, const std::string& device = "") {
  OpDesc op;
  op.type = type;
  op.inputs = std::move(in);
  op.outputs["Out"] = {out};
  op.op_device = device;
  return op;
}

// "type(inputs) -> outputs" of every op, for compact expectations.
std::vector<std::string> Listing(const Block& b) {
  std::vector<std::string> lines;
  for (const OpDesc& op : b.ops()) {
    std::string line = op.type + "(";
    for (const auto& [arg, names] : op.inputs) {
      for (const std::string& n : names) line += n + ",";
    }
    line += ")->" + op.Output("Out");
    lines.push_back(line);
  }
  return lines;
}

Program TwoLayers() {
  Program p;
  Block* b = &p.block();
  Declare(b, "x", DataType::kFloat32, Shape({4, 3}));
  Declare(b, "w", DataType::kFloat32, Shape({3, 3}), /*parameter=*/true);
  Declare(b, "ids", DataType::kInt64, Shape({4}));
  Declare(b, "x64", DataType::kFloat64, Shape({4, 3}));
  for (const char* v : {"y", "z", "u", "v"}) Declare(b, v, DataType::kFloat32, Shape({4, 3}));
  Declare(b, "e", DataType::kFloat32, Shape({4, 3}));
  Declare(b, "d", DataType::kFloat64, Shape({4, 3}));
  b->AppendOp(Op("mul", {{"X", {"x"}}, {"Y", {"w"}}}, "y", "gpu:0"));
  b->AppendOp(Op("sigmoid", {{"X", {"y"}}}, "z"));  // rounds: not passed through
  b->AppendOp(Op("mul", {{"X", {"z"}}, {"Y", {"w"}}}, "u"));
  b->AppendOp(Op("mul", {{"X", {"y"}}, {"Y", {"w"}}}, "v"));
  b->AppendOp(Op("lookup_table", {{"Ids", {"ids"}}, {"W", {"w"}}}, "e"));
  b->AppendOp(Op("mul", {{"X", {"x64"}}, {"Y", {"x64"}}}, "d"));  // float64: left alone
  return p;
}

TEST(Amp, CastsEachFloat32InputOnceAndReusesLowPrecisionOutputs) {
  Program p = TwoLayers();
  ASSERT_OK_AND_ASSIGN(AmpReport report, ApplyAmp(AmpOptions{}, &p));
  EXPECT_THAT(report.low_precision_ops, ElementsAre("mul #0", "mul #2", "mul #3"));
  EXPECT_THAT(
      Listing(p.block()),
      ElementsAre("cast(x,)->x.cast_bfloat16", "cast(w,)->w.cast_bfloat16",
                  "mul(x.cast_bfloat16,w.cast_bfloat16,)->y.cast_bfloat16",
                  "cast(y.cast_bfloat16,)->y",  // back to float32 for sigmoid
                  "sigmoid(y,)->z", "cast(z,)->z.cast_bfloat16",
                  "mul(z.cast_bfloat16,w.cast_bfloat16,)->u.cast_bfloat16",  // w's cast shared
                  "cast(u.cast_bfloat16,)->u",
                  "mul(y.cast_bfloat16,w.cast_bfloat16,)->v.cast_bfloat16",  // y: no round trip
                  "cast(v.cast_bfloat16,)->v", "lookup_table(ids,w,)->e", "mul(x64,x64,)->d"));
  EXPECT_EQ(report.casts, 6);
  const Block& b = p.block();
  EXPECT_EQ(b.FindVar("w.cast_bfloat16")->dtype, DataType::kBFloat16);
  EXPECT_FALSE(b.FindVar("w.cast_bfloat16")->persistable);  // made again every step
  EXPECT_EQ(b.FindVar("y.cast_bfloat16")->shape, Shape({4, 3}));
  EXPECT_EQ(b.FindVar("w")->dtype, DataType::kFloat32);  // the master weight
  EXPECT_EQ(b.FindVar("ids")->dtype, DataType::kInt64);
  // Casts run where their consumer or producer runs.
  EXPECT_EQ(b.ops()[0].op_device, "gpu:0");
  EXPECT_EQ(b.ops()[3].op_device, "gpu:0");
  EXPECT_EQ(b.ops()[5].op_device, "");
}

TEST(Amp, Float16AndAVariableWrittenAgainGetsAFreshCast) {
  Program p;
  Block* b = &p.block();
  Declare(b, "x", DataType::kFloat32, Shape({2, 2}));
  Declare(b, "y", DataType::kFloat32, Shape({2, 2}));
  b->AppendOp(Op("matmul", {{"X", {"x"}}, {"Y", {"x"}}}, "y"));
  b->AppendOp(Op("scale", {{"X", {"y"}}}, "x"));  // x written again
  b->AppendOp(Op("matmul", {{"X", {"x"}}, {"Y", {"x"}}}, "y"));
  ASSERT_OK_AND_ASSIGN(AmpReport report, ApplyAmp(AmpOptions{DataType::kFloat16}, &p));
  EXPECT_THAT(Listing(p.block()),
              ElementsAre("cast(x,)->x.cast_float16",
                          "matmul(x.cast_float16,x.cast_float16,)->y.cast_float16",
                          "cast(y.cast_float16,)->y", "scale(y,)->x", "cast(x,)->x.cast_float16_1",
                          "matmul(x.cast_float16_1,x.cast_float16_1,)->y.cast_float16_1",
                          "cast(y.cast_float16_1,)->y"));
  EXPECT_EQ(report.casts, 4);
}

TEST(Amp, ConcatFeedingAProductJoinsInLowPrecision) {
  Program p;
  Block* b = &p.block();
  for (const char* v : {"a", "b", "c", "d", "r", "y"}) {
    Declare(b, v, DataType::kFloat32, Shape({4, 2}));
  }
  Declare(b, "w", DataType::kFloat32, Shape({4, 2}), /*parameter=*/true);
  b->AppendOp(Op("scale", {{"X", {"w"}}}, "a", "cpu"));
  b->AppendOp(Op("concat", {{"X", {"a", "w"}}}, "c"));  // feeds a mul: 16 bits
  b->AppendOp(Op("concat", {{"X", {"a", "a"}}}, "d"));  // feeds a float32 relu only
  b->AppendOp(Op("relu", {{"X", {"d"}}}, "r"));
  b->AppendOp(Op("mul", {{"X", {"c"}}, {"Y", {"w"}}}, "y"));
  ASSERT_OK_AND_ASSIGN(AmpReport report, ApplyAmp(AmpOptions{}, &p));
  EXPECT_THAT(report.low_precision_ops, ElementsAre("concat #1", "mul #4"));
  EXPECT_THAT(Listing(p.block()),
              ElementsAre("scale(w,)->a", "cast(a,)->a.cast_bfloat16", "cast(w,)->w.cast_bfloat16",
                          "concat(a.cast_bfloat16,w.cast_bfloat16,)->c.cast_bfloat16",
                          "concat(a,a,)->d", "relu(d,)->r",
                          "mul(c.cast_bfloat16,w.cast_bfloat16,)->y.cast_bfloat16",
                          "cast(y.cast_bfloat16,)->y"));
  // The cast of 'a' carries its origin: the placer runs it where 'a' is made.
  EXPECT_EQ(p.block().ops()[1].origin.kind, OpOrigin::Kind::kAmpCast);
  EXPECT_EQ(p.block().ops()[1].origin.var, "a");
}

// The hidden layers of an MLP: relu passes 16 bits from one product to the
// next, and no float32 copy is made of a value only 16-bit ops read; the
// last product's output (read by nothing here: the caller may fetch it)
// and a persistable one are cast back.
TEST(Amp, ReluBetweenProductsStaysInLowPrecision) {
  Program p;
  Block* b = &p.block();
  for (const char* v : {"x", "h0", "r0", "h1", "r1", "out"}) {
    Declare(b, v, DataType::kFloat32, Shape({4, 4}));
  }
  Declare(b, "w", DataType::kFloat32, Shape({4, 4}), /*parameter=*/true);
  Declare(b, "kept", DataType::kFloat32, Shape({4, 4}), /*parameter=*/true);
  b->AppendOp(Op("mul", {{"X", {"x"}}, {"Y", {"w"}}}, "h0"));
  b->AppendOp(Op("relu", {{"X", {"h0"}}}, "r0"));
  b->AppendOp(Op("mul", {{"X", {"r0"}}, {"Y", {"w"}}}, "h1"));
  b->AppendOp(Op("relu", {{"X", {"h1"}}}, "r1"));
  b->AppendOp(Op("mul", {{"X", {"r1"}}, {"Y", {"w"}}}, "out"));
  b->AppendOp(Op("mul", {{"X", {"r1"}}, {"Y", {"w"}}}, "kept"));
  ASSERT_OK_AND_ASSIGN(AmpReport report, ApplyAmp(AmpOptions{}, &p));
  EXPECT_THAT(report.low_precision_ops,
              ElementsAre("mul #0", "relu #1", "mul #2", "relu #3", "mul #4", "mul #5"));
  EXPECT_THAT(Listing(p.block()),
              ElementsAre("cast(x,)->x.cast_bfloat16", "cast(w,)->w.cast_bfloat16",
                          "mul(x.cast_bfloat16,w.cast_bfloat16,)->h0.cast_bfloat16",
                          "relu(h0.cast_bfloat16,)->r0.cast_bfloat16",
                          "mul(r0.cast_bfloat16,w.cast_bfloat16,)->h1.cast_bfloat16",
                          "relu(h1.cast_bfloat16,)->r1.cast_bfloat16",
                          "mul(r1.cast_bfloat16,w.cast_bfloat16,)->out.cast_bfloat16",
                          "cast(out.cast_bfloat16,)->out",
                          "mul(r1.cast_bfloat16,w.cast_bfloat16,)->kept.cast_bfloat16",
                          "cast(kept.cast_bfloat16,)->kept"));
  EXPECT_EQ(report.casts, 4);
}

TEST(Amp, RefusesProgramsWithBackwardOpsAndOtherDtypes) {
  Program p = TwoLayers();
  OpDesc grad = Op("mul_grad", {{"X", {"x"}}}, "y");
  grad.role = OpRole::kBackward;
  p.block().AppendOp(grad);
  EXPECT_THAT(ApplyAmp(AmpOptions{}, &p),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("op 'mul_grad' (#6) is a backward op: apply AMP before "
                                 "AppendBackward")));
  Program q = TwoLayers();
  EXPECT_THAT(ApplyAmp(AmpOptions{DataType::kFloat64}, &q),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not float64")));
  EXPECT_EQ(q.block().ops().size(), 6u);  // untouched
}

TEST(Amp, ParsesTheFlag) {
  EXPECT_THAT(ParseAmpFlag("none"), IsOkAndHolds(std::nullopt));
  EXPECT_THAT(ParseAmpFlag("bf16"), IsOkAndHolds(std::optional(DataType::kBFloat16)));
  EXPECT_THAT(ParseAmpFlag("float16"), IsOkAndHolds(std::optional(DataType::kFloat16)));
  EXPECT_THAT(ParseAmpFlag("fp8"), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("accepted values are none, bf16")));
}

}  // namespace
}  // namespace tandem
