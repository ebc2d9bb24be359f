// gaussian_random: Out = normal values (mean, std) from a counter-based
// generator, identical on every backend.
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/random/shape_fns.h"

namespace tandem {
namespace {

REGISTER_OP("gaussian_random")
    .Doc(
        "Out: a tensor of `shape` and `dtype` whose element at flat index i is "
        "mean + std * z(seed, i), z a standard normal from Box-Muller on the "
        "counter-based (SplitMix64) uniforms u(seed, 2i) and u(seed, 2i + 1): "
        "z = sqrt(-2 ln(1 - u1)) cos(2 pi u2). Every backend produces the same "
        "bits.")
    .Output("Out")
    .RequiredAttr("shape", AttrType::kInts, "dims of Out, each >= 0")
    .Attr<DataType>("dtype", DataType::kFloat32, "float32 or float64")
    .Attr<double>("mean", 0.0)
    .Attr<double>("std", 1.0, ">= 0")
    .Attr<int64_t>("seed", 0)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta out, GaussianRandomMeta(ctx->op()));
      ctx->SetOutput("Out", out);
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
