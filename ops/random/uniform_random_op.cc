// uniform_random: Out = values uniform in [min, max) from a counter-based
// generator, identical on every backend.
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"
#include "ops/random/shape_fns.h"

namespace tandem {
namespace {

REGISTER_OP("uniform_random")
    .Doc(
        "Out: a tensor of `shape` and `dtype` whose element at flat index i is "
        "min + (max - min) * u(seed, i), u a counter-based (SplitMix64) uniform "
        "double in [0, 1), so every backend produces the same bits.")
    .Output("Out")
    .RequiredAttr("shape", AttrType::kInts, "dims of Out, each >= 0")
    .Attr<DataType>("dtype", DataType::kFloat32, "float32 or float64")
    .Attr<double>("min", -1.0)
    .Attr<double>("max", 1.0)
    .Attr<int64_t>("seed", 0)
    .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
      ASSIGN_OR_RETURN(TensorMeta out, UniformRandomMeta(ctx->op()));
      ctx->SetOutput("Out", out);
      return absl::OkStatus();
    });

}  // namespace
}  // namespace tandem
