// ProcessGroup: the processes of one data-parallel job (one rank each), as
// the collectives see them: byte exchanges between the processes' host
// memory with a deadline, and a way for a failing process to tell the
// others. framework/ defines the interface only; distributed/mpi has the
// implementation over MPI (mpirun), and tests may provide their own.
//
//   std::shared_ptr<ProcessGroup> pg = ...;     // e.g. MpiProcessGroup::Init(&argc, &argv)
//   std::vector<float> all(pg->size() * n);
//   RETURN_IF_ERROR(pg->AllGather(mine.data(), n * sizeof(float), all.data(),
//                                 absl::Seconds(60), "op c_allgather 'w@GRAD'"));
//
// Order: the calls of every process are matched in the order they are made
// (the n-th call of one process meets the n-th of every other), so every
// process must make the same calls in the same order; a CollectiveGroup
// over a ProcessGroup checks that the calls agree before it moves data.
//
// Failures: a rank whose data does not arrive within `deadline` makes the
// call return DeadlineExceeded naming that rank; after Abort(why) on one
// process, the pending and later calls of every process return Aborted with
// that process's rank and `why`. Either leaves the group failed for good: a
// job whose ranks disagree on what happened cannot go on (restart it).
//
// Thread-safety: implementations serialise their calls; a call blocks the
// calling thread until it is done or has failed.
#ifndef TANDEM_FRAMEWORK_PARALLEL_PROCESS_GROUP_H_
#define TANDEM_FRAMEWORK_PARALLEL_PROCESS_GROUP_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace tandem {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;

  // This process's rank, in 0..size()-1.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The rank of this process among those on its host (which GPU it takes).
  virtual int local_rank() const = 0;
  // "mpi", for messages.
  virtual std::string name() const = 0;

  // Every process's `bytes` bytes at `in`, in rank order, into `out`
  // (size() * bytes bytes; this process's own part included). `what` names
  // the call in errors.
  virtual absl::Status AllGather(const void* in, int64_t bytes, void* out, absl::Duration deadline,
                                 const std::string& what) = 0;
  // The `bytes` bytes at `buf` of process `root` into every other's `buf`.
  virtual absl::Status Broadcast(void* buf, int64_t bytes, int root, absl::Duration deadline,
                                 const std::string& what) = 0;
  // Tells every other process that this one failed (see the header comment).
  virtual void Abort(const absl::Status& why) = 0;
  // The failure that ended the group (Abort here or on another process, a
  // missed deadline); OK while it works.
  virtual absl::Status failure() const = 0;
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_PARALLEL_PROCESS_GROUP_H_
