// ExternalTensor: a Tensor over memory that Tandem did not allocate (a numpy
// array, a DLPack tensor from PyTorch or JAX), without copying it.
//
//   Tensor t = ExternalTensor(array_data, DataType::kFloat32, Shape({2, 3}), CPUPlace(),
//                             [view] { ReleaseTheView(view); });
//   // t shares the memory; `release` runs once when the last copy of t (and
//   // of every tensor sharing its buffer) is gone, on whichever thread drops it.
//
// The memory must hold at least the tensor's bytes, stay valid and live on
// `place` until `release` runs. It is not counted by any allocator's
// MemoryStats (it is not Tandem's) and is aligned only as well as its owner
// aligned it: Tandem's kernels read and write through unaligned accesses,
// so element alignment is all they need. Thread-safe.
#ifndef TANDEM_PYTHON_EXTERNAL_MEMORY_H_
#define TANDEM_PYTHON_EXTERNAL_MEMORY_H_

#include <functional>

#include "framework/place/place.h"
#include "framework/tensor/tensor.h"

namespace tandem {
namespace python {

Tensor ExternalTensor(void* data, DataType dtype, const Shape& shape, const Place& place,
                      std::function<void()> release);

}  // namespace python
}  // namespace tandem

#endif  // TANDEM_PYTHON_EXTERNAL_MEMORY_H_
