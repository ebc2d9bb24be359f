#include "framework/autoplace/calibration.h"

#include <algorithm>
#include <array>
#include <memory>

#include "framework/base/status_macros.h"
#include "framework/program/program_builder.h"
#include "framework/runtime/executor.h"

namespace tandem {

absl::StatusOr<DispatchCost> TimeExecutorDispatch(const Place& place) {
  std::array<double, 2> runs;
  for (int k = 0; k < 2; ++k) {
    ProgramBuilder b;
    Var x = b.FillConstant({1}, DataType::kFloat32, 1.0);
    for (int i = 0; i < (k == 0 ? 1 : 21); ++i) x = b.Scale(x, 1.0);
    RETURN_IF_ERROR(b.status());
    Executor exe(place);
    Scope scope;
    ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan,
                     exe.Prepare(b.main_program(), scope, {}, {x.name}));
    ASSIGN_OR_RETURN(runs[k], TimeMicros([&]() { return exe.Run(plan.get(), &scope).status(); }));
  }
  const double per_op = std::max((runs[1] - runs[0]) / 20, 0.1);
  return DispatchCost{per_op, std::max(runs[0] - per_op, 0.0)};
}

}  // namespace tandem
