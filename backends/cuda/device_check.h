// Device side of a deferred input check (check_slot.h): kernels note bad
// positions, and the last block of the grid publishes the first one, with
// its value, to the slot's pinned report and resets the slot, all within
// the same launch (the last-block pattern of CUDA's threadFenceReduction
// sample). CUDA code: include it only from .cu files.
//
//   __global__ void K(const int64_t* ids, int64_t n, int64_t rows, CheckSlot slot) {
//     TANDEM_GRID_LOOP(p, n) {
//       if (ids[p] < 0 || ids[p] >= rows) NoteBadInput(slot, p);
//     }
//     PublishBadInput(slot, ids);  // every thread of every block, no early return
//   }
#ifndef TANDEM_BACKENDS_CUDA_DEVICE_CHECK_H_
#define TANDEM_BACKENDS_CUDA_DEVICE_CHECK_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/check_slot.h"

namespace tandem {
namespace cuda {
namespace device {

// The fence makes the note visible to the whole GPU before this thread
// reaches PublishBadInput's barrier (bad input is rare: no cost otherwise).
__device__ __forceinline__ void NoteBadInput(const CheckSlot& slot, int64_t position) {
  atomicMin(slot.first_bad, static_cast<BadPosition>(position));
  __threadfence();
}

// Every thread of every block calls it once, after its last NoteBadInput.
// The last block to finish reads the first bad position (resetting the word
// to "none"), writes it and values[position] to the report, and resets the
// block counter, so the slot is ready for its next launch.
__device__ __forceinline__ void PublishBadInput(const CheckSlot& slot, const int64_t* values) {
  __syncthreads();  // this block's notes are made and visible
  if (threadIdx.x != 0) return;
  __threadfence();
  if (atomicAdd(slot.blocks_done, 1u) != gridDim.x - 1) return;
  __threadfence();
  const BadPosition first = atomicExch(slot.first_bad, kNoBadInput);
  atomicExch(slot.blocks_done, 0u);
  if (first == kNoBadInput) return;
  slot.report->value = values[first];
  slot.report->position = first;
}

}  // namespace device
}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_DEVICE_CHECK_H_
