// Workload 2: shape -> slice -> crop_tensor, run --iterations times with the
// slice on the default place (GPU 0 when present) and then under
// device_guard("cpu"). Prints host<->device copies per iteration and the
// median time per iteration for both placements.
//
//   bazel run //examples/crop_profile -- --iterations=1000
//   bazel run //examples/crop_profile -- --place=sim:0 --print_placement
#include <cstdio>

#include "examples/common/example_util.h"
#include "examples/crop_profile/crop_model.h"
#include "framework/base/status_macros.h"
#include "framework/runtime/executor.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

DEFINE_int32(iterations, 1000, "timed iterations per placement");
DEFINE_int32(warmup, 10, "untimed iterations first");
DEFINE_string(place, "", "default place: gpu:N, sim:N or cpu (default: gpu:0 if present, else cpu)");
DEFINE_bool(print_placement, false, "print each placement table");

namespace tandem {
namespace {

absl::Status RunOne(const Place& place, bool slice_on_cpu) {
  ProgramBuilder builder;
  ASSIGN_OR_RETURN(Var out, BuildCropModel(slice_on_cpu, &builder));
  Executor exe(place);
  Scope scope;
  ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan,
                   exe.Prepare(builder.main_program(), scope, {}, {out.name}));
  if (FLAGS_print_placement) std::printf("%s", plan->PlacementTable().c_str());
  RunStats stats;
  std::vector<double> times;
  for (int i = 0; i < FLAGS_warmup + FLAGS_iterations; ++i) {
    Stopwatch sw;
    ASSIGN_OR_RETURN(std::vector<Tensor> result, exe.Run(plan.get(), &scope, {}, &stats));
    if (i >= FLAGS_warmup) times.push_back(sw.Seconds() * 1e6);
    if (i == 0 && result[0].shape() != Shape({1, 3, 5, 5})) {
      return absl::InternalError("crop_tensor produced " + result[0].shape().ToString());
    }
  }
  std::printf("slice on %-6s: %d H2D + %d D2H copies per iteration (%d sync), "
              "median %.1f us per iteration over %d iterations\n",
              slice_on_cpu ? "cpu" : place.ToString().c_str(), stats.copies_h2d,
              stats.copies_d2h, stats.sync_copies, Median(times), FLAGS_iterations);
  return absl::OkStatus();
}

absl::Status Main() {
  ASSIGN_OR_RETURN(Place place, ChooseDefaultPlace(FLAGS_place));
  if (FLAGS_iterations <= 0 || FLAGS_warmup < 0) {
    return absl::InvalidArgumentError("--iterations must be > 0 and --warmup >= 0");
  }
  std::printf("workload 2 (shape -> slice -> crop_tensor) on %s\n", place.ToString().c_str());
  RETURN_IF_ERROR(RunOne(place, /*slice_on_cpu=*/false));
  return RunOne(place, /*slice_on_cpu=*/true);
}

}  // namespace
}  // namespace tandem

int main(int argc, char** argv) {
  gflags::SetUsageMessage("runs workload 2 with the slice on the device and on the CPU");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  absl::Status s = tandem::Main();
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
