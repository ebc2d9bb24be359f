// The shape-op placement workload (workload 2 of docs/design.md):
//   data1 = fill_constant [1, 3, 8, 8]; data2 = fill_constant [1, 3, 5, 5]
//   shape = shape(data2)                    // int32, written on the host
//   shape = slice(shape, axes=[0], starts=[0], ends=[4])
//   out   = crop_tensor(data1, shape=shape) // reads Shape on the host
// With the slice on an accelerator the shape goes host->device and back
// every run; `slice_on_cpu` wraps it in device_guard("cpu"), removing both.
#ifndef TANDEM_MODELS_CROP_CROP_MODEL_H_
#define TANDEM_MODELS_CROP_CROP_MODEL_H_

#include "absl/status/statusor.h"
#include "framework/program/program_builder.h"

namespace tandem {

// Builds the program into `builder`; returns the output variable.
absl::StatusOr<Var> BuildCropModel(bool slice_on_cpu, ProgramBuilder* builder);

}  // namespace tandem

#endif  // TANDEM_MODELS_CROP_CROP_MODEL_H_
