// MpiProcessGroup: the processes of an mpirun job as a ProcessGroup
// (framework/parallel/process_group.h), over Debian's Open MPI. One
// process per GPU (or per cpu/sim replica): data parallelism across
// processes and hosts, with the collectives of a CollectiveGroup made by
// CollectiveGroup::CreateAcrossProcesses going through it (host tensors
// here; NCCL bootstraps its communicator through Broadcast).
//
//   // mpirun -np 2 my_trainer --mpi
//   ASSIGN_OR_RETURN(std::shared_ptr<MpiProcessGroup> mpi, MpiProcessGroup::Init(&argc, &argv));
//   DataParallelOptions o;
//   o.processes = mpi;                            // rank mpi->rank() of mpi->size()
//   o.places = {GPUPlace(mpi->local_rank())};     // this process's one place
//
// Transfers are point to point (each rank sends its part to every other),
// non-blocking and polled, so a call never waits past its deadline and
// names the ranks it did not hear from; an Abort's message travels on a
// communicator of its own and ends the pending calls of every process.
// Messages over 1 GiB go in pieces. With Open MPI's default policy mpirun
// ends every process of the job once one dies; `mpirun --enable-recovery`
// keeps the others running, so that they return the error naming the rank.
//
// Thread-safety: AllGather and Broadcast are serialised (one at a time, in
// the order the threads get in); Abort and failure may be called from any
// thread at any time (MPI_THREAD_MULTIPLE). Ownership: one per process,
// from Init; MPI is finalised when the last reference goes, unless the
// group failed (the other processes may be gone: finalising could wait
// for them).
#ifndef TANDEM_DISTRIBUTED_MPI_MPI_PROCESS_GROUP_H_
#define TANDEM_DISTRIBUTED_MPI_MPI_PROCESS_GROUP_H_

#include <memory>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/parallel/process_group.h"

namespace tandem {

class MpiProcessGroup final : public ProcessGroup {
 public:
  // Initialises MPI with MPI_THREAD_MULTIPLE. FailedPrecondition when MPI
  // was initialised before in this process or lacks that thread level,
  // Unavailable when MPI_Init fails. `argc`/`argv` may be null.
  static absl::StatusOr<std::shared_ptr<MpiProcessGroup>> Init(int* argc, char*** argv);
  // Whether this process was started by Open MPI's mpirun.
  static bool LaunchedByMpirun();

  ~MpiProcessGroup() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  std::string name() const override { return "mpi"; }

  absl::Status AllGather(const void* in, int64_t bytes, void* out, absl::Duration deadline,
                         const std::string& what) override;
  absl::Status Broadcast(void* buf, int64_t bytes, int root, absl::Duration deadline,
                         const std::string& what) override;
  void Abort(const absl::Status& why) override;
  absl::Status failure() const override;

 private:
  struct Comms;
  struct Transfers;
  explicit MpiProcessGroup(std::unique_ptr<Comms> comms);

  // Waits until every transfer is done, the deadline passes (the missing
  // ranks named) or a process aborted; the failure ends the group.
  absl::Status Await(Transfers& transfers, absl::Duration deadline, const std::string& what);
  // An Abort's message from another process, if one came.
  void ReceiveAbort();
  void Fail(const absl::Status& why);
  // Gives up the call whose transfer with `peer` could not be posted.
  absl::Status PostingFailed(Transfers& t, int peer, int code, const std::string& what);

  std::unique_ptr<Comms> comms_;
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  std::mutex call_mu_;             // one AllGather or Broadcast at a time
  mutable std::mutex failure_mu_;  // guards failure_ and the receipt of aborts
  absl::Status failure_;
};

}  // namespace tandem

#endif  // TANDEM_DISTRIBUTED_MPI_MPI_PROCESS_GROUP_H_
