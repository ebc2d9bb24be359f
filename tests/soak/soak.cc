// Soak run (tools/soak.sh; not in CI): many steps of workload 2 (the crop
// model: shape -> slice -> crop_tensor) and of the embedding model (sparse
// SGD, table on the CPU, the rest on --place), printing the allocators'
// bytes in use and peak and the process's RSS every --interval steps. Fails
// (exit 1) if, after the first report, bytes in use or peak of any
// allocator change, or RSS grows by more than --rss_slack_mib; or if the
// embedding losses differ from those of a short fresh run of the same steps.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "models/crop/crop_model.h"
#include "models/embedding/embedding_model.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/runtime/executor.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

DEFINE_int64(workload2_steps, 200000, "steps of workload 2 (the crop model)");
DEFINE_int64(embedding_steps, 20000, "training steps of the embedding model");
DEFINE_int64(interval, 0, "steps between reports; 0: a tenth of each run");
DEFINE_int64(prefix_steps, 100, "embedding steps re-run fresh to compare losses");
DEFINE_string(place, "sim:0", "the executor's place");
DEFINE_int64(rss_slack_mib, 16, "RSS growth allowed after the first report");

namespace tandem {
namespace {

int64_t RssBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

struct Sample {
  AllocatorStats device, host;
  int64_t rss;
};

// Prints and checks memory every interval steps of one run.
class Monitor {
 public:
  Monitor(std::string name, Allocator *device, int64_t steps)
      : name_(std::move(name)),
        device_(device),
        interval_(FLAGS_interval > 0 ? FLAGS_interval : std::max<int64_t>(steps / 10, 1)) {}

  void AfterStep(int64_t step) {
    if (step % interval_ != 0) return;
    Sample s{device_->GetStats(), CpuAllocator::Default()->GetStats(), RssBytes()};
    std::printf(
        "%s step %8ld: %s in use %ld peak %ld | cpu in use %ld peak "
        "%ld | RSS %.1f MiB\n",
        name_.c_str(), static_cast<long>(step), device_->Name().c_str(),
        static_cast<long>(s.device.bytes_in_use), static_cast<long>(s.device.peak_bytes_in_use),
        static_cast<long>(s.host.bytes_in_use), static_cast<long>(s.host.peak_bytes_in_use),
        s.rss / 1048576.0);
    std::fflush(stdout);
    if (!first_) {
      first_ = true;
      first_sample_ = s;
      return;
    }
    const Sample &f = first_sample_;
    auto check = [&](const char *what, int64_t was, int64_t now) {
      if (was != now) {
        Fail(absl::StrCat(what, " went from ", was, " to ", now, " bytes by step ", step));
      }
    };
    check("device bytes in use", f.device.bytes_in_use, s.device.bytes_in_use);
    check("device peak", f.device.peak_bytes_in_use, s.device.peak_bytes_in_use);
    check("cpu bytes in use", f.host.bytes_in_use, s.host.bytes_in_use);
    check("cpu peak", f.host.peak_bytes_in_use, s.host.peak_bytes_in_use);
    if (s.rss - f.rss > FLAGS_rss_slack_mib * 1048576) {
      Fail(absl::StrCat("RSS grew from ", f.rss, " to ", s.rss, " bytes by step ", step));
    }
  }
  void Fail(const std::string& why) {
    std::printf("%s: NOT FLAT: %s\n", name_.c_str(), why.c_str());
    failed_ = true;
  }
  bool failed() const { return failed_; }

 private:
  std::string name_;
  Allocator *device_;
  int64_t interval_;
  bool first_ = false;
  Sample first_sample_;
  bool failed_ = false;
};

absl::StatusOr<bool> SoakWorkload2(const Place &place, Allocator *device) {
  ProgramBuilder b;
  Executor exe(place);
  Scope scope;
  RETURN_IF_ERROR(BuildCropModel(/*slice_on_cpu=*/false, &b).status());
  RETURN_IF_ERROR(exe.Run(b.startup_program(), &scope).status());
  ASSIGN_OR_RETURN(auto plan, exe.Prepare(b.main_program(), scope, {}, {}));
  Monitor monitor("workload2", device, FLAGS_workload2_steps);
  for (int64_t step = 1; step <= FLAGS_workload2_steps; ++step) {
    RETURN_IF_ERROR(exe.Run(plan.get(), &scope).status());
    monitor.AfterStep(step);
  }
  return !monitor.failed();
}

// Trains the embedding model for `steps` steps with ids from a fixed seed;
// returns the losses.
absl::StatusOr<std::vector<float>> TrainEmbedding(const Place &place, int64_t steps,
                                                  Monitor *monitor) {
  ProgramBuilder b;
  Executor exe(place);
  Scope scope;
  EmbeddingConfig config;
  config.rows = 100000;
  config.dim = 32;
  config.batch = 256;
  config.is_sparse = true;
  config.table_on_cpu = true;
  ASSIGN_OR_RETURN(EmbeddingModel m, BuildEmbeddingModel(config, &b));
  RETURN_IF_ERROR(exe.Run(b.startup_program(), &scope).status());
  ASSIGN_OR_RETURN(auto plan, exe.Prepare(b.main_program(), scope, {m.ids.name}, {m.loss.name}));
  std::mt19937_64 rng(11);
  ASSIGN_OR_RETURN(Tensor ids, Tensor::Allocate(CpuAllocator::Default(), DataType::kInt64,
                                                Shape({config.batch})));
  std::vector<float> losses;
  for (int64_t step = 1; step <= steps; ++step) {
    for (int64_t j = 0; j < config.batch; ++j) ids.data<int64_t>()[j] = rng() % config.rows;
    ASSIGN_OR_RETURN(std::vector<Tensor> out, exe.Run(plan.get(), &scope, {{m.ids.name, ids}}));
    losses.push_back(out[0].ToVector<float>()[0]);
    if (monitor != nullptr) monitor->AfterStep(step);
  }
  return losses;
}

int Main() {
  absl::StatusOr<Place> place = ParsePlace(FLAGS_place);
  if (!place.ok()) return std::printf("--place: %s\n", place.status().ToString().c_str()), 2;
  absl::StatusOr<Device *> device = DeviceRegistry::Global().GetDevice(*place);
  if (!device.ok()) return std::printf("%s\n", device.status().ToString().c_str()), 2;
  bool flat = true;
  if (FLAGS_workload2_steps > 0) {
    absl::StatusOr<bool> ok = SoakWorkload2(*place, (*device)->allocator());
    if (!ok.ok()) return std::printf("workload2: %s\n", ok.status().ToString().c_str()), 1;
    flat &= *ok;
  }
  if (FLAGS_embedding_steps > 0) {
    Monitor monitor("embedding", (*device)->allocator(), FLAGS_embedding_steps);
    absl::StatusOr<std::vector<float>> losses =
        TrainEmbedding(*place, FLAGS_embedding_steps, &monitor);
    if (!losses.ok()) return std::printf("embedding: %s\n", losses.status().ToString().c_str()), 1;
    flat &= !monitor.failed();
    const int64_t prefix = std::min<int64_t>(FLAGS_prefix_steps, FLAGS_embedding_steps);
    absl::StatusOr<std::vector<float>> short_run = TrainEmbedding(*place, prefix, nullptr);
    if (!short_run.ok()) return std::printf("%s\n", short_run.status().ToString().c_str()), 1;
    std::vector<float> head(losses->begin(), losses->begin() + prefix);
    std::printf(
        "embedding: loss at step 1 %.7g, %ld %.7g, %ld %.7g; first %ld "
        "losses %s a fresh run's\n",
        (*losses)[0], static_cast<long>(prefix), head.back(), static_cast<long>(losses->size()),
        losses->back(), static_cast<long>(prefix), head == *short_run ? "equal" : "DIFFER FROM");
    flat &= head == *short_run;
  }
  std::printf("soak %s\n", flat ? "PASSED" : "FAILED");
  return flat ? 0 : 1;
}

}  // namespace
}  // namespace tandem

int main(int argc, char **argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  return tandem::Main();
}
