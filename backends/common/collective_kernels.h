// The host implementation of the collective ops (ops/collective): every
// rank's kernel hands its buffers to the in-process CollectiveGroup of its
// op's ring_id (framework/parallel/collective_group.h), which sums in rank
// order, so results are deterministic and the same on every rank. Used by
// the cpu and sim backends, whose memory the host addresses:
//
//   const HostKernelsRegistrar<SerialPolicy> host_kernels("sim");  // host_kernels.h
//
// Synchronous: Compute first drains its stream (the event waits queued on
// it), then returns once every rank's call was combined, or with the
// group's error (a rank that failed or did not arrive within the group's
// deadline), naming the op, the rank and the key. It blocks the calling
// thread meanwhile: the ranks of a group run on threads of their own (one
// executor per rank, framework/parallel/data_parallel.h), and the executor
// runs a plan's collectives in program order, so no two ranks wait for each
// other in different orders.
//
// ring_id -1 is the group of the op alone (nranks 1): the kernel makes one
// for itself. Thread-safety: as any kernel (one Compute at a time per
// instance).
#ifndef TANDEM_BACKENDS_COMMON_COLLECTIVE_KERNELS_H_
#define TANDEM_BACKENDS_COMMON_COLLECTIVE_KERNELS_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "backends/common/type_dispatch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/parallel/collective_group.h"
#include "framework/tensor/selected_rows.h"
#include "ops/collective/prologues.h"

namespace tandem {

// The group of ring_id (made for the op alone when -1); FailedPrecondition
// when no live group has that id, InvalidArgument when its size is not nranks.
inline absl::StatusOr<std::shared_ptr<CollectiveGroup>> GroupFor(const OpDesc& op,
                                                                 const CollectiveAttrs& a) {
  if (a.ring_id == -1) return CollectiveGroup::Create({CPUPlace()});
  std::shared_ptr<CollectiveGroup> g = CollectiveGroup::Find(a.ring_id);
  if (g == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "op '", op.type, "': no collective group ", a.ring_id,
        " (groups are made by CollectiveGroup::Create, e.g. by DataParallel, and live as long "
        "as it)"));
  }
  if (g->size() != a.nranks) {
    return absl::InvalidArgumentError(absl::StrCat("op '", op.type, "': nranks ", a.nranks,
                                                   " but group ", a.ring_id, " has ", g->size(),
                                                   " ranks"));
  }
  return g;
}

// What the three kernels share: the attributes, the group and the call.
class HostCollectiveKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    RETURN_IF_ERROR(attrs_.Read(op));
    ASSIGN_OR_RETURN(group_, GroupFor(op, attrs_));
    return absl::OkStatus();
  }

 protected:
  // Drains the stream, then runs `call` as this rank's part.
  absl::Status RunCall(KernelContext* ctx, CollectiveGroup::Call* call) {
    RETURN_IF_ERROR(ctx->device()->SynchronizeStream(ctx->stream()));
    call->op = ctx->op().type;
    call->key = ctx->OutputName("Out");
    call->scale = attrs_.scale;
    call->root = static_cast<int>(attrs_.root);
    return group_->Run(static_cast<int>(attrs_.rank), *call);
  }

  // Out[i]: X[i]'s tensor when the op binds the same variable (in place),
  // else a new tensor of X[i]'s dtype and shape. Adds the part to `call`.
  absl::Status AddSameShapePart(KernelContext* ctx, int i, CollectiveGroup::Call* call) {
    ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X", i));
    void* out = nullptr;
    if (ctx->OutputVar("Out", i) == ctx->InputVar("X", i)) {
      RETURN_IF_ERROR(ctx->SetOutput("Out", *x, i));
      out = x->raw_data();
    } else {
      ASSIGN_OR_RETURN(Tensor * t, ctx->AllocateOutput("Out", x->dtype(), x->shape(), i));
      out = t->raw_data();
    }
    call->tensors.push_back({x->dtype(), x->raw_data(), out, x->NumElements()});
    return absl::OkStatus();
  }

  absl::Status CheckCounts(KernelContext* ctx) const {
    if (ctx->InputCount("X") == ctx->OutputCount("Out")) return absl::OkStatus();
    return ctx->InvalidArgument(absl::StrCat("X holds ", ctx->InputCount("X"),
                                             " variables but Out ", ctx->OutputCount("Out")));
  }

  CollectiveAttrs attrs_;
  std::shared_ptr<CollectiveGroup> group_;
};

// c_allreduce_sum: Out[i] = scale * the ranks' X[i] summed in rank order.
class HostAllReduceKernel final : public HostCollectiveKernel {
 public:
  using Types = NumericTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("c_allreduce_sum", device_type)
        .TypeConstraint("X", Types::DataTypes())
        .Collective(CollectiveKind::kAllReduce);
  }
  absl::Status Compute(KernelContext* ctx) override {
    RETURN_IF_ERROR(CheckCounts(ctx));
    CollectiveGroup::Call call;
    call.kind = CollectiveKind::kAllReduce;
    for (int i = 0; i < ctx->InputCount("X"); ++i) RETURN_IF_ERROR(AddSameShapePart(ctx, i, &call));
    return RunCall(ctx, &call);
  }
};

// c_broadcast: Out[i] = X[i] of rank root.
class HostBroadcastKernel final : public HostCollectiveKernel {
 public:
  using Types = NumericTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("c_broadcast", device_type)
        .TypeConstraint("X", Types::DataTypes())
        .Collective(CollectiveKind::kBroadcast);
  }
  absl::Status Compute(KernelContext* ctx) override {
    RETURN_IF_ERROR(CheckCounts(ctx));
    CollectiveGroup::Call call;
    call.kind = CollectiveKind::kBroadcast;
    for (int i = 0; i < ctx->InputCount("X"); ++i) RETURN_IF_ERROR(AddSameShapePart(ctx, i, &call));
    return RunCall(ctx, &call);
  }
};

// c_allgather: the ranks' X along axis 0 in rank order, times scale; a
// SelectedRows X gives the SelectedRows of every rank's rows and values.
class HostAllGatherKernel final : public HostCollectiveKernel {
 public:
  using Types = NumericTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("c_allgather", device_type)
        .TypeConstraint("X", Types::DataTypes())
        .Collective(CollectiveKind::kAllGather);
  }
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::AllGatherArgs a,
                     prologue::GetAllGatherArgs(ctx, attrs_.nranks));
    const Tensor* x = a.x;
    Tensor* value = a.value;
    CollectiveGroup::Call call;
    call.kind = CollectiveKind::kAllGather;
    call.tensors.push_back({x->dtype(), x->raw_data(), value->raw_data(), x->NumElements()});
    std::vector<int64_t> rows;
    if (a.sparse) {
      const std::vector<int64_t>& mine = a.in->selected_rows().rows();
      rows.resize(mine.size() * attrs_.nranks);
      call.tensors.push_back(
          {DataType::kInt64, mine.data(), rows.data(), static_cast<int64_t>(mine.size())});
    }
    RETURN_IF_ERROR(RunCall(ctx, &call));
    if (attrs_.scale != 1) {
      RETURN_IF_ERROR(DispatchType(FloatTypes(), value->dtype(), *ctx, "X", [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* v = value->data<T>();
        const T s = static_cast<T>(attrs_.scale);
        for (int64_t i = 0; i < value->NumElements(); ++i) v[i] *= s;
        return absl::OkStatus();
      }));
    }
    if (a.sparse) {
      Tensor gathered = *value;
      a.out->set(
          SelectedRows(a.in->selected_rows().height(), std::move(rows), std::move(gathered)));
    }
    return absl::OkStatus();
  }
};

// Registers the three kernels for `device_type` (all numeric dtypes).
inline void RegisterCollectiveKernels(const std::string& device_type) {
  RegisterByContract<HostAllReduceKernel, HostBroadcastKernel, HostAllGatherKernel>(device_type);
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_COLLECTIVE_KERNELS_H_
