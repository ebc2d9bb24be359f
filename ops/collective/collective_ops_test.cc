// Shape inference of the collective ops: outputs mirror inputs, the group
// attributes are checked, and argument counts must agree.
#include <map>
#include <string>
#include <vector>

#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using Metas = std::map<std::string, std::vector<TensorMeta>>;

OpDesc CollectiveOp(const std::string& type, std::vector<std::string> x,
                    std::vector<std::string> out, int64_t nranks = 2, int64_t rank = 0) {
  OpDesc op;
  op.type = type;
  op.inputs = {{"X", std::move(x)}};
  op.outputs = {{"Out", std::move(out)}};
  op.attrs["ring_id"] = int64_t{0};
  op.attrs["nranks"] = nranks;
  op.attrs["rank"] = rank;
  return op;
}

absl::Status Infer(OpDesc op, const Metas& metas, Metas* outputs = nullptr) {
  ASSIGN_OR_RETURN(const OpSchema* schema, OpRegistry::Global().Find(op.type));
  RETURN_IF_ERROR(schema->Validate(&op));
  InferShapeContext ctx(op, metas);
  RETURN_IF_ERROR(schema->infer_shape()(&ctx));
  if (outputs != nullptr) *outputs = ctx.outputs();
  return absl::OkStatus();
}

TEST(CollectiveOps, AllReduceAndBroadcastMirrorEachInput) {
  const Metas two = {{"X",
                      {{DataType::kFloat32, Shape({4, 3})}, {DataType::kInt64, Shape({7})}}}};
  for (const char* type : {"c_allreduce_sum", "c_broadcast"}) {
    Metas out;
    ASSERT_OK(Infer(CollectiveOp(type, {"a", "b"}, {"a", "b"}), two, &out)) << type;
    ASSERT_EQ(out.at("Out").size(), 2u) << type;
    EXPECT_EQ(out.at("Out")[0], (TensorMeta{DataType::kFloat32, Shape({4, 3})})) << type;
    EXPECT_EQ(out.at("Out")[1], (TensorMeta{DataType::kInt64, Shape({7})})) << type;
  }
}

TEST(CollectiveOps, OutMustHoldOneVariablePerInput) {
  const Metas two = {{"X",
                      {{DataType::kFloat32, Shape({4})}, {DataType::kFloat32, Shape({2})}}}};
  for (const char* type : {"c_allreduce_sum", "c_broadcast"}) {
    EXPECT_THAT(Infer(CollectiveOp(type, {"a", "b"}, {"a"}), two),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         std::string("op '") + type +
                             "': Out holds 1 variable(s) for X's 2: each X[i] needs its Out[i]"));
  }
  const Metas one = {{"X", {{DataType::kFloat32, Shape({4})}}}};
  EXPECT_THAT(Infer(CollectiveOp("c_broadcast", {"a"}, {"a", "b"}), one),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Out holds 2 variable(s)")));
}

TEST(CollectiveOps, GroupAttributesAreChecked) {
  const Metas one = {{"X", {{DataType::kFloat32, Shape({4})}}}};
  EXPECT_THAT(Infer(CollectiveOp("c_allreduce_sum", {"a"}, {"a"}, /*nranks=*/2, /*rank=*/2), one),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ring_id 0, nranks 2, rank 2: need")));
  OpDesc no_group = CollectiveOp("c_broadcast", {"a"}, {"a"});
  no_group.attrs["ring_id"] = int64_t{-1};
  EXPECT_THAT(Infer(no_group, one), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("ring_id -1 (no group) takes nranks 1")));
  OpDesc bad_root = CollectiveOp("c_broadcast", {"a"}, {"a"});
  bad_root.attrs["root"] = int64_t{2};
  EXPECT_THAT(Infer(bad_root, one), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("root 2 is not a rank of 0..1")));
}

TEST(CollectiveOps, AllGatherStacksRanksAlongDimZero) {
  Metas out;
  ASSERT_OK(Infer(CollectiveOp("c_allgather", {"a"}, {"b"}, /*nranks=*/3),
                  {{"X", {{DataType::kFloat32, Shape({5, 2})}}}}, &out));
  EXPECT_EQ(out.at("Out")[0], (TensorMeta{DataType::kFloat32, Shape({15, 2})}));
  EXPECT_THAT(Infer(CollectiveOp("c_allgather", {"a"}, {"b"}, /*nranks=*/4),
                    {{"X", {{DataType::kFloat32, Shape({int64_t{1} << 62, 2})}}}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows int64")));
}

}  // namespace
}  // namespace tandem
