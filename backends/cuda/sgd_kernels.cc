// gpu kernel of sgd: ParamOut = Param - LearningRate * Grad, in place (ParamOut
// is bound to Param's tensor), for a dense Grad or a SelectedRows one.
//
// LearningRate is a HostMemory argument: its value is read on the host and
// passed to the kernel as an argument, so it is never copied. A sparse
// Grad's row indices are host data (SelectedRows::rows()): they are checked
// on the host and grouped by table row there (row_groups.h: a hash table,
// O(n), positions of a row kept in order), and the grouping reaches the
// device with one asynchronous copy from the kernel's pinned staging
// (kernel_staging.h); one launch applies it. Each table element is updated
// by one thread, in the gradient's order, so repeated rows accumulate
// deterministically and bit-identically to the host kernels.
//
// Validation and messages are the host kernels' (the shared prologue
// backends/common/optimizer_prologues.h, GetSgdArgs).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/common/optimizer_prologues.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/kernel_staging.h"
#include "backends/cuda/kernel_util.h"
#include "backends/cuda/row_groups.h"
#include "backends/cuda/sgd_launchers.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/op/op_schema.h"
#include "framework/tensor/selected_rows.h"
#include "ops/optimizer/shape_fns.h"

namespace tandem {
namespace cuda {
namespace {

class SgdKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::UpdateArgs a, prologue::GetSgdArgs(*ctx));
    const Tensor& param = *a.param;
    const float learning_rate = a.lr();  // host memory (HostMemory("LearningRate"))
    RETURN_IF_ERROR(DispatchFloat(param.dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      if (a.sparse()) return UpdateSparse<T>(ctx, param, a.grad->selected_rows(), learning_rate);
      CUDA_RETURN_IF_ERROR(LaunchSgdDense<T>(param.data<T>(), a.grad->tensor().data<T>(),
                                             param.NumElements(), learning_rate,
                                             CudaStreamOf(ctx->stream())));
      return absl::OkStatus();
    }));
    return ctx->SetOutput("ParamOut", param);
  }

 private:
  // Groups the rows into the staging buffer (2n words: the groups' table
  // rows as int64, then head and next as int32), uploads it, and enqueues
  // the one update kernel.
  template <typename T>
  absl::Status UpdateSparse(KernelContext* ctx, const Tensor& param, const SelectedRows& grad,
                            float learning_rate) {
    const std::vector<int64_t>& rows = grad.rows();
    const int64_t height = param.shape().dim(0);
    const int64_t width = height == 0 ? 0 : param.NumElements() / height;
    if (rows.empty() || width == 0) return absl::OkStatus();
    if (rows.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
      return ctx->InvalidArgument(absl::StrCat("Grad '", ctx->InputName("Grad"), "' has ",
                                               rows.size(), " rows; the gpu kernel takes at most ",
                                               std::numeric_limits<int32_t>::max()));
    }
    const int32_t n = static_cast<int32_t>(rows.size());
    ASSIGN_OR_RETURN(int64_t * words, staging_.HostWords(ctx, 2 * int64_t{n}));
    int32_t* head = reinterpret_cast<int32_t*>(words + n);
    const int32_t groups = grouper_.Group(rows.data(), n, words, head, head + n);
    ASSIGN_OR_RETURN(const Tensor grouped,
                     staging_.Upload(ctx, 2 * int64_t{n}, "the gradient's row groups"));
    const int64_t* device_words = grouped.data<int64_t>();
    const int32_t* device_head = reinterpret_cast<const int32_t*>(device_words + n);
    const SgdRowGroups on_device{groups, device_words, device_head, device_head + n};
    CUDA_RETURN_IF_ERROR(LaunchSgdRowGroups<T>(param.data<T>(), grad.value().data<T>(), width,
                                               learning_rate, on_device,
                                               CudaStreamOf(ctx->stream())));
    return absl::OkStatus();
  }

  RowGrouper grouper_;
  KernelStaging staging_;
};

// UpdateSparse's row groups on the device: two words per row of a sparse Grad.
int64_t SgdScratch(const OpDesc&, const ArgMetas& in, const ArgMetas&) {
  const TensorMeta* grad = FirstMeta(in, "Grad");
  if (grad == nullptr || !grad->selected_rows || grad->shape.rank() == 0) return 0;
  return 2 * grad->shape.dim(0) * static_cast<int64_t>(sizeof(int64_t));
}

REGISTER_KERNEL(KernelDef("sgd", "gpu")
                    .TypeConstraint("Param", kFloatTypes)
                    .HostMemory("LearningRate")
                    .Scratch(SgdScratch)
                    .HostStaging(SgdScratch),  // the same words, pinned, kept by the kernel
                SgdKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
