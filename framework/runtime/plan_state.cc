#include "framework/runtime/plan_state.h"

#include "framework/runtime/concurrent_run.h"

namespace tandem {

// Out of line: the scheduler's and the captured graph's types are complete
// here.
PlanState::PlanState() = default;
PlanState::~PlanState() = default;

}  // namespace tandem
