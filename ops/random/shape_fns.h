// Shape functions of the random ops (uniform_random, gaussian_random), used
// by their schemas (ops/random/*_op.cc) and by kernels, so both agree.
//
//   ASSIGN_OR_RETURN(TensorMeta out, UniformRandomMeta(op));
//   ASSIGN_OR_RETURN(TensorMeta out, GaussianRandomMeta(op));
//   ASSIGN_OR_RETURN(UniformRandomAttrs attrs, UniformRandomAttrs::Read(op));  // in Init
#ifndef TANDEM_OPS_RANDOM_SHAPE_FNS_H_
#define TANDEM_OPS_RANDOM_SHAPE_FNS_H_

#include "absl/status/statusor.h"
#include "framework/op/op_desc.h"
#include "framework/op/op_schema.h"

namespace tandem {

// Out of a uniform_random op (attributes validated and defaulted by its
// schema): attr dtype (float32 or float64) with attr shape (dims >= 0, the
// element count fitting int64). InvalidArgument naming the op and the
// attribute otherwise.
absl::StatusOr<TensorMeta> UniformRandomMeta(const OpDesc& op);

// Out of a gaussian_random op: as UniformRandomMeta, and attrs mean and std
// finite with std >= 0 (InvalidArgument naming the op and the attribute).
absl::StatusOr<TensorMeta> GaussianRandomMeta(const OpDesc& op);

// A random op's attributes as every backend's kernel reads them once (in
// Init), checked as above. `seed` is the int64 attribute; the counter-based
// generators take its bits as a uint64.
struct UniformRandomAttrs {
  TensorMeta out;
  double min = -1, max = 1;
  int64_t seed = 0;

  static absl::StatusOr<UniformRandomAttrs> Read(const OpDesc& op);
};

struct GaussianRandomAttrs {
  TensorMeta out;
  double mean = 0, std = 1;
  int64_t seed = 0;

  static absl::StatusOr<GaussianRandomAttrs> Read(const OpDesc& op);
};

}  // namespace tandem

#endif  // TANDEM_OPS_RANDOM_SHAPE_FNS_H_
