#include "models/common/training_program.h"

#include "framework/amp/amp.h"
#include "framework/base/status_macros.h"

namespace tandem {

absl::StatusOr<Program> FinishTrainingProgram(std::optional<DataType> amp, Var loss,
                                              Optimizer* optimizer, ProgramBuilder* b) {
  RETURN_IF_ERROR(b->status());
  if (amp.has_value()) RETURN_IF_ERROR(ApplyAmp(AmpOptions{*amp}, &b->main_program()).status());
  Program eval = b->main_program();  // before the optimizer appends backward and updates
  if (amp == DataType::kFloat16) optimizer->EnableDynamicLossScaling();
  RETURN_IF_ERROR(optimizer->Minimize(b, loss));
  return eval;
}

}  // namespace tandem
