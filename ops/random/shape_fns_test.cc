#include "ops/random/shape_fns.h"

#include <cmath>
#include <string>

#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

absl::StatusOr<TensorMeta> Infer(AttrMap attrs, const std::string& type = "uniform_random") {
  ASSIGN_OR_RETURN(const OpSchema* schema, OpRegistry::Global().Find(type));
  OpDesc op;
  op.type = type;
  op.outputs = {{"Out", {"w"}}};
  op.attrs = std::move(attrs);
  RETURN_IF_ERROR(schema->Validate(&op));
  InferShapeContext ctx(op, {});
  RETURN_IF_ERROR(schema->infer_shape()(&ctx));
  return ctx.outputs().at("Out")[0];
}

TEST(UniformRandomSchema, ShapeAndDtype) {
  EXPECT_THAT(Infer({{"shape", std::vector<int64_t>{2, 3}}}),
              IsOkAndHolds(TensorMeta{DataType::kFloat32, Shape({2, 3})}));
  EXPECT_THAT(Infer({{"shape", std::vector<int64_t>{}}, {"dtype", DataType::kFloat64}}),
              IsOkAndHolds(TensorMeta{DataType::kFloat64, Shape()}));
}

TEST(UniformRandomSchema, BadAttributesAreInvalidArgument) {
  EXPECT_THAT(Infer({{"shape", std::vector<int64_t>{2}}, {"dtype", DataType::kInt32}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'uniform_random': attribute 'dtype' must be float32 or float64, "
                       "got int32"));
  EXPECT_THAT(Infer({{"shape", std::vector<int64_t>{2, -3}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("op 'uniform_random': attribute 'shape': shape [2, -3]")));
  EXPECT_THAT(Infer({}), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("missing required attribute 'shape'")));
}

TEST(GaussianRandomSchema, ShapeDtypeAndMoments) {
  EXPECT_THAT(Infer({{"shape", std::vector<int64_t>{4, 2}}, {"std", 0.0}}, "gaussian_random"),
              IsOkAndHolds(TensorMeta{DataType::kFloat32, Shape({4, 2})}));
  EXPECT_THAT(Infer({{"shape", std::vector<int64_t>{2}}, {"std", -1.0}}, "gaussian_random"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'gaussian_random': attributes 'mean' and 'std' must be finite with "
                       "std >= 0, got mean 0, std -1"));
  EXPECT_THAT(Infer({{"shape", std::vector<int64_t>{2}}, {"mean", std::nan("")}},
                    "gaussian_random"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got mean nan")));
  EXPECT_THAT(Infer({{"shape", std::vector<int64_t>{2}}, {"dtype", DataType::kInt64}},
                    "gaussian_random"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'gaussian_random': attribute 'dtype' must be float32 or float64, "
                       "got int64"));
}

}  // namespace
}  // namespace tandem
