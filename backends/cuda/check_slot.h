// CheckSlot: where a gpu kernel that validates its input reports the first
// bad element, for a check that surfaces at the stream's next
// synchronisation instead of making the host wait (deferred_checks.h arms
// slots; device_check.h is the device side). Plain C++: included by .cu and
// .cc files.
//
//   // Device side, in a kernel of every block (see device_check.h):
//   if (bad) NoteBadInput(slot, position);
//   PublishBadInput(slot, values);   // the grid's last block fills the report
//
// Between launches the device words hold "none" and 0; the kernel that uses
// a slot leaves them so. The report is pinned host memory that the device
// writes directly (no copy): the host reads it after synchronising.
#ifndef TANDEM_BACKENDS_CUDA_CHECK_SLOT_H_
#define TANDEM_BACKENDS_CUDA_CHECK_SLOT_H_

#include <cstdint>

namespace tandem {
namespace cuda {

using BadPosition = unsigned long long;  // NOLINT(runtime/int): atomicMin's type
constexpr BadPosition kNoBadInput = ~BadPosition{0};

// The first bad element of one launch, as the host reads it.
struct BadInputReport {
  BadPosition position = kNoBadInput;
  int64_t value = 0;  // the input element at `position`
};

struct CheckSlot {
  BadPosition* first_bad = nullptr;     // device word: atomicMin of bad positions
  unsigned int* blocks_done = nullptr;  // device word: blocks that have finished
  BadInputReport* report = nullptr;     // pinned host memory, device-writable
};

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_CHECK_SLOT_H_
