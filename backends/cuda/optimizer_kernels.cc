// gpu kernels of momentum and adam, dense and sparse (SelectedRows) Grad,
// updating Param and its state in place (every output is bound to its
// input's tensor).
//
// Registration lines are the host kernels'; validation and messages come
// from the shared prologues (ops/optimizer/prologues.h):
// LearningRate, and adam's Beta1Pow and Beta2Pow (and their outputs), are
// HostMemory arguments read and advanced on the host, never copied. A sparse
// Grad is lazy: its row indices (host data) are grouped by table row on the
// host (stable, so duplicates are summed in their order, as on the host) and
// reach the device in kernel arguments, kSgdEntriesPerLaunch value rows per
// launch (optimizer_launchers.h); a row with more value rows than one launch
// carries passes its partial sum on through a scratch row.
#include "backends/common/optimizer_kernels.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/common/rows.h"
#include "backends/common/serial_policy.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/elementwise_launchers.h"
#include "backends/cuda/grad_scale.h"
#include "backends/cuda/kernel_util.h"
#include "backends/cuda/math_launchers.h"
#include "backends/cuda/optimizer_launchers.h"
#include "backends/cuda/scratch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/tensor/selected_rows.h"
#include "ops/math/prologues.h"
#include "ops/optimizer/prologues.h"
#include "ops/optimizer/shape_fns.h"

namespace tandem {
namespace cuda {
namespace {

using prologue::UpdateArgs;

// Enqueues the lazy update of a sparse Grad (checked by CheckSparseGrad):
// launch(chunk, width, carry_in, carry_out, carry) for consecutive chunks of
// its row groups (see LaunchMomentumRows), in ascending row order, where
// width is the length of Param's rows.
template <typename T, typename Launch>
absl::Status UpdateRows(const KernelContext* ctx, const UpdateArgs& a, Launch&& launch) {
  const SelectedRows& grad = a.grad->selected_rows();
  const std::vector<int64_t>& rows = grad.rows();
  const int64_t n = static_cast<int64_t>(rows.size());
  const int64_t height = a.param->shape().dim(0);
  const int64_t width = height == 0 ? 0 : a.param->NumElements() / height;
  if (n == 0 || width == 0) return absl::OkStatus();
  Tensor carry;
  if (n > kSgdEntriesPerLaunch) {
    ASSIGN_OR_RETURN(carry, AllocateScratch(ctx, a.param->dtype(), Shape({width}),
                                            "a row's partial gradient sum"));
  }
  T* carry_data = carry.initialized() ? carry.data<T>() : nullptr;
  const RowGroups groups = GroupRows(rows.data(), n);
  SgdRowChunk chunk;
  chunk.begin[0] = 0;
  int entries = 0;
  bool carry_in = false;
  for (int64_t k = 0; k < groups.size(); ++k) {
    for (int64_t e = groups.starts[k]; e < groups.starts[k + 1]; ++e) {
      if (entries == kSgdEntriesPerLaunch) {
        const bool carry_out = e != groups.starts[k];  // group k goes on in the next chunk
        RETURN_IF_ERROR(launch(chunk, width, carry_in, carry_out, carry_data));
        carry_in = carry_out;
        chunk.groups = 0;
        entries = 0;
      }
      if (chunk.groups == 0 || e == groups.starts[k]) {
        chunk.rows[chunk.groups] = rows[groups.order[e]];
        chunk.begin[chunk.groups] = entries;
        ++chunk.groups;
      }
      chunk.positions[entries++] = groups.order[e];
      chunk.begin[chunk.groups] = entries;
    }
  }
  return launch(chunk, width, carry_in, /*carry_out=*/false, carry_data);
}

class MomentumKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    return prologue::Store(GetMomentumAttrs(op), &attrs_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::MomentumArgs m, prologue::GetMomentumArgs(*ctx));
    if (m.u.skip) return prologue::BindMomentumOutputs(ctx, m);
    const UpdateArgs& a = m.u;
    const Tensor* velocity = m.velocity;
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    RETURN_IF_ERROR(DispatchFloat(a.param->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const MomentumStep<T> step{static_cast<T>(a.lr()), static_cast<T>(attrs_.mu),
                                 attrs_.use_nesterov};
      T* param = a.param->data<T>();
      T* vel = velocity->data<T>();
      if (!a.sparse()) {
        return WithDenseGrad<T>(a.grad->tensor(), [&](const auto* grad) -> absl::Status {
          CUDA_RETURN_IF_ERROR(LaunchMomentumDense<T>(param, vel, grad, a.param->NumElements(),
                                                      GradScaleOf<T>(a), step, stream));
          return absl::OkStatus();
        });
      }
      const T* value = a.grad->selected_rows().value().data<T>();
      return UpdateRows<T>(ctx, a,
                           [&](const SgdRowChunk& chunk, int64_t width, bool in, bool out,
                               T* carry) -> absl::Status {
                             CUDA_RETURN_IF_ERROR(LaunchMomentumRows<T>(
                                 param, vel, value, width, step, chunk, in, out, carry, stream));
                             return absl::OkStatus();
                           });
    }));
    return prologue::BindMomentumOutputs(ctx, m);
  }

 private:
  MomentumAttrs attrs_;
};

// UpdateRows' carry: one of Param's rows, when a sparse Grad has more rows
// than one launch takes.
int64_t SparseUpdateScratch(const OpDesc&, const ArgMetas& in, const ArgMetas&) {
  const TensorMeta* param = FirstMeta(in, "Param");
  const TensorMeta* grad = FirstMeta(in, "Grad");
  if (param == nullptr || grad == nullptr || !grad->selected_rows || grad->shape.rank() == 0 ||
      grad->shape.dim(0) <= kSgdEntriesPerLaunch || param->shape.rank() == 0 ||
      param->shape.dim(0) == 0) {
    return 0;
  }
  return param->shape.num_elements() / param->shape.dim(0) *
         static_cast<int64_t>(SizeOf(param->dtype));
}

REGISTER_KERNEL(KernelDef("momentum", "gpu")
                    .TypeConstraint("Param", kFloatTypes)
                    .TypeConstraint("Grad", kFloatTypesWith16Bit)
                    .HostMemory("LearningRate")
                    .HostMemory("SkipUpdate")
                    .Scratch(SparseUpdateScratch),
                MomentumKernel);

class AdamKernel : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    return prologue::Store(GetAdamAttrs(op), &attrs_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::AdamArgs args, prologue::GetAdamArgs(*ctx));
    ASSIGN_OR_RETURN(Tensor * working_copy, prologue::AllocateParamCast(ctx, args));
    const UpdateArgs& a = args.u;
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    if (a.skip) {
      RETURN_IF_ERROR(NarrowParam(a, working_copy, stream));
      return prologue::BindAdamOutputs(ctx, args);
    }
    RETURN_IF_ERROR(DispatchFloat(a.param->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      T* beta1_pow = args.beta1_pow->data<T>();  // host memory
      T* beta2_pow = args.beta2_pow->data<T>();
      RETURN_IF_ERROR(prologue::CheckBetaPow(*ctx, "Beta1Pow", *beta1_pow));
      RETURN_IF_ERROR(prologue::CheckBetaPow(*ctx, "Beta2Pow", *beta2_pow));
      AdamStep<T> step;
      step.lr = static_cast<T>(a.lr());
      step.beta1 = static_cast<T>(attrs_.beta1);
      step.beta2 = static_cast<T>(attrs_.beta2);
      step.one_minus_beta1 = static_cast<T>(1 - attrs_.beta1);
      step.one_minus_beta2 = static_cast<T>(1 - attrs_.beta2);
      step.correction1 = static_cast<T>(1 - static_cast<double>(*beta1_pow));
      step.correction2 = static_cast<T>(1 - static_cast<double>(*beta2_pow));
      step.epsilon = static_cast<T>(attrs_.epsilon);
      const bool l2 = !attrs_.decoupled_weight_decay;
      step.l2_decay = static_cast<T>(l2 ? attrs_.weight_decay : 0);
      step.shrink = static_cast<T>(l2 ? 1 : 1 - static_cast<double>(step.lr) * attrs_.weight_decay);
      T* param = a.param->data<T>();
      T* mom1 = args.m1->data<T>();
      T* mom2 = args.m2->data<T>();
      if (!a.sparse()) {
        WorkingCopy copy;  // written in the update's pass
        if (working_copy != nullptr) {
          copy.data = working_copy->raw_data();
          copy.bfloat16 = working_copy->dtype() == DataType::kBFloat16;
          working_copy = nullptr;
        }
        RETURN_IF_ERROR(WithDenseGrad<T>(a.grad->tensor(), [&](const auto* grad) -> absl::Status {
          CUDA_RETURN_IF_ERROR(LaunchAdamDense<T>(param, mom1, mom2, grad, a.param->NumElements(),
                                                  GradScaleOf<T>(a), step, copy, stream));
          return absl::OkStatus();
        }));
      } else {
        const T* value = a.grad->selected_rows().value().data<T>();
        RETURN_IF_ERROR(UpdateRows<T>(ctx, a,
                                      [&](const SgdRowChunk& chunk, int64_t width, bool in,
                                          bool out, T* carry) -> absl::Status {
                                        CUDA_RETURN_IF_ERROR(
                                            LaunchAdamRows<T>(param, mom1, mom2, value, width, step,
                                                              chunk, in, out, carry, stream));
                                        return absl::OkStatus();
                                      }));
      }
      *beta1_pow *= step.beta1;
      *beta2_pow *= step.beta2;
      return absl::OkStatus();
    }));
    RETURN_IF_ERROR(NarrowParam(a, working_copy, stream));
    return prologue::BindAdamOutputs(ctx, args);
  }

 private:
  // The 16-bit working copy of the float32 Param, when bound and not yet
  // written (a skipped step, a sparse update): a second kernel, rounding as
  // cast does.
  static absl::Status NarrowParam(const UpdateArgs& a, Tensor* working_copy, cudaStream_t stream) {
    if (working_copy == nullptr) return absl::OkStatus();
    const float* param = a.param->data<float>();
    const int64_t n = a.param->NumElements();
    if (working_copy->dtype() == DataType::kBFloat16) {
      CUDA_RETURN_IF_ERROR(
          (LaunchCast<float, bfloat16>(param, working_copy->data<bfloat16>(), n, stream)));
    } else {
      CUDA_RETURN_IF_ERROR(
          (LaunchCast<float, float16>(param, working_copy->data<float16>(), n, stream)));
    }
    return absl::OkStatus();
  }

  AdamAttrs attrs_;
};

REGISTER_KERNEL(KernelDef("adam", "gpu")
                    .TypeConstraint("Param", kFloatTypes)
                    .TypeConstraint("Grad", kFloatTypesWith16Bit)
                    .HostMemory("LearningRate")
                    .HostMemory("SkipUpdate")
                    .HostMemory("Beta1Pow")
                    .HostMemory("Beta2Pow")
                    .HostMemory("Beta1PowOut")
                    .HostMemory("Beta2PowOut")
                    .Scratch(SparseUpdateScratch),
                AdamKernel);

// check_finite_and_unscale (the host kernel's contract, see its op doc):
// Out = X / Scale on the device, FoundInfinite a device flag; a SelectedRows
// X's values, Out keeping its rows.
class CheckFiniteAndUnscaleKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::UnscaleArgs a, prologue::GetUnscaleArgs(ctx));
    RETURN_IF_ERROR(DispatchFloat(a.values.dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchUnscaleAndCheck<T>(
          a.values.data<T>(), a.out->data<T>(), a.values.NumElements(), static_cast<T>(a.divisor),
          a.found_infinite->data<bool>(), CudaStreamOf(ctx->stream())));
      return absl::OkStatus();
    }));
    return prologue::FinishUnscale(ctx, a);
  }
};

REGISTER_KERNEL(KernelDef("check_finite_and_unscale", "gpu")
                    .TypeConstraint("X", kFloatTypes)
                    .HostMemory("Scale"),
                CheckFiniteAndUnscaleKernel);
// Host code on host memory: the host kernel itself.
REGISTER_KERNEL(UpdateLossScalingKernel<SerialPolicy>::Contract("gpu"),
                UpdateLossScalingKernel<SerialPolicy>);

// global_norm_clip (the host kernel's arithmetic, see its op doc) on the
// device: the squared norms read and the factor written in device memory,
// so the update kernels after it read the factor without the host waiting
// for the backward (GradScaleOf). One single-thread launch per
// kNormsPerLaunch norms, a double carried between launches in scratch.
class GlobalNormClipKernel : public GlobalNormClipKernelBase {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::GlobalNormClipArgs a, Args(ctx));
    const int n = static_cast<int>(a.squared_norms.size());
    Tensor carry;
    if (n > kNormsPerLaunch) {
      ASSIGN_OR_RETURN(carry, AllocateScratch(ctx, DataType::kFloat64, Shape({1}),
                                              "the running sum of squared norms"));
    }
    double* carry_data = carry.initialized() ? carry.data<double>() : nullptr;
    const cudaStream_t stream = CudaStreamOf(ctx->stream());
    return DispatchFloat(a.dtype, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      for (int begin = 0; begin < n; begin += kNormsPerLaunch) {
        SquaredNormChunk chunk;
        chunk.count = std::min(kNormsPerLaunch, n - begin);
        for (int i = 0; i < chunk.count; ++i) {
          chunk.norms[i] = a.squared_norms[begin + i]->raw_data();
        }
        CUDA_RETURN_IF_ERROR(LaunchGlobalNormClip<T>(chunk, begin > 0, begin + chunk.count == n,
                                                     carry_data, a.max_norm, a.scale->data<T>(),
                                                     a.global_norm->data<T>(), stream));
      }
      return absl::OkStatus();
    });
  }
};

int64_t GlobalNormClipScratch(const OpDesc&, const ArgMetas& in, const ArgMetas&) {
  auto it = in.find("SquaredNorms");
  const bool carries = it != in.end() && static_cast<int>(it->second.size()) > kNormsPerLaunch;
  return carries ? static_cast<int64_t>(sizeof(double)) : 0;
}

REGISTER_KERNEL(KernelDef("global_norm_clip", "gpu").Scratch(GlobalNormClipScratch),
                GlobalNormClipKernel);

// squared_l2_norm: block partial sums of squares in double, then one block
// adds them in order.
class SquaredL2NormKernel : public OpKernel {
 public:
  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::SquaredNormArgs a, prologue::GetSquaredNormArgs(ctx));
    const int64_t n = a.x->NumElements();
    const int blocks = SquaredSumBlocks(n);
    ASSIGN_OR_RETURN(Tensor partials, AllocateScratch(ctx, DataType::kFloat64, Shape({blocks}),
                                                      "partial sums of squares"));
    return DispatchFloatWith16Bit(a.x->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      CUDA_RETURN_IF_ERROR(LaunchSquaredSum<T>(a.x->data<T>(), n, partials.data<double>(), blocks,
                                               a.out->data<ComputeTypeOf<T>>(),
                                               CudaStreamOf(ctx->stream())));
      return absl::OkStatus();
    });
  }
};

int64_t SquaredL2NormScratch(const OpDesc&, const ArgMetas& in, const ArgMetas&) {
  const TensorMeta* x = FirstMeta(in, "X");
  absl::StatusOr<int64_t> n = x == nullptr ? absl::StatusOr<int64_t>(0) : x->shape.NumElements();
  return SquaredSumBlocks(n.ok() ? *n : 0) * static_cast<int64_t>(sizeof(double));
}

REGISTER_KERNEL(KernelDef("squared_l2_norm", "gpu")
                    .TypeConstraint("X", kFloatTypesWith16Bit)
                    .Scratch(SquaredL2NormScratch),
                SquaredL2NormKernel);

}  // namespace
}  // namespace cuda
}  // namespace tandem
