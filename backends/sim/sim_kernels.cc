// The sim kernels: the shared kernels of backends/common (math, nn, loss,
// metric, optimizer, array, random, layout and layer ops), registered for
// "sim" and run single-threaded (SerialPolicy), like a device executing one
// kernel at a time. They read and write sim memory only: the runner
// checks that inputs are on the sim place (KernelContext::CheckInputPlaces)
// and outputs come from the device's allocator. A backend with its own
// threading or GEMM would pass its own policy instead (see backends/cpu).
//
// Stream order: the shared kernels compute synchronously inside Compute, on
// the calling thread. Each one registered here is wrapped (StreamOrdered)
// so that Compute first drains ctx->stream(): the async copies and event
// waits queued on it before the kernel have executed when it reads its
// inputs (sim_device.h, "Honest limits"). Sim kernels registered elsewhere
// with REGISTER_KERNEL are not wrapped.
#include <memory>
#include <utility>

#include "backends/common/host_kernels.h"
#include "backends/common/serial_policy.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "glog/logging.h"

namespace tandem {
namespace {

const HostKernelsRegistrar<SerialPolicy> host_kernels("sim");

// A kernel that computes once the work queued on its stream has executed.
// Thread-safety as the wrapped kernel's.
class StreamOrderedKernel final : public OpKernel {
 public:
  explicit StreamOrderedKernel(std::unique_ptr<OpKernel> kernel) : kernel_(std::move(kernel)) {}

  // Init was called on the wrapped kernel by its factory.
  absl::Status Compute(KernelContext* ctx) override {
    RETURN_IF_ERROR(ctx->device()->SynchronizeStream(ctx->stream()));
    return kernel_->Compute(ctx);
  }

 private:
  std::unique_ptr<OpKernel> kernel_;
};

KernelFactory StreamOrdered(KernelFactory factory) {
  return [factory =
              std::move(factory)](const OpDesc& op) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
    ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> kernel, factory(op));
    return std::unique_ptr<OpKernel>(std::make_unique<StreamOrderedKernel>(std::move(kernel)));
  };
}

// Defined after the registrars above: static initialisation runs in order
// of definition within a file, so it wraps all of them.
struct StreamOrderRegistrar {
  StreamOrderRegistrar() {
    CHECK_GT(KernelRegistry::Global().WrapFactories("sim", StreamOrdered), 0);
  }
};
const StreamOrderRegistrar stream_order;

}  // namespace
}  // namespace tandem
