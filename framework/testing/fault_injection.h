// Allocation fault injection for tests: fails the N-th allocation made by
// any allocator (cpu, sim, cuda) while it lives, and counts allocations.
//
//   int64_t n;
//   { AllocationFaultInjector count;  run the step;  n = count.allocations(); }
//   for (int64_t i = 1; i <= n; ++i) {
//     AllocationFaultInjector inject(/*fail_at=*/i);
//     EXPECT_THAT(run the step, StatusIs(kResourceExhausted));
//     EXPECT_TRUE(inject.fired());
//   }
//
// One injector at a time; it installs itself with
// SetAllocationFaultHookForTesting and removes itself when destroyed. The
// count is atomic, so allocations from several threads are fine (which one
// is the N-th is then up to the scheduling).
#ifndef TANDEM_FRAMEWORK_TESTING_FAULT_INJECTION_H_
#define TANDEM_FRAMEWORK_TESTING_FAULT_INJECTION_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "framework/memory/allocator.h"
#include "framework/place/place.h"

namespace tandem {

class AllocationFaultInjector {
 public:
  // fail_at: the 1-based allocation to fail with ResourceExhausted; 0 fails
  // none (counting only). Later allocations succeed again.
  explicit AllocationFaultInjector(int64_t fail_at = 0)
      : fail_at_(fail_at),
        hook_([this](const Place &place, size_t bytes) { return OnAllocate(place, bytes); }) {
    SetAllocationFaultHookForTesting(&hook_);
  }
  ~AllocationFaultInjector() { SetAllocationFaultHookForTesting(nullptr); }
  AllocationFaultInjector(const AllocationFaultInjector &) = delete;
  AllocationFaultInjector &operator=(const AllocationFaultInjector &) = delete;

  // Allocations attempted so far, the failed one included.
  int64_t allocations() const { return count_.load(); }
  bool fired() const { return fired_.load(); }
  // What the failed allocation was, e.g. "injected allocation failure #3:
  // 256 bytes on sim:0"; empty until it fired.
  std::string failure() const { return fired() ? failure_ : ""; }

 private:
  absl::Status OnAllocate(const Place &place, size_t bytes) {
    const int64_t n = count_.fetch_add(1) + 1;
    if (n != fail_at_) return absl::OkStatus();
    failure_ = absl::StrCat("injected allocation failure #", n, ": ",
                            HumanBytes(static_cast<int64_t>(bytes)), " on ", place.ToString());
    fired_.store(true);
    return absl::ResourceExhaustedError(failure_);
  }

  const int64_t fail_at_;
  std::atomic<int64_t> count_{0};
  std::atomic<bool> fired_{false};
  std::string failure_;  // written once, before fired_
  const AllocationFaultHook hook_;
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_TESTING_FAULT_INJECTION_H_
