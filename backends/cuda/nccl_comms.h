// NCCL communicators of this process, created once per device set (or per
// collective group across processes) and destroyed at exit (atexit handlers
// registered once CUDA is initialised, so before CUDA's own teardown:
// memcheck's leak check finds nothing held), and NCCL's errors as
// absl::Status. A communicator across processes is destroyed with
// ncclCommAbort, which frees this process's resources without waiting for
// its peers (a peer that exited or failed cannot hang this one's exit), as
// PyTorch's process groups do at shutdown.
//
//   ASSIGN_OR_RETURN(const NcclDeviceSet* set, NcclDeviceSet::For({0, 1}));
//   ncclComm_t comm = set->comm(rank);          // rank r drives GPU set->ordinals()[r]
//   NCCL_RETURN_IF_ERROR(ncclAllReduce(in, out, n, ncclFloat32, ncclSum, comm, stream));
//
// A device set is the list of GPU ordinals of a group's ranks, in rank
// order (one rank per GPU: NCCL takes no GPU twice in one communicator);
// ncclCommInitAll makes its communicators the first time the set is asked
// for. Across processes (one GPU each, e.g. under mpirun),
// NcclCommAcrossProcesses makes this process's communicator: rank 0 makes
// NCCL's unique id and the job's ProcessGroup carries it to the others.
// Thread-safe. Collectives on the communicators of one set must be
// issued in the same order on every rank (the executor runs a plan's
// collectives in program order; framework/runtime plan_passes.cc).
#ifndef TANDEM_BACKENDS_CUDA_NCCL_COMMS_H_
#define TANDEM_BACKENDS_CUDA_NCCL_COMMS_H_

#include <nccl.h>

#include <vector>

#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "framework/parallel/process_group.h"

namespace tandem {
namespace cuda {

// OK for ncclSuccess; ncclSystemError and ncclRemoteError are Unavailable,
// ncclInvalidArgument and ncclInvalidUsage InvalidArgument, the others
// Internal; the message holds file:line, the expression, NCCL's error
// string and its last error message.
absl::Status NcclStatus(ncclResult_t result, const char* expr, const char* file, int line);

class NcclDeviceSet {
 public:
  // The communicators of GPUs `ordinals` (rank r on ordinals[r]), made once.
  // InvalidArgument for an empty list or a GPU listed twice; NCCL's error
  // (e.g. Unavailable without a usable NCCL) naming the set otherwise.
  static absl::StatusOr<const NcclDeviceSet*> For(const std::vector<int>& ordinals);

  // Destroys every device set's communicators (sets made later are new):
  // at exit, or in a test. No collective on them may be in flight, and no
  // caller may hold a set it got before.
  static absl::Status DestroyAll();
  ~NcclDeviceSet();

  const std::vector<int>& ordinals() const { return ordinals_; }
  ncclComm_t comm(int rank) const { return comms_[rank]; }

 private:
  NcclDeviceSet(std::vector<int> ordinals, std::vector<ncclComm_t> comms)
      : ordinals_(std::move(ordinals)), comms_(std::move(comms)) {}
  std::vector<int> ordinals_;
  std::vector<ncclComm_t> comms_;
};

// This process's communicator in the job of `processes` (rank
// processes->rank() on GPU `ordinal`), made once per `key` (the collective
// group's id) with ncclCommInitRank after the unique id went from rank 0 to
// every process within `deadline`. The ProcessGroup's error, or NCCL's
// naming the rank and GPU.
absl::StatusOr<ncclComm_t> NcclCommAcrossProcesses(int64_t key, ProcessGroup* processes,
                                                   int ordinal, absl::Duration deadline);

// Destroys (ncclCommAbort) every communicator NcclCommAcrossProcesses made;
// a later call for a key makes a new one. At exit, or in a test: no
// collective on them may be in flight in this process, and no caller may
// still use a communicator it got before.
absl::Status DestroyCommsAcrossProcesses();

}  // namespace cuda
}  // namespace tandem

#define NCCL_RETURN_IF_ERROR(...)                                                               \
  do {                                                                                          \
    const ncclResult_t tandem_nccl_result_ = (__VA_ARGS__);                                     \
    if (ABSL_PREDICT_FALSE(tandem_nccl_result_ != ncclSuccess)) {                               \
      return ::tandem::cuda::NcclStatus(tandem_nccl_result_, #__VA_ARGS__, __FILE__, __LINE__); \
    }                                                                                           \
  } while (0)

#endif  // TANDEM_BACKENDS_CUDA_NCCL_COMMS_H_
