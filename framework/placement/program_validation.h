// Checks a program before it is placed and prepared: every op against its
// schema, and every variable an op reads against what the run can supply.
//
//   RETURN_IF_ERROR(ValidateProgramForRun(program, scope, {"ids"}));
//
// Errors are InvalidArgument (or NotFound for an unknown op type) and name
// the op, its position in the program and the variable, argument or
// attribute at fault:
//   - an op type with no schema; an argument or attribute the schema does
//     not declare, a missing required one, an attribute of the wrong type,
//     several variables bound to a single-valued argument;
//   - a variable that is not declared in the program;
//   - a declared shape whose known dims' product overflows int64 (naming the
//     variable), and a feed (a variable neither persistable nor written by
//     an op) whose fully known shape holds more bytes than this host's
//     physical memory;
//   - an op whose shape inference fails on its inputs' shapes, or whose
//     inferred output dtype, rank or known dims differ from the output's
//     declaration (a [2, 2] variable the op fills as [3, 3]): the error
//     names the op, the output and both shapes. Inference runs in program
//     order on the declared shapes; a -1 dim in a declaration accepts any
//     inferred value and is refined to it for the ops that read the
//     variable later (only in validation's view: the program and its
//     VarDescs are not changed);
//   - an output whose shape, declared or refined, is fully known and holds
//     more bytes than this host's physical memory, or whose known dims'
//     product overflows: such work is refused before anything is allocated;
//   - a variable read before anything could have given it a value: not
//     fed, not a persistable variable initialised in `scope` and not
//     written by an earlier op.
// Pure function of its arguments; thread-compatible.
#ifndef TANDEM_FRAMEWORK_PLACEMENT_PROGRAM_VALIDATION_H_
#define TANDEM_FRAMEWORK_PLACEMENT_PROGRAM_VALIDATION_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "framework/program/program.h"
#include "framework/tensor/scope.h"

namespace tandem {

absl::Status ValidateProgramForRun(const Program& program, const Scope& scope,
                                   const std::vector<std::string>& feeds);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_PLACEMENT_PROGRAM_VALIDATION_H_
