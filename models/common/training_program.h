// The end every model builder shares: the forward program built so far
// becomes a training program.
//
//   ... build the forward program and its loss into `b` ...
//   ASSIGN_OR_RETURN(Program eval, FinishTrainingProgram(config.amp, loss, &adam, &b));
//
// Stateless; the builder and optimizer are the caller's (not thread-safe).
#ifndef TANDEM_MODELS_COMMON_TRAINING_PROGRAM_H_
#define TANDEM_MODELS_COMMON_TRAINING_PROGRAM_H_

#include <optional>

#include "absl/status/statusor.h"
#include "framework/backward/optimizer.h"
#include "framework/program/program.h"
#include "framework/program/program_builder.h"
#include "framework/types/data_type.h"

namespace tandem {

// Rewrites the forward program for mixed precision when `amp` is given
// (ApplyAmp), returns a copy of it (the evaluation program: no backward, no
// update), enables dynamic loss scaling for float16, and lets `optimizer`
// append the backward and the updates of `loss`. The builder's, ApplyAmp's
// or the optimizer's error otherwise.
absl::StatusOr<Program> FinishTrainingProgram(std::optional<DataType> amp, Var loss,
                                              Optimizer* optimizer, ProgramBuilder* b);

}  // namespace tandem

#endif  // TANDEM_MODELS_COMMON_TRAINING_PROGRAM_H_
