// gpu kernels of lookup_table(_grad) and l2_normalize(_grad).
//
// Bad ids give InvalidArgument naming op, id, position, range and table, as
// the host kernels do, without making the host wait:
// - lookup_table checks inside its gather kernel, which reports the first
//   bad position and its id in a deferred check (deferred_checks.h): the
//   error surfaces at the stream's next synchronisation (the end of an
//   executor run, RunOpEager, Device::SynchronizeStream), not from Compute.
//   A bad id reads nothing out of bounds (its row is zeros) and the GPU
//   stays usable.
// - lookup_table_grad reads Ids in host memory (HostMemory("Ids"): with
//   fed ids the placer hands it the host original, no copy op) and checks
//   them there before anything else, as the host kernels do. Its sparse
//   gradient's row list is those ids (SelectedRows keeps rows on the host),
//   so it needs no read-back; the dense gradient, and a sparse one whose
//   ids hit the padding row, upload the ids with the kernel's own staging
//   (kernel_staging.h).
//
// The dense gradient is deterministic and bit-identical to the host
// kernels': the host groups the positions by id (ascending positions within
// an id), uploads that plan, and one GPU thread per (id, column) sums its
// positions in that order. No atomics: repeated ids sum in position order.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/kernel_staging.h"
#include "backends/cuda/kernel_util.h"
#include "backends/cuda/nn_launchers.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/tensor/selected_rows.h"
#include "ops/math/shape_fns.h"
#include "ops/nn/prologues.h"
#include "ops/nn/shape_fns.h"

namespace tandem {
namespace cuda {
namespace {

using prologue::BadIdError;
using prologue::GetLookup;
using prologue::Lookup;
using prologue::LookupAttrs;

// Bad ids surface at the stream's next synchronisation (see the top).
class LookupTableKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Lookup l, GetLookup(*ctx, attrs_.padding_idx));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", l.w->dtype(), l.out));
    if (l.n == 0) return absl::OkStatus();
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    const int64_t* ids = l.ids->data<int64_t>();
    ASSIGN_OR_RETURN(const CheckSlot check,
                     CudaDeviceOf(ctx->device())
                         ->deferred_checks()
                         ->Arm(stream, ctx->run_id(),
                               [op = ctx->op().type, table = ctx->InputName("W"), rows = l.rows](
                                   int64_t id, int64_t position) {
                                 return BadIdError(op, table, id, position, rows);
                               }));
    if (l.dim == 0) {
      CUDA_RETURN_IF_ERROR(LaunchCheckIds(ids, l.n, l.rows, check, stream));
      return absl::OkStatus();
    }
    return DispatchFloat(l.w->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchLookup<T>(ids, l.n, l.w->data<T>(), l.rows, l.dim, l.padding_row,
                                           out->data<T>(), check, stream));
      return absl::OkStatus();
    });
  }

 private:
  LookupAttrs attrs_;
};

REGISTER_KERNEL(KernelDef("lookup_table", "gpu").TypeConstraint("W", kFloatTypes),
                LookupTableKernel);

// Ids in host memory, checked there first (as on the host). A bad one is
// usually also the forward lookup_table's, whose deferred check is then
// pending on this stream: synchronising first reports that error (the
// first failing op) and leaves nothing pending for a later run.
//
// W@GRAD dense: zeros, then each id's Out@GRAD rows summed in position order
// into its row (a DenseGradPlan, see the top), padding rows skipped.
// Sparse: SelectedRows of height rows whose row list is the ids in order
// and whose value is Out@GRAD as [n, dim]: Out@GRAD's own buffer (no copy)
// unless an id is the padding row, else a copy with the padding rows zeroed.
// The upload of a deterministic dense gradient, in the words of `staged`
// (at least DenseGradWords(n)): positions of the non-padding ids sorted by
// (id, position), then segments + 1 segment starts into them, then each
// segment's id.
struct DenseGradPlan {
  int64_t positions = 0;  // updates summed (ids that are not the padding row)
  int64_t segments = 0;   // distinct ids among them
  int64_t words() const { return positions + 2 * segments + 1; }
};

int64_t DenseGradWords(int64_t n) { return 3 * n + 1; }

// The positions of the ids that are not the padding row, sorted by (id,
// position), into order; returns their number. A counting sort over the
// table's rows when they are at most a few times the ids (a small
// vocabulary: one pass over the ids and one over the rows), else a sort of
// (id, position) pairs; both keep equal ids in position order.
int64_t SortPositionsById(const int64_t* ids, int64_t n, int64_t height, int64_t padding_row,
                          int64_t* order) {
  if (height <= 4 * n + 4096) {
    thread_local std::vector<int64_t> next;  // per row: where its next position goes
    next.assign(height + 1, 0);
    for (int64_t p = 0; p < n; ++p) {
      if (ids[p] != padding_row) ++next[ids[p] + 1];
    }
    for (int64_t r = 0; r < height; ++r) next[r + 1] += next[r];
    const int64_t count = next[height];
    for (int64_t p = 0; p < n; ++p) {
      if (ids[p] != padding_row) order[next[ids[p]]++] = p;
    }
    return count;
  }
  thread_local std::vector<std::pair<int64_t, int64_t>> pairs;
  pairs.clear();
  for (int64_t p = 0; p < n; ++p) {
    if (ids[p] != padding_row) pairs.emplace_back(ids[p], p);
  }
  std::sort(pairs.begin(), pairs.end());
  for (size_t k = 0; k < pairs.size(); ++k) order[k] = pairs[k].second;
  return static_cast<int64_t>(pairs.size());
}

DenseGradPlan PlanDenseGrad(const int64_t* ids, int64_t n, int64_t height, int64_t padding_row,
                            int64_t* staged) {
  DenseGradPlan plan;
  int64_t* order = staged;
  plan.positions = SortPositionsById(ids, n, height, padding_row, order);
  for (int64_t k = 0; k < plan.positions; ++k) {
    plan.segments += k == 0 || ids[order[k]] != ids[order[k - 1]];
  }
  int64_t* starts = order + plan.positions;
  int64_t* rows = starts + plan.segments + 1;
  int64_t s = 0;
  for (int64_t k = 0; k < plan.positions; ++k) {
    if (k == 0 || ids[order[k]] != ids[order[k - 1]]) {
      starts[s] = k;
      rows[s++] = ids[order[k]];
    }
  }
  starts[plan.segments] = plan.positions;
  return plan;
}

class LookupTableGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Lookup l, GetLookup(*ctx, attrs_.padding_idx));
    const int64_t* ids = l.ids->data<int64_t>();  // host memory
    bool hits_padding = false;
    for (int64_t p = 0; p < l.n; ++p) {
      if (ids[p] < 0 || ids[p] >= l.rows) {
        RETURN_IF_ERROR(ctx->device()->SynchronizeStream(ctx->stream()));
        return BadIdError(ctx->op().type, ctx->InputName("W"), ids[p], p, l.rows);
      }
      hits_padding |= ids[p] == l.padding_row;
    }
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    const DataType dtype = l.w->dtype();
    RETURN_IF_ERROR(
        CheckArgMeta(ctx->op().type, "Out@GRAD", dout->dtype(), dout->shape(), dtype, l.out));
    const Shape value_shape({l.n, l.dim});
    if (attrs_.is_sparse && !hits_padding) {
      ctx->OutputVar("W@GRAD")->set(
          SelectedRows(l.rows, std::vector<int64_t>(ids, ids + l.n), dout->Reshaped(value_shape)));
      return absl::OkStatus();
    }
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    if (attrs_.is_sparse) {
      ASSIGN_OR_RETURN(Tensor * value, ctx->AllocateOutput("W@GRAD", dtype, value_shape));
      ASSIGN_OR_RETURN(int64_t * staged, staging_.HostWords(ctx, l.n));
      std::copy(ids, ids + l.n, staged);
      ASSIGN_OR_RETURN(const Tensor uploaded, staging_.Upload(ctx, l.n, "the ids"));
      RETURN_IF_ERROR(DispatchFloat(dtype, [&](auto tag) -> absl::Status {
        using T = typename decltype(tag)::type;
        CUDA_RETURN_IF_ERROR(LaunchLookupGradSparseValue<T>(uploaded.data<int64_t>(), l.n,
                                                            dout->data<T>(), l.dim, l.padding_row,
                                                            value->data<T>(), stream));
        return absl::OkStatus();
      }));
      Tensor value_tensor = *value;
      ctx->OutputVar("W@GRAD")->set(
          SelectedRows(l.rows, std::vector<int64_t>(ids, ids + l.n), std::move(value_tensor)));
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(Tensor * dw, ctx->AllocateOutput("W@GRAD", dtype, l.w->shape()));
    if (dw->NumBytes() > 0) {
      CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dw->raw_data(), 0, dw->NumBytes(), stream));
    }
    ASSIGN_OR_RETURN(int64_t * staged, staging_.HostWords(ctx, DenseGradWords(l.n)));
    const DenseGradPlan plan = PlanDenseGrad(ids, l.n, l.rows, l.padding_row, staged);
    ASSIGN_OR_RETURN(const Tensor uploaded,
                     staging_.Upload(ctx, plan.words(), "the dense gradient's row plan"));
    const int64_t* order = uploaded.data<int64_t>();
    const int64_t* starts = order + plan.positions;
    const int64_t* rows = starts + plan.segments + 1;
    return DispatchFloat(dtype, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchLookupGradDense<T>(order, starts, rows, plan.segments,
                                                    dout->data<T>(), l.dim, dw->data<T>(), stream));
      return absl::OkStatus();
    });
  }

 private:
  LookupAttrs attrs_;
  KernelStaging staging_;
};

// The dense gradient's row plan (DenseGradWords), or the ids of a sparse
// gradient that a padding id may hit (the ids are not known before the
// run: counted).
int64_t LookupTableGradScratch(const OpDesc& op, const ArgMetas& in, const ArgMetas&) {
  const TensorMeta* ids = FirstMeta(in, "Ids");
  LookupAttrs attrs;
  if (ids == nullptr || !attrs.Read(op).ok()) return 0;
  if (attrs.is_sparse && attrs.padding_idx == -1) return 0;
  const int64_t n = ids->shape.num_elements();
  const int64_t words = attrs.is_sparse ? n : DenseGradWords(n);
  return words * static_cast<int64_t>(sizeof(int64_t));
}

REGISTER_KERNEL(KernelDef("lookup_table_grad", "gpu")
                    .TypeConstraint("W", kFloatTypes)
                    .HostMemory("Ids")
                    .Scratch(LookupTableGradScratch)
                    .HostStaging(LookupTableGradScratch),  // the ids, pinned, kept by the kernel
                LookupTableGradKernel);

struct L2Attrs {
  int64_t axis = -1;
  double epsilon = 1e-10;

  absl::Status Read(const OpDesc& op) {
    ASSIGN_OR_RETURN(axis, GetAttr<int64_t>(op.attrs, "axis", op.type));
    ASSIGN_OR_RETURN(epsilon, GetAttr<double>(op.attrs, "epsilon", op.type));
    return absl::OkStatus();
  }
};

// X validated (floating, axis in range), as [outer, n, inner] around the axis.
absl::StatusOr<AxisGeometry> L2Geometry(const KernelContext* ctx, const Tensor& x,
                                        int64_t axis_attr) {
  const std::string& op = ctx->op().type;
  RETURN_IF_ERROR(CheckFloating(op, "X", x.dtype()));
  ASSIGN_OR_RETURN(int axis, NormalizeAxis(op, "X", x.shape(), axis_attr));
  AxisGeometry g;
  for (int d = 0; d < x.shape().rank(); ++d) {
    (d < axis ? g.outer : d == axis ? g.n : g.inner) *= x.shape().dim(d);
  }
  return g;
}

class L2NormalizeKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(AxisGeometry g, L2Geometry(ctx, *x, attrs_.axis));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", x->dtype(), x->shape()));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(
          LaunchL2Normalize<T>(x->data<T>(), out->data<T>(), g, attrs_.epsilon, stream));
      return absl::OkStatus();
    });
  }

 private:
  L2Attrs attrs_;
};

REGISTER_KERNEL(KernelDef("l2_normalize", "gpu").TypeConstraint("X", kFloatTypes),
                L2NormalizeKernel);

class L2NormalizeGradKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
    ASSIGN_OR_RETURN(const Tensor* out, ctx->InputTensor("Out"));
    ASSIGN_OR_RETURN(const Tensor* dout, ctx->InputTensor("Out@GRAD"));
    ASSIGN_OR_RETURN(AxisGeometry g, L2Geometry(ctx, *x, attrs_.axis));
    for (const auto& [arg, t] : {std::make_pair("Out", out), std::make_pair("Out@GRAD", dout)}) {
      RETURN_IF_ERROR(
          CheckArgMeta(ctx->op().type, arg, t->dtype(), t->shape(), x->dtype(), x->shape()));
    }
    ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("X@GRAD", x->dtype(), x->shape()));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchL2NormalizeGrad<T>(x->data<T>(), out->data<T>(), dout->data<T>(),
                                                    dx->data<T>(), g, attrs_.epsilon, stream));
      return absl::OkStatus();
    });
  }

 private:
  L2Attrs attrs_;
};

REGISTER_KERNEL(KernelDef("l2_normalize_grad", "gpu").TypeConstraint("X", kFloatTypes),
                L2NormalizeGradKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
