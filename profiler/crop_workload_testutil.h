// Test helper: workload 2, shape-op placement (models/crop), prepared on a place and
// run a number of times, for the profiler's tests.
//
//   ASSERT_OK_AND_ASSIGN(auto crop, CropWorkload::Create(*ParsePlace("sim:0"),
//                                                        /*slice_on_cpu=*/false));
//   ASSERT_OK_AND_ASSIGN(std::vector<RunStats> stats, crop->Run(5));
//   crop->plan();  crop->outputs();   // the plan; each run's host output
//
// Not thread-safe (an Executor and a Plan are not).
#ifndef TANDEM_PROFILER_CROP_WORKLOAD_TESTUTIL_H_
#define TANDEM_PROFILER_CROP_WORKLOAD_TESTUTIL_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/runtime/executor.h"

namespace tandem {
namespace profiler {

class CropWorkload {
 public:
  static absl::StatusOr<std::unique_ptr<CropWorkload>> Create(const Place& place,
                                                              bool slice_on_cpu);
  // Runs the plan `runs` times; each run's counters.
  absl::StatusOr<std::vector<RunStats>> Run(int runs);

  const Plan& plan() const { return *plan_; }
  // The fetched output of every run so far, in order.
  const std::vector<Tensor>& outputs() const { return outputs_; }

 private:
  explicit CropWorkload(const Place& place) : exe_(place) {}
  Executor exe_;
  Scope scope_;
  std::unique_ptr<Plan> plan_;
  std::vector<Tensor> outputs_;
};

}  // namespace profiler
}  // namespace tandem

#endif  // TANDEM_PROFILER_CROP_WORKLOAD_TESTUTIL_H_
