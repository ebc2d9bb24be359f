// The collective ops on gpu places through NCCL: c_allreduce_sum
// (ncclAllReduce; scale 1 sums, 1/nranks averages with ncclAvg, any other
// scale pre-multiplies with ncclRedOpCreatePreMulSum), c_broadcast
// (ncclBroadcast) and c_allgather of dense tensors (ncclAllGather; sparse
// SelectedRows: the values through NCCL, the row ids on the host).
//
// The communicators are those of the group's device set (nccl_comms.h):
// the GPUs of the ranks of CollectiveGroup `ring_id`, or the op's own GPU
// alone for ring_id -1; for a group across processes, this process's
// communicator in the job (bootstrapped through the group's ProcessGroup). Asynchronous: the work
// is queued on ctx->stream() (the executor's collective stream; the compute stream in order) and
// the executor orders it with the compute stream by events. An output allocated here (not in place)
// may be memory the compute stream used a moment ago (the caching allocator hands it back as soon
// as that work is queued), so the collective stream first waits for the compute stream.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/common/type_dispatch.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/elementwise_launchers.h"
#include "backends/cuda/nccl_comms.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/parallel/collective_group.h"
#include "ops/collective/prologues.h"

namespace tandem {
namespace cuda {
namespace {

absl::StatusOr<ncclDataType_t> NcclType(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return ncclFloat32;
    case DataType::kFloat64:
      return ncclFloat64;
    case DataType::kInt32:
      return ncclInt32;
    case DataType::kInt64:
      return ncclInt64;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "NCCL collectives take float32, float64, int32 and int64, got ", DataTypeName(t)));
  }
}

class NcclKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

 protected:
  // This rank's communicator, found on the first Compute (the set is made once).
  absl::StatusOr<ncclComm_t> Comm(KernelContext* ctx) {
    if (comm_ != nullptr) return comm_;
    std::vector<int> ordinals;
    if (attrs_.ring_id == -1) {
      ordinals = {ctx->place().index()};
    } else {
      std::shared_ptr<CollectiveGroup> group = CollectiveGroup::Find(attrs_.ring_id);
      if (group == nullptr || group->size() != attrs_.nranks) {
        return ctx->InvalidArgument(
            absl::StrCat("no collective group ", attrs_.ring_id, " of ", attrs_.nranks, " ranks"));
      }
      if (group->processes() != nullptr) {  // one GPU per process
        absl::StatusOr<ncclComm_t> comm = NcclCommAcrossProcesses(
            group->id(), group->processes(), ctx->place().index(), group->deadline());
        if (!comm.ok()) return ctx->InvalidArgument(comm.status().message());
        comm_ = *comm;
        return comm_;
      }
      for (const Place& p : group->places()) {
        if (p.type() != DeviceType::GPU()) {
          return ctx->InvalidArgument(absl::StrCat("group ", attrs_.ring_id, " has rank on ",
                                                   p.ToString(), "; NCCL takes gpu places only"));
        }
        ordinals.push_back(p.index());
      }
      if (ordinals[attrs_.rank] != ctx->place().index()) {
        return ctx->InvalidArgument(absl::StrCat("rank ", attrs_.rank, " of group ", attrs_.ring_id,
                                                 " is on gpu:", ordinals[attrs_.rank], ", not on ",
                                                 ctx->place().ToString()));
      }
    }
    absl::StatusOr<const NcclDeviceSet*> set = NcclDeviceSet::For(ordinals);
    if (!set.ok()) return ctx->InvalidArgument(set.status().message());
    comm_ = (*set)->comm(static_cast<int>(attrs_.ring_id == -1 ? 0 : attrs_.rank));
    return comm_;
  }

  // Out[i]: X[i]'s tensor in place, else a new tensor like X[i] (and the
  // stream then waits for the compute stream). Returns {in, out} pointers.
  absl::StatusOr<std::pair<const void*, void*>> SameShapeOutput(KernelContext* ctx, int i,
                                                                const Tensor** x) {
    ASSIGN_OR_RETURN(*x, ctx->InputTensor("X", i));
    if (ctx->OutputVar("Out", i) == ctx->InputVar("X", i)) {
      RETURN_IF_ERROR(ctx->SetOutput("Out", **x, i));
      return std::make_pair(static_cast<const void*>((*x)->raw_data()), (*x)->raw_data());
    }
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", (*x)->dtype(), (*x)->shape(), i));
    RETURN_IF_ERROR(AfterCompute(ctx));
    return std::make_pair(static_cast<const void*>((*x)->raw_data()), out->raw_data());
  }

  // Orders ctx->stream() after the work queued on the compute stream so far.
  absl::Status AfterCompute(KernelContext* ctx) {
    Stream* compute = ctx->device()->compute_stream();
    if (ctx->stream() == compute) return absl::OkStatus();
    if (event_ == nullptr)
      CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    CUDA_RETURN_IF_ERROR(cudaEventRecord(event_, CudaStreamOf(compute)));
    CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(CudaStreamOf(ctx->stream()), event_, 0));
    return absl::OkStatus();
  }

  CollectiveAttrs attrs_;
  ncclComm_t comm_ = nullptr;
  cudaEvent_t event_ = nullptr;  // kept for the process (kernels live with their plan)
};

class NcclAllReduceKernel final : public NcclKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(ncclComm_t comm, Comm(ctx));
    if (ctx->InputCount("X") != ctx->OutputCount("Out")) {
      return ctx->InvalidArgument("X and Out must hold as many variables");
    }
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    std::vector<ncclRedOp_t> made;  // pre-multiplying ops, destroyed once issued
    NCCL_RETURN_IF_ERROR(ncclGroupStart());
    absl::Status s;
    for (int i = 0; s.ok() && i < ctx->InputCount("X"); ++i) {
      const Tensor* x = nullptr;
      absl::StatusOr<std::pair<const void*, void*>> io = SameShapeOutput(ctx, i, &x);
      absl::StatusOr<ncclDataType_t> type = io.ok() ? NcclType(x->dtype()) : io.status();
      if (!type.ok()) {
        s = type.status();
        break;
      }
      ncclRedOp_t op = ncclSum;
      if (attrs_.scale == 1.0 / attrs_.nranks && attrs_.nranks > 1) {
        op = ncclAvg;
      } else if (attrs_.scale != 1) {
        double scale64 = attrs_.scale;
        float scale32 = static_cast<float>(attrs_.scale);
        void* scalar = *type == ncclFloat64 ? static_cast<void*>(&scale64) : &scale32;
        s = NcclStatus(ncclRedOpCreatePreMulSum(&op, scalar, *type, ncclScalarHostImmediate, comm),
                       "ncclRedOpCreatePreMulSum", __FILE__, __LINE__);
        if (!s.ok()) break;
        made.push_back(op);
      }
      s = NcclStatus(
          ncclAllReduce(io->first, io->second, x->NumElements(), *type, op, comm, stream),
          "ncclAllReduce", __FILE__, __LINE__);
    }
    const absl::Status ended = NcclStatus(ncclGroupEnd(), "ncclGroupEnd", __FILE__, __LINE__);
    for (ncclRedOp_t op : made) ncclRedOpDestroy(op, comm);
    RETURN_IF_ERROR(s);
    return ended;
  }
};

class NcclBroadcastKernel final : public NcclKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(ncclComm_t comm, Comm(ctx));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    NCCL_RETURN_IF_ERROR(ncclGroupStart());
    absl::Status s;
    for (int i = 0; s.ok() && i < ctx->InputCount("X"); ++i) {
      const Tensor* x = nullptr;
      absl::StatusOr<std::pair<const void*, void*>> io = SameShapeOutput(ctx, i, &x);
      absl::StatusOr<ncclDataType_t> type = io.ok() ? NcclType(x->dtype()) : io.status();
      s = type.status();
      if (s.ok()) {
        s = NcclStatus(ncclBroadcast(io->first, io->second, x->NumElements(), *type,
                                     static_cast<int>(attrs_.root), comm, stream),
                       "ncclBroadcast", __FILE__, __LINE__);
      }
    }
    const absl::Status ended = NcclStatus(ncclGroupEnd(), "ncclGroupEnd", __FILE__, __LINE__);
    RETURN_IF_ERROR(s);
    return ended;
  }
};

// Dense X: ncclAllGather. SelectedRows X (what the host kernels gather for
// shared tables; here for completeness): the values through NCCL, the row
// ids (host memory) through the in-process CollectiveGroup of ring_id.
// scale multiplies the gathered values (LaunchScale on the stream).
class NcclAllGatherKernel final : public NcclKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(ncclComm_t comm, Comm(ctx));
    ASSIGN_OR_RETURN(const prologue::AllGatherArgs a,
                     prologue::GetAllGatherArgs(ctx, attrs_.nranks));
    const Tensor* x = a.x;
    Tensor* out = a.value;
    RETURN_IF_ERROR(AfterCompute(ctx));
    ASSIGN_OR_RETURN(ncclDataType_t type, NcclType(x->dtype()));
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    NCCL_RETURN_IF_ERROR(
        ncclAllGather(x->raw_data(), out->raw_data(), x->NumElements(), type, comm, stream));
    if (attrs_.scale != 1) {
      RETURN_IF_ERROR(DispatchType(FloatTypes(), x->dtype(), *ctx, "X", [&](auto tag) {
        using T = typename decltype(tag)::type;
        CUDA_RETURN_IF_ERROR(LaunchScale<T>(out->data<T>(), out->data<T>(), out->NumElements(),
                                            attrs_.scale, 0.0, true, stream));
        return absl::OkStatus();
      }));
    }
    if (!a.sparse) return absl::OkStatus();
    std::vector<int64_t> rows = a.in->selected_rows().rows();
    if (attrs_.ring_id != -1) {
      const std::vector<int64_t> mine = std::move(rows);
      rows.assign(mine.size() * attrs_.nranks, 0);
      CollectiveGroup::Call call;
      call.kind = CollectiveKind::kAllGather;
      call.op = ctx->op().type;
      call.key = ctx->OutputName("Out") + "/rows";
      call.tensors = {
          {DataType::kInt64, mine.data(), rows.data(), static_cast<int64_t>(mine.size())}};
      std::shared_ptr<CollectiveGroup> group = CollectiveGroup::Find(attrs_.ring_id);
      if (group == nullptr) return ctx->InvalidArgument("its collective group is gone");
      RETURN_IF_ERROR(group->Run(static_cast<int>(attrs_.rank), call));
    }
    Tensor values = *out;
    a.out->set(SelectedRows(a.in->selected_rows().height(), std::move(rows), std::move(values)));
    return absl::OkStatus();
  }
};

KernelDef Def(const char* op, CollectiveKind kind) {
  return KernelDef(op, "gpu").TypeConstraint("X", kNumericTypes).Collective(kind);
}

REGISTER_KERNEL(Def("c_allreduce_sum", CollectiveKind::kAllReduce), NcclAllReduceKernel);
REGISTER_KERNEL(Def("c_broadcast", CollectiveKind::kBroadcast), NcclBroadcastKernel);
REGISTER_KERNEL(Def("c_allgather", CollectiveKind::kAllGather), NcclAllGatherKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
