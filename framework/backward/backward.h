// AppendBackward: appends the gradient ops of a loss to the main program.
//
//   ProgramBuilder b;
//   ... build the forward program, Var loss = b.Mean(...);
//   ASSIGN_OR_RETURN(GradMap grads, AppendBackward(&b, loss));
//   grads.at("fc_w")   // "fc_w@GRAD"
//
// Generated ops get no op_device: each records what it derives from
// (OpDesc::origin: the forward op of a grad op, the loss op of the
// loss-gradient fill, the partial gradient of a sum) and the placer's rules
// place it from that (docs/design.md, "Placement rules": grad ops with their
// forward op, the fill with the loss, a sum where its partial was produced).
// When a variable feeds several ops, its partial gradients are summed
// (elementwise_add). Not thread-safe.
#ifndef TANDEM_FRAMEWORK_BACKWARD_BACKWARD_H_
#define TANDEM_FRAMEWORK_BACKWARD_BACKWARD_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "framework/program/program_builder.h"

namespace tandem {

// Trainable parameter name -> its gradient variable name.
using GradMap = std::map<std::string, std::string>;

// Gradients of `loss` (a one-element float variable) with respect to every
// trainable parameter it depends on. FailedPrecondition if the builder
// already has an error or no parameter reaches the loss; NotFound if an op
// on the path has no gradient.
absl::StatusOr<GradMap> AppendBackward(ProgramBuilder* builder, Var loss);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_BACKWARD_BACKWARD_H_
