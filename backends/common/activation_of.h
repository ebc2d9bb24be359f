// The element function an activation kernel computes, read once in Init by
// the host kernels (math_kernels.h) and the CUDA ones
// (backends/cuda/activation_kernels.cc):
//
//   absl::Status Init(const OpDesc& op) override {
//     ASSIGN_OR_RETURN(act_, ActivationOf(op, Activation::kGelu));  // kGeluTanh if approximate
//     return absl::OkStatus();
//   }
//
// Host code only (activation.h is the part nvcc compiles). Stateless and
// thread-safe.
#ifndef TANDEM_BACKENDS_COMMON_ACTIVATION_OF_H_
#define TANDEM_BACKENDS_COMMON_ACTIVATION_OF_H_

#include "absl/status/statusor.h"
#include "backends/common/activation.h"
#include "framework/base/status_macros.h"
#include "framework/op/attr.h"
#include "framework/op/op_desc.h"

namespace tandem {

// `act`, or for gelu with attr approximate true its tanh form
// (InvalidArgument naming the op when the attribute is not a bool).
inline absl::StatusOr<Activation> ActivationOf(const OpDesc& op, Activation act) {
  if (act != Activation::kGelu) return act;
  ASSIGN_OR_RETURN(const bool approximate, GetAttr<bool>(op.attrs, "approximate", op.type));
  return approximate ? Activation::kGeluTanh : Activation::kGelu;
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_ACTIVATION_OF_H_
