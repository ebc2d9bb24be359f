#include "backends/cuda/deferred_checks.h"

#include <new>
#include <utility>

#include "backends/cuda/cuda_device_guard.h"
#include "backends/cuda/cuda_status.h"
#include "framework/base/status_macros.h"
#include "glog/logging.h"

namespace tandem {
namespace cuda {
namespace {

// The device words of a slot, in one allocation.
struct SlotWords {
  BadPosition first_bad;
  unsigned int blocks_done;
};

// Frees the memory of `slot`; the first error.
absl::Status FreeSlotMemory(const CheckSlot& device, void* report) {
  const absl::Status words = CudaStatus(cudaFree(device.first_bad), "cudaFree", __FILE__, __LINE__);
  const absl::Status host = CudaStatus(cudaFreeHost(report), "cudaFreeHost", __FILE__, __LINE__);
  return words.ok() ? host : words;
}

}  // namespace

DeferredChecks::~DeferredChecks() {
  CudaDeviceGuard guard(device_);
  for (const Slot& slot : all_) {
    const absl::Status s = FreeSlotMemory(slot.device, slot.report);
    LOG_IF(ERROR, !s.ok()) << s;
  }
}

absl::Status DeferredChecks::ReleaseFreeSlots() {
  CudaDeviceGuard guard(device_);
  std::lock_guard<std::mutex> lock(mu_);
  absl::Status first;
  for (const Slot& slot : free_) {
    first.Update(FreeSlotMemory(slot.device, slot.report));
    for (size_t i = 0; i < all_.size(); ++i) {
      if (all_[i].report != slot.report) continue;
      all_[i] = all_.back();
      all_.pop_back();
      break;
    }
  }
  free_.clear();
  return first;
}

absl::StatusOr<DeferredChecks::Slot> DeferredChecks::NewSlot() {
  CudaDeviceGuard guard(device_);
  // Raw allocations, not the caching allocators: slots live as long as the
  // device and stay out of the tensors' memory statistics and limit.
  void* words = nullptr;
  CUDA_RETURN_IF_ERROR(cudaMalloc(&words, sizeof(SlotWords)));
  const SlotWords initial{kNoBadInput, 0};
  cudaError_t error = cudaMemcpy(words, &initial, sizeof(initial), cudaMemcpyHostToDevice);
  void* report = nullptr;
  if (error == cudaSuccess) {
    error = cudaHostAlloc(&report, sizeof(BadInputReport), cudaHostAllocMapped);
  }
  void* report_on_device = nullptr;
  if (error == cudaSuccess) error = cudaHostGetDevicePointer(&report_on_device, report, 0);
  if (error != cudaSuccess) {
    cudaFree(words);
    if (report != nullptr) cudaFreeHost(report);
    CUDA_RETURN_IF_ERROR(error);
  }
  auto* w = static_cast<SlotWords*>(words);
  const Slot slot{{&w->first_bad, &w->blocks_done, static_cast<BadInputReport*>(report_on_device)},
                  new (report) BadInputReport()};
  std::lock_guard<std::mutex> lock(mu_);
  all_.push_back(slot);
  return slot;
}

absl::StatusOr<CheckSlot> DeferredChecks::Arm(cudaStream_t stream, uint64_t run_id,
                                              Describe describe) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream, &capture));
  const bool capturing = capture != cudaStreamCaptureStatusNone;
  Slot slot;
  bool have_slot = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
      have_slot = true;
    }
  }
  if (!have_slot) {
    // The stream is non-blocking: the setup copy does not touch a capture.
    ASSIGN_OR_RETURN(slot, NewSlot());
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (capturing) {
    captured_[stream].push_back({slot, std::move(describe)});
  } else {
    pending_.push_back({slot, stream, run_id, std::move(describe)});
  }
  return slot.device;
}

std::vector<DeferredChecks::Captured> DeferredChecks::TakeCaptured(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = captured_.find(stream);
  if (it == captured_.end()) return {};
  std::vector<Captured> taken = std::move(it->second);
  captured_.erase(it);
  return taken;
}

void DeferredChecks::ArmCaptured(const std::vector<Captured>& checks, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Captured& c : checks) {
    pending_.push_back({c.slot, stream, /*run_id=*/0, c.describe, /*graph_owned=*/true});
  }
}

void DeferredChecks::ReleaseCaptured(const std::vector<Captured>& checks) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Captured& c : checks) {
    bool pending = false;
    for (Pending& p : pending_) {
      if (p.slot.report == c.slot.report) {
        p.graph_owned = false;  // freed when resolved
        pending = true;
      }
    }
    if (!pending) free_.push_back(c.slot);
  }
}

template <typename Done>
absl::Status DeferredChecks::ResolveWhere(Done is_done) {
  absl::Status first_error;
  std::vector<Pending> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_.empty()) return absl::OkStatus();
    std::vector<Pending> still_pending;
    for (Pending& p : pending_) {
      (is_done(p) ? done : still_pending).push_back(std::move(p));
    }
    pending_ = std::move(still_pending);
  }
  // The kernels that wrote these reports have finished (the caller
  // synchronised), and no other launch uses their slots until they are freed.
  for (Pending& p : done) {
    BadInputReport& report = *p.slot.report;  // written by the device, read here
    if (report.position != kNoBadInput) {
      if (first_error.ok()) {
        first_error = p.describe(report.value, static_cast<int64_t>(report.position));
      }
      report = BadInputReport();
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const Pending& p : done) {
    if (!p.graph_owned) free_.push_back(p.slot);
  }
  return first_error;
}

absl::Status DeferredChecks::Resolve(cudaStream_t stream) {
  return ResolveWhere(
      [stream](const Pending& p) { return stream == nullptr || p.stream == stream; });
}

absl::Status DeferredChecks::ResolveRun(uint64_t run_id) {
  return ResolveWhere([run_id](const Pending& p) { return p.run_id == run_id; });
}

size_t DeferredChecks::slot_count() {
  std::lock_guard<std::mutex> lock(mu_);
  return all_.size();
}

}  // namespace cuda
}  // namespace tandem
