// gpu kernel of sgd: ParamOut = Param - LearningRate * Grad, in place (ParamOut
// is bound to Param's tensor), for a dense Grad or a SelectedRows one.
//
// LearningRate is a HostMemory argument: its value is read on the host and
// passed to the kernel as an argument, so it is never copied. A sparse
// Grad's row indices are host data (SelectedRows::rows()): they are checked
// on the host (the prologue's range scan) and reach the device raw, with one
// asynchronous copy from the kernel's pinned staging (kernel_staging.h);
// there they are grouped by table row (a radix sort, by one block for a
// batch of up to 4096 rows, sgd_launchers.h) and one launch applies the
// groups, without the host waiting. Each table element is updated by one
// thread, in the gradient's order (the sort is stable), so repeated rows
// accumulate deterministically and bit-identically to the host kernels.
//
// Validation and messages are the host kernels' (the shared prologue
// ops/optimizer/prologues.h, GetSgdArgs).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/grad_scale.h"
#include "backends/cuda/kernel_staging.h"
#include "backends/cuda/kernel_util.h"
#include "backends/cuda/scratch.h"
#include "backends/cuda/sgd_launchers.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/op/op_schema.h"
#include "framework/tensor/selected_rows.h"
#include "ops/optimizer/prologues.h"
#include "ops/optimizer/shape_fns.h"

namespace tandem {
namespace cuda {
namespace {

// int64 words holding `bytes`.
int64_t WorkspaceWords(int64_t bytes) {
  return (bytes + static_cast<int64_t>(sizeof(int64_t)) - 1) /
         static_cast<int64_t>(sizeof(int64_t));
}

class SgdKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::UpdateArgs a, prologue::GetSgdArgs(*ctx));
    if (a.skip) return ctx->SetOutput("ParamOut", *a.param);
    const Tensor& param = *a.param;
    const float learning_rate = a.lr();  // host memory (HostMemory("LearningRate"))
    RETURN_IF_ERROR(DispatchFloat(param.dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      if (a.sparse()) return UpdateSparse<T>(ctx, param, a.grad->selected_rows(), learning_rate);
      return WithDenseGrad<T>(a.grad->tensor(), [&](const auto* grad) -> absl::Status {
        CUDA_RETURN_IF_ERROR(LaunchSgdDense<T>(param.data<T>(), grad, param.NumElements(),
                                               learning_rate, GradScaleOf<T>(a),
                                               CudaStreamOf(ctx->stream())));
        return absl::OkStatus();
      });
    }));
    return ctx->SetOutput("ParamOut", param);
  }

 private:
  // Uploads the rows (n words of staging) and enqueues their grouping and
  // the update in a workspace of device scratch (SgdSparseWorkspaceBytes).
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
    int64_t workspace_bytes = 0;
    CUDA_RETURN_IF_ERROR(SgdSparseWorkspaceBytes(n, height, &workspace_bytes));
    ASSIGN_OR_RETURN(int64_t * words, staging_.HostWords(ctx, n));
    std::copy(rows.begin(), rows.end(), words);
    ASSIGN_OR_RETURN(const Tensor device_rows,
                     staging_.Upload(ctx, n, "the gradient's row indices"));
    ASSIGN_OR_RETURN(Tensor workspace, AllocateScratch(ctx, DataType::kInt64,
                                                       Shape({WorkspaceWords(workspace_bytes)}),
                                                       "the grouping of the gradient's rows"));
    CUDA_RETURN_IF_ERROR(LaunchSgdSparse<T>(
        param.data<T>(), grad.value().data<T>(), width, learning_rate, device_rows.data<int64_t>(),
        n, height, workspace.data<int64_t>(), workspace_bytes, CudaStreamOf(ctx->stream())));
    return absl::OkStatus();
  }

  KernelStaging staging_;
};

// The rows of a sparse Grad, pinned, kept by the kernel: one word each.
int64_t SgdHostStaging(const OpDesc&, const ArgMetas& in, const ArgMetas&) {
  const TensorMeta* grad = FirstMeta(in, "Grad");
  if (grad == nullptr || !grad->selected_rows || grad->shape.rank() == 0) return 0;
  return grad->shape.dim(0) * static_cast<int64_t>(sizeof(int64_t));
}

// UpdateSparse's device scratch: the uploaded rows and the grouping's
// workspace. Without a GPU to ask CUB on (no kernel of this registration can
// run then) the workspace counts as empty.
int64_t SgdScratch(const OpDesc& op, const ArgMetas& in, const ArgMetas& out) {
  const TensorMeta* grad = FirstMeta(in, "Grad");
  const TensorMeta* param = FirstMeta(in, "Param");
  if (grad == nullptr || !grad->selected_rows || grad->shape.rank() == 0 || param == nullptr ||
      param->shape.rank() == 0) {
    return 0;
  }
  const int64_t n = grad->shape.dim(0), height = param->shape.dim(0);
  if (n == 0 || height == 0 || param->shape.num_elements() == 0) return 0;
  int64_t workspace_bytes = 0;
  if (SgdSparseWorkspaceBytes(n, height, &workspace_bytes) != cudaSuccess) {
    cudaGetLastError();  // clears the query's error
    workspace_bytes = 0;
  }
  return SgdHostStaging(op, in, out) +
         WorkspaceWords(workspace_bytes) * static_cast<int64_t>(sizeof(int64_t));
}

REGISTER_KERNEL(KernelDef("sgd", "gpu")
                    .TypeConstraint("Param", kFloatTypes)
                    .TypeConstraint("Grad", kFloatTypesWith16Bit)
                    .HostMemory("LearningRate")
                    .HostMemory("SkipUpdate")
                    .Scratch(SgdScratch)
                    .HostStaging(SgdHostStaging),
                SgdKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
