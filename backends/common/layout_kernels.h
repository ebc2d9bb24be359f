// The kernels of the layout ops (ops/array) for every backend whose memory
// the host can address: reshape(_grad), transpose(_grad), concat(_grad) and
// split(_grad). Each is written once, templated on an execution policy
// (serial_policy.h). A backend registers them under its device type with
// one line:
//
//   const HostKernelsRegistrar<SerialPolicy> host_kernels("sim");  // host_kernels.h  //
//   host_kernels.h
//
// Each kernel class's static Contract is its registration line and RegisterLayoutKernels lists them
// (all arguments in device memory; X, or Out@GRAD for transpose_grad: float32, float64, int32,
// int64). reshape and reshape_grad (reshape_kernels.h) move no data: the
// output shares the input's buffer with new dims. Kernels validate their
// inputs with ops/array/prologues.h, as the gpu kernels do (InvalidArgument
// naming the op, the shapes and the attributes), compute synchronously through the policy and never
// copy between places. Compute is thread-safe across kernel instances.
#ifndef TANDEM_BACKENDS_COMMON_LAYOUT_KERNELS_H_
#define TANDEM_BACKENDS_COMMON_LAYOUT_KERNELS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "backends/common/layout.h"
#include "backends/common/reshape_kernels.h"
#include "backends/common/type_dispatch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/kernel/op_kernel.h"
#include "framework/op/op_desc.h"
#include "framework/tensor/tensor.h"
#include "ops/array/prologues.h"
#include "ops/array/shape_fns.h"
#include "ops/math/prologues.h"
#include "ops/math/shape_fns.h"

namespace tandem {
// Out = X transposed: Out.dim(k) = X.dim(axis[k]) (attr axis, a
// permutation of X's dims). For transpose_grad (`kGrad`), X@GRAD =
// Out@GRAD transposed by the inverse permutation.
template <typename Policy, bool kGrad>
class TransposeKernel final : public OpKernel {
 public:
  using Types = NumericTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef(kGrad ? "transpose_grad" : "transpose", device_type)
        .TypeConstraint(kGrad ? "Out@GRAD" : "X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return prologue::ReadAttr(op, "axis", &axis_); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::TransposeArgs a,
                     prologue::GetTransposeArgs(ctx, axis_, kGrad));
    return DispatchType(Types(), a.x->dtype(), *ctx, kGrad ? "Out@GRAD" : "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      Transpose<T, Policy>(a.x->data<T>(), a.x->shape(), a.axis, a.out->data<T>());
      return absl::OkStatus();
    });
  }

 private:
  std::vector<int64_t> axis_;
};

// Out = the X list (same dtype and rank, equal dims except along attr
// axis; negative counts from the end) joined along axis, in order.
template <typename Policy>
class ConcatKernel final : public OpKernel {
 public:
  using Types = NumericTypesWith16Bit;
  // concat also joins 16-bit values: mixed precision joins embeddings in
  // bfloat16 before the first fc (framework/amp/amp.h).
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("concat", device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op, /*grad=*/false); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::ConcatArgs a, prologue::GetConcatArgs(ctx, attrs_.axis));
    return DispatchType(Types(), a.out->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<const T*> pieces;
      for (const Tensor* x : a.xs) pieces.push_back(x->data<T>());
      JoinPieces<T, Policy>(a.p, pieces, a.out->data<T>());
      return absl::OkStatus();
    });
  }

 private:
  prologue::ConcatAttrs attrs_;
};

// X@GRAD[j] = the part of Out@GRAD that X[grad_positions[j]] occupies
// (attr grad_positions, increasing; empty: every X). X is read for its
// shapes only; Out@GRAD must have the concatenated shape and X's dtype.
template <typename Policy>
class ConcatGradKernel final : public OpKernel {
 public:
  using Types = NumericTypesWith16Bit;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("concat_grad", device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op, /*grad=*/true); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::ConcatGradArgs a, prologue::GetConcatGradArgs(ctx, attrs_));
    return DispatchType(Types(), a.dout->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<T*> pieces;
      for (Tensor* g : a.grads) pieces.push_back(g == nullptr ? nullptr : g->data<T>());
      CutPieces<T, Policy>(a.p, a.dout->data<T>(), pieces);
      return absl::OkStatus();
    });
  }

 private:
  prologue::ConcatAttrs attrs_;
};

// Out[i] = piece i of X along attr axis: num > 0 equal pieces, or the
// sizes in sections (one -1 takes the rest). Out binds one variable per
// piece.
template <typename Policy>
class SplitKernel final : public OpKernel {
 public:
  using Types = NumericTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("split", device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op, /*grad=*/false); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::SplitArgs a, prologue::GetSplitArgs(ctx, attrs_));
    return DispatchType(Types(), a.x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<T*> pieces;
      for (Tensor* out : a.outs) pieces.push_back(out->data<T>());
      CutPieces<T, Policy>(a.p, a.x->data<T>(), pieces);
      return absl::OkStatus();
    });
  }

 private:
  prologue::SplitAttrs attrs_;
};

// X@GRAD = the pieces of X (split's attrs) joined along axis, piece
// grad_positions[j] being Out@GRAD[j] (which must have that piece's shape
// and X's dtype) and every other piece zeros. X is read for its shape only.
template <typename Policy>
class SplitGradKernel final : public OpKernel {
 public:
  using Types = NumericTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("split_grad", device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op, /*grad=*/true); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::SplitGradArgs a, prologue::GetSplitGradArgs(ctx, attrs_));
    return DispatchType(Types(), a.x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<const T*> pieces;
      for (const Tensor* g : a.grads) pieces.push_back(g == nullptr ? nullptr : g->data<T>());
      JoinPieces<T, Policy>(a.p, pieces, a.dx->data<T>());
      return absl::OkStatus();
    });
  }

 private:
  prologue::SplitAttrs attrs_;
};

// Registers every kernel above for `device_type` (see header comment).
template <typename Policy>
void RegisterLayoutKernels(const std::string& device_type) {
  RegisterByContract<ReshapeKernel, ReshapeGradKernel, TransposeKernel<Policy, false>,
                     TransposeKernel<Policy, true>, ConcatKernel<Policy>, ConcatGradKernel<Policy>,
                     SplitKernel<Policy>, SplitGradKernel<Policy>>(device_type);
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_LAYOUT_KERNELS_H_
