// Checkpoints of the example trainers: every persistable variable of the
// training program (weights, optimizer state, learning rate) and the steps
// taken, in DIR/checkpoint (framework/persistence/checkpoint.h: written
// atomically, a checksum per tensor).
//
//   RETURN_IF_ERROR(SaveTrainerCheckpoint(builder.main_program(), step, FLAGS_checkpoint_dir,
//                                         &scope));
//   ...
//   ASSIGN_OR_RETURN(int64_t step, ResumeTrainerCheckpoint(builder.main_program(),
//                                                          FLAGS_checkpoint_dir, &scope));
#ifndef TANDEM_EXAMPLES_COMMON_TRAINER_CHECKPOINT_H_
#define TANDEM_EXAMPLES_COMMON_TRAINER_CHECKPOINT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/program/program.h"
#include "framework/tensor/scope.h"

namespace tandem {

// The name of the step counter (int64 [1]) saved beside the parameters.
inline constexpr char kTrainerStepVar[] = "trainer.step";

// "DIR/checkpoint".
std::string TrainerCheckpointPath(const std::string& dir);

// Saves the persistable variables of `program` in `scope` and `step` (the
// steps taken) to TrainerCheckpointPath(dir), creating `dir` if needed.
absl::Status SaveTrainerCheckpoint(const Program& program, int64_t step, const std::string& dir,
                                   Scope* scope);

// Loads the checkpoint in `dir` into the initialised `scope`, each tensor on
// the place the startup program gave it (so a GPU run's checkpoint resumes
// on the CPU too), and returns the steps taken. InvalidArgument naming the
// variable, with `scope` untouched, if the checkpoint was written for
// another model.
absl::StatusOr<int64_t> ResumeTrainerCheckpoint(const Program& program, const std::string& dir,
                                                Scope* scope);

}  // namespace tandem

#endif  // TANDEM_EXAMPLES_COMMON_TRAINER_CHECKPOINT_H_
