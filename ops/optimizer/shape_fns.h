// Shape functions of the optimizer ops (sgd), used by their schemas
// (ops/optimizer/*_op.cc) and by kernels, so both agree.
//
//   RETURN_IF_ERROR(CheckSgdArgs(op, param, grad, learning_rate));
#ifndef TANDEM_OPS_OPTIMIZER_SHAPE_FNS_H_
#define TANDEM_OPS_OPTIMIZER_SHAPE_FNS_H_

#include "absl/status/status.h"
#include "framework/op/op_desc.h"
#include "framework/op/op_schema.h"

namespace tandem {

// Checks the arguments of `op` (an sgd op): Param is float32 or float64;
// Grad has Param's dtype and shape, dense or as SelectedRows (whose meta
// shape is [height, ...], so its height must be Param's dim 0); the
// learning rate is float32 with one element. Unknown dims (-1) match any.
// InvalidArgument naming the op, the argument, its variable and the metas.
absl::Status CheckSgdArgs(const OpDesc& op, const TensorMeta& param, const TensorMeta& grad,
                          const TensorMeta& learning_rate);

}  // namespace tandem

#endif  // TANDEM_OPS_OPTIMIZER_SHAPE_FNS_H_
