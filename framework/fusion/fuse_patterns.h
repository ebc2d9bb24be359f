// Plan-time fusion of known op patterns into single ops, so that a step
// launches fewer kernels (issue: the device-only step at JAX's speed).
//
//   FusionOptions options;
//   options.keep = {"loss"};                           // fetched: never fused away
//   options.has_kernels = [&](const std::string& op_device) { ... };
//   ASSIGN_OR_RETURN(int fused, FuseL2NormalizeSquareErrorMean(options, &program));
//
// Today one pattern: l2_normalize -> square_error_cost -> mean (the
// embedding workload's loss) becomes l2_normalize_square_error_mean, and its
// backward mean_grad -> square_error_cost_grad -> l2_normalize_grad becomes
// l2_normalize_square_error_mean_grad, where the intermediate values
// (normalised rows, squared errors and their gradients) are read by nothing
// else, are not kept, and the three ops share their device_guard.
// Synchronous; rewrites the program it is given; not thread-safe.
#ifndef TANDEM_FRAMEWORK_FUSION_FUSE_PATTERNS_H_
#define TANDEM_FRAMEWORK_FUSION_FUSE_PATTERNS_H_

#include <functional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "framework/program/program.h"

namespace tandem {

struct FusionOptions {
  // Variables that must stay computed (the fetches): a chain producing one
  // of them as an intermediate is left alone.
  std::set<std::string> keep;
  // Whether the fused ops have kernels where ops of this device_guard run
  // ("" = the default place); null: everywhere.
  std::function<bool(const std::string& op_device)> has_kernels;
};

// Fuses every l2_normalize -> square_error_cost -> mean chain of
// `program`'s block (and its backward chain, when present) as described
// above; returns how many chains it fused.
absl::StatusOr<int> FuseL2NormalizeSquareErrorMean(const FusionOptions& options, Program* program);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_FUSION_FUSE_PATTERNS_H_
