#include "models/crop/crop_model.h"

namespace tandem {

absl::StatusOr<Var> BuildCropModel(bool slice_on_cpu, ProgramBuilder* b) {
  Var data1 = b->FillConstant({1, 3, 8, 8}, DataType::kFloat32, 1.0);
  Var data2 = b->FillConstant({1, 3, 5, 5}, DataType::kFloat32, 2.0);
  Var shape = b->ShapeOf(data2);
  {
    auto guard = b->device_guard(slice_on_cpu ? "cpu" : "");
    shape = b->Slice(shape, {0}, {0}, {4});
  }
  Var out = b->CropTensor(data1, shape);
  if (!b->status().ok()) return b->status();
  return out;
}

}  // namespace tandem
