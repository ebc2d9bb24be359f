// DeferredChecks: input checks that gpu kernels make on the device and that
// report at the stream's next synchronisation, so the kernel that validates
// does not make the host wait (lookup_table's id range check). One per
// CudaDevice; CudaDevice::SynchronizeStream and Synchronize resolve it.
//
//   // In a kernel's Compute, before enqueueing the validating kernel:
//   ASSIGN_OR_RETURN(CheckSlot slot,
//                    CudaDeviceOf(ctx->device())->deferred_checks()->Arm(
//                        stream, [](int64_t value, int64_t position) {
//                          return absl::InvalidArgumentError(...);  // the op's own message
//                        }));
//   CUDA_RETURN_IF_ERROR(LaunchLookup(..., slot, stream));   // fills slot's report
//   return absl::OkStatus();
//   // Later, device->SynchronizeStream(stream) returns that error, once.
//
// Arm hands out a slot (check_slot.h) and records it as pending on
// `stream`, tagged with the executor run of the launch
// (KernelContext::run_id); Resolve, called once the stream has been
// synchronised, reads the pending slots' pinned reports (no copy: the
// device wrote them), returns the error of the first one armed that found
// bad input, and frees them all. ResolveRun does the same for one run's
// checks, once that run's device work completed: a pipelined run ends on
// events, not by synchronising its streams, and the next run's checks may
// still be pending (CudaDevice::TakeRunErrors). A run that fails before
// synchronising leaves its checks pending until the next synchronisation of
// their stream. Slots are reused; their memory is the device's for its
// lifetime. Thread-safe (one mutex).
#ifndef TANDEM_BACKENDS_CUDA_DEFERRED_CHECKS_H_
#define TANDEM_BACKENDS_CUDA_DEFERRED_CHECKS_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cuda/check_slot.h"

namespace tandem {
namespace cuda {

class DeferredChecks {
 public:
  // The error for the first bad input element: its value and position.
  using Describe = std::function<absl::Status(int64_t value, int64_t position)>;

  // Checks of kernels on GPU `device`.
  explicit DeferredChecks(int device) : device_(device) {}
  ~DeferredChecks();  // frees the slots; none may be in use by a kernel
  DeferredChecks(const DeferredChecks&) = delete;
  DeferredChecks& operator=(const DeferredChecks&) = delete;

  // A slot for one launch of a validating kernel on `stream` (allocated on
  // first need: device memory and pinned host memory, set up synchronously).
  // `run_id`: KernelContext::run_id of the launch (0 outside a pipelined
  // run). While `stream` is being captured into a graph (cuda_graph.h) the
  // slot belongs to the capture: TakeCaptured hands it to the graph, whose
  // every launch arms it again (ArmCaptured), so each replay's check
  // reports at the next synchronisation like an eager launch's.
  absl::StatusOr<CheckSlot> Arm(cudaStream_t stream, uint64_t run_id, Describe describe);

  // A check whose kernel launch a captured graph holds.
  struct Slot {
    CheckSlot device;                  // what kernels get
    BadInputReport* report = nullptr;  // the host's address of device.report
  };
  struct Captured {
    Slot slot;
    Describe describe;
  };
  // The checks armed on `stream` since its capture began (for the graph
  // that ends it; a failed capture gives them back with ReleaseCaptured).
  std::vector<Captured> TakeCaptured(cudaStream_t stream);
  // Before a launch of the graph holding `checks` on `stream`: they are
  // pending there until the stream's next synchronisation (Resolve).
  void ArmCaptured(const std::vector<Captured>& checks, cudaStream_t stream);
  // The graph holding `checks` is gone: their slots are free once no launch
  // of it is pending.
  void ReleaseCaptured(const std::vector<Captured>& checks);

  // After `stream` (nullptr: every stream of the device) has been
  // synchronised: OK, or the error of the first armed check that found bad
  // input. Either way the stream's pending checks are done.
  absl::Status Resolve(cudaStream_t stream);
  // After the device work of run `run_id` (nonzero) completed: as Resolve,
  // for the checks armed with that run id, on any stream.
  absl::Status ResolveRun(uint64_t run_id);

  // Slots allocated (pending or free), for tests.
  size_t slot_count();

  // Frees the slots no check is pending on (allocated again when needed).
  // The first CUDA error, after freeing every such slot.
  absl::Status ReleaseFreeSlots();

 private:
  struct Pending {
    Slot slot;
    cudaStream_t stream;
    uint64_t run_id;
    Describe describe;
    bool graph_owned = false;  // a captured graph's: not freed once resolved
  };
  absl::StatusOr<Slot> NewSlot();
  // Resolves the pending checks `done` says are complete.
  template <typename Done>
  absl::Status ResolveWhere(Done done);

  const int device_;
  std::mutex mu_;
  std::vector<Slot> free_;        // guarded by mu_
  std::vector<Pending> pending_;  // guarded by mu_; in arming order
  std::vector<Slot> all_;         // guarded by mu_; every slot, for the destructor
  // Per capturing stream: the checks armed on it during the capture.
  std::map<cudaStream_t, std::vector<Captured>> captured_;  // guarded by mu_
};

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_DEFERRED_CHECKS_H_
