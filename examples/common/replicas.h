// The replicas of a data-parallel example: --data_parallel=N devices of
// --place's type in one process, or, under mpirun with --mpi, one replica
// per process (distributed/mpi). Shared by fashion_mnist and ctr:
//
//   // main(): after gflags
//   if (FLAGS_mpi) RETURN_IF_ERROR(InitExampleMpi(&argc, &argv));
//   // Train():
//   ASSIGN_OR_RETURN(DataParallelOptions o,                 // N devices, or with --mpi
//                    ExampleDataParallelOptions(place, FLAGS_data_parallel, 25, {}));  // one
//   if (IsMainProcess()) std::printf(...);                   // rank 0 prints
//   // main(): on the way out
//   FinishExampleMpi(status);
//
// Not thread-safe: call from the example's main thread.
#ifndef TANDEM_EXAMPLES_COMMON_REPLICAS_H_
#define TANDEM_EXAMPLES_COMMON_REPLICAS_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distributed/mpi/mpi_process_group.h"
#include "framework/parallel/data_parallel.h"
#include "framework/place/place.h"

namespace tandem {

// Initialises MPI: this process becomes a rank of the mpirun job.
absl::Status InitExampleMpi(int* argc, char*** argv);
// The job's process group; null without InitExampleMpi.
std::shared_ptr<MpiProcessGroup> ExampleMpi();
// Ends the job's part in this process: on a failure the other processes
// are told (so they stop too), then MPI is finalised.
void FinishExampleMpi(const absl::Status& status);

// Whether this process prints, evaluates and saves: always without MPI,
// rank 0's under mpirun.
bool IsMainProcess();
// Replicas in all: the mpirun job's processes, else `data_parallel`.
int Replicas(int data_parallel);

// This process's places: under mpirun its one place (gpu:<its rank on the
// host> for a gpu `first`, `first` otherwise); else places 0..n-1 of
// `first`'s type (the host n times for cpu). InvalidArgument naming
// --data_parallel when the type has fewer than n devices.
absl::StatusOr<std::vector<Place>> ReplicaPlaces(const Place& first, int n);

// The options of an example's DataParallel: ReplicaPlaces(first, n), the
// job's processes under mpirun, buckets of `bucket_mb` MiB, `executor`.
absl::StatusOr<DataParallelOptions> ExampleDataParallelOptions(const Place& first, int n,
                                                               int64_t bucket_mb,
                                                               ExecutorOptions executor);

}  // namespace tandem

#endif  // TANDEM_EXAMPLES_COMMON_REPLICAS_H_
