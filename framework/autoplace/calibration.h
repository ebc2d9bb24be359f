// Calibration: what the automatic placement times through the executor,
// lent to the cost model (framework/estimate/cost_model.h), which sits
// below the runtime and cannot run plans itself.
//
//   CostModel costs({.cache_dir = "", .measure = true,
//                    .time_dispatch = TimeExecutorDispatch});
//   costs.Constants(GPUPlace(0)).launch_us;   // measured through an Executor
//
// Runs programs on the place's device: call it where nothing else runs
// there (the planner calls it from Prepare, before the plan exists).
#ifndef TANDEM_FRAMEWORK_AUTOPLACE_CALIBRATION_H_
#define TANDEM_FRAMEWORK_AUTOPLACE_CALIBRATION_H_

#include "absl/status/statusor.h"
#include "framework/estimate/cost_model.h"
#include "framework/place/place.h"

namespace tandem {

// The executor's cost per op and per run on `place`, from runs of a chain
// of 1 and of 21 trivial ops (scale on one element), each the fastest of a
// few (TimeMicros). An error when the place has no device or no scale
// kernel.
absl::StatusOr<DispatchCost> TimeExecutorDispatch(const Place& place);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_AUTOPLACE_CALIBRATION_H_
