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
  EXPECT_THAT(
      Infer({{"shape", std::vector<int64_t>{2}}, {"mean", std::nan("")}}, "gaussian_random"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got mean nan")));
  EXPECT_THAT(
      Infer({{"shape", std::vector<int64_t>{2}}, {"dtype", DataType::kInt64}}, "gaussian_random"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "op 'gaussian_random': attribute 'dtype' must be float32 or float64, "
               "got int64"));
}

// The kernels' one reading of the attributes: values as given (schema
// defaults filled), the seed's bits kept, the meta's checks applied.
TEST(RandomAttrs, ReadOnceForEveryBackend) {
  ASSERT_OK_AND_ASSIGN(const OpSchema* uniform, OpRegistry::Global().Find("uniform_random"));
  OpDesc op;
  op.type = "uniform_random";
  op.outputs = {{"Out", {"w"}}};
  op.attrs = {{"shape", std::vector<int64_t>{3}}, {"min", -0.5}, {"seed", int64_t{-7}}};
  ASSERT_OK(uniform->Validate(&op));
  ASSERT_OK_AND_ASSIGN(UniformRandomAttrs u, UniformRandomAttrs::Read(op));
  EXPECT_EQ(u.out, (TensorMeta{DataType::kFloat32, Shape({3})}));
  EXPECT_EQ(u.min, -0.5);
  EXPECT_EQ(u.max, 1.0);  // the schema's default
  EXPECT_EQ(u.seed, -7);

  ASSERT_OK_AND_ASSIGN(const OpSchema* gaussian, OpRegistry::Global().Find("gaussian_random"));
  op.type = "gaussian_random";
  op.attrs = {{"shape", std::vector<int64_t>{2, 2}},
              {"mean", 3.0},
              {"std", 0.25},
              {"dtype", DataType::kFloat64}};
  ASSERT_OK(gaussian->Validate(&op));
  ASSERT_OK_AND_ASSIGN(GaussianRandomAttrs g, GaussianRandomAttrs::Read(op));
  EXPECT_EQ(g.out, (TensorMeta{DataType::kFloat64, Shape({2, 2})}));
  EXPECT_EQ(g.mean, 3.0);
  EXPECT_EQ(g.std, 0.25);
  op.attrs["std"] = -2.0;
  EXPECT_THAT(GaussianRandomAttrs::Read(op),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got mean 3, std -2")));
}

}  // namespace
}  // namespace tandem
