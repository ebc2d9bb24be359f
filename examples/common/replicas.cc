#include "examples/common/replicas.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"

namespace tandem {
namespace {

std::shared_ptr<MpiProcessGroup>& Mpi() {
  static auto* mpi = new std::shared_ptr<MpiProcessGroup>();
  return *mpi;
}

}  // namespace

absl::Status InitExampleMpi(int* argc, char*** argv) {
  absl::StatusOr<std::shared_ptr<MpiProcessGroup>> mpi = MpiProcessGroup::Init(argc, argv);
  if (!mpi.ok()) {
    return absl::Status(mpi.status().code(), absl::StrCat("--mpi: ", mpi.status().message()));
  }
  Mpi() = *std::move(mpi);
  return absl::OkStatus();
}

std::shared_ptr<MpiProcessGroup> ExampleMpi() { return Mpi(); }

void FinishExampleMpi(const absl::Status& status) {
  if (Mpi() == nullptr) return;
  if (!status.ok()) Mpi()->Abort(status);
  Mpi().reset();
}

bool IsMainProcess() { return Mpi() == nullptr || Mpi()->rank() == 0; }

int Replicas(int data_parallel) { return Mpi() != nullptr ? Mpi()->size() : data_parallel; }

absl::StatusOr<std::vector<Place>> ReplicaPlaces(const Place& first, int n) {
  if (Mpi() != nullptr) {
    return std::vector<Place>{first.type() == DeviceType::GPU() ? GPUPlace(Mpi()->local_rank())
                                                                : first};
  }
  std::vector<Place> places;
  const int have = first.is_host() ? n : DeviceRegistry::Global().DeviceCount(first.type());
  if (n > have) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--data_parallel=", n, " needs ", n, " ", first.type().name(), " devices, there are ", have,
        first.type().name() == std::string("sim") ? " (raise --sim_devices)" : ""));
  }
  for (int i = 0; i < n; ++i) places.push_back(first.is_host() ? first : Place(first.type(), i));
  return places;
}

absl::StatusOr<DataParallelOptions> ExampleDataParallelOptions(const Place& first, int n,
                                                               int64_t bucket_mb,
                                                               ExecutorOptions executor) {
  DataParallelOptions o;
  ASSIGN_OR_RETURN(o.places, ReplicaPlaces(first, n));
  o.processes = ExampleMpi();
  o.bucket_bytes = bucket_mb << 20;
  o.executor = std::move(executor);
  return o;
}

}  // namespace tandem
