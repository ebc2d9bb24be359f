#include "profiler/crop_workload_testutil.h"

#include "framework/base/status_macros.h"
#include "models/crop/crop_model.h"

namespace tandem {
namespace profiler {

absl::StatusOr<std::unique_ptr<CropWorkload>> CropWorkload::Create(const Place& place,
                                                                   bool slice_on_cpu) {
  std::unique_ptr<CropWorkload> w(new CropWorkload(place));
  ProgramBuilder builder;
  ASSIGN_OR_RETURN(Var out, BuildCropModel(slice_on_cpu, &builder));
  ASSIGN_OR_RETURN(w->plan_, w->exe_.Prepare(builder.main_program(), w->scope_, {}, {out.name}));
  return w;
}

absl::StatusOr<std::vector<RunStats>> CropWorkload::Run(int runs) {
  std::vector<RunStats> stats(runs);
  for (int i = 0; i < runs; ++i) {
    ASSIGN_OR_RETURN(std::vector<Tensor> out, exe_.Run(plan_.get(), &scope_, {}, &stats[i]));
    outputs_.push_back(out.at(0));
  }
  return stats;
}

}  // namespace profiler
}  // namespace tandem
