// The memory budget a placement planner applies on a device: the one the
// user gave, checked against what the device has, or by default what the
// device can give now.
//
//   ASSIGN_OR_RETURN(int64_t budget, ResolveMemoryBudget(GPUPlace(0), 0, "auto placement"));
//   // budget: the GPU's free memory less a margin; 0 means no budget
//
// Reads the device's allocator statistics; thread-safe.
#ifndef TANDEM_FRAMEWORK_AUTOPLACE_MEMORY_BUDGET_H_
#define TANDEM_FRAMEWORK_AUTOPLACE_MEMORY_BUDGET_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "framework/place/place.h"

namespace tandem {

// `requested` bytes on `device` (the planner named `planner` in errors):
// InvalidArgument when negative, above 1 PiB or above the device's memory
// (its allocator's limit, else its total memory); NotFound-like errors of
// the device registry for a device that does not exist. 0: what the device
// can give now (its capacity less what is in use there and a margin of 5%,
// at most 1 GiB); 0 again (no budget) on the host or on a device that
// reports no capacity.
absl::StatusOr<int64_t> ResolveMemoryBudget(const Place& device, int64_t requested,
                                            absl::string_view planner);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_AUTOPLACE_MEMORY_BUDGET_H_
