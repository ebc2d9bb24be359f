// The kernels of the optimizer ops (ops/optimizer) for every backend whose
// memory the host can address: sgd, momentum, adam. Written once, templated
// on an execution policy (serial_policy.h). A backend registers them under
// its device type with one line:
//
//   const HostKernelsRegistrar<SerialPolicy> host_kernels("sim");  // host_kernels.h  //
//   host_kernels.h
//
// Each kernel class's static Contract is its registration line and RegisterOptimizerKernels lists
// them:
//   sgd       Param: float32, float64; Grad also bfloat16, float16 (dense, of a
//             float32 Param: widened in the kernel); HostMemory(LearningRate)
//   momentum  the same
//   adam      the same; HostMemory(LearningRate, Beta1Pow,
//             Beta2Pow, Beta1PowOut, Beta2PowOut)
//   (each update op also HostMemory(SkipUpdate), its optional skip flag;
//   its optional gradient factor GradScale is on its place)
//   check_finite_and_unscale  X: float32, float64; HostMemory(Scale)
//   update_loss_scaling       every argument in host memory
//   squared_l2_norm           X: float32, float64, bfloat16, float16
//   global_norm_clip          on its place (the CUDA backend has its own)
// so the learning rate and the beta powers are read (and the powers
// advanced) on the host and never copied. Kernels validate their inputs
// with ops/optimizer/prologues.h, as the gpu kernels do, update Param and its state in place
// synchronously through the policy and never copy between places. Dense
// updates split elements across threads; sparse (SelectedRows) updates
// split ranges of table rows, so every row is written by one thread
// (race-free, and results do not depend on the thread count). Compute is thread-safe
// across kernel instances (not for one Param).
#ifndef TANDEM_BACKENDS_COMMON_OPTIMIZER_KERNELS_H_
#define TANDEM_BACKENDS_COMMON_OPTIMIZER_KERNELS_H_

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "backends/common/elementwise.h"
#include "backends/common/rows.h"
#include "backends/common/type_dispatch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/kernel/op_kernel.h"
#include "framework/op/op_schema.h"
#include "framework/tensor/selected_rows.h"
#include "framework/tensor/tensor.h"
#include "framework/tensor/variable.h"
#include "framework/types/float16.h"
#include "ops/math/prologues.h"
#include "ops/optimizer/prologues.h"
#include "ops/optimizer/shape_fns.h"

namespace tandem {
// Calls fn with Grad's dense values as T (Param's dtype), or as bfloat16
// or float16 (a mixed-precision gradient of a float32 Param), and returns
// what fn returns. The host kernels and the CUDA ones (grad_scale.h) read
// their dense gradient through it.
template <typename T, typename Fn>
auto WithDenseGrad(const Tensor& grad, Fn&& fn) {
  if constexpr (std::is_same_v<T, float>) {
    if (grad.dtype() == DataType::kBFloat16) return fn(grad.data<bfloat16>());
    if (grad.dtype() == DataType::kFloat16) return fn(grad.data<float16>());
  }
  return fn(grad.data<T>());
}

namespace optimizer_kernels_internal {

using prologue::UpdateArgs;

// Calls update(row, merged) once per distinct row of `g` (a SelectedRows of
// T with rows `width` wide): `merged` points at the row's gradient, the sum
// of its value rows in order of position. Parallel over equal shares of
// the updates, each a run of whole row buckets (rows_internal::RowBuckets:
// exact counts, no global sort): each task lists the positions of its rows
// in order, groups them by row and merges each group, so every row is
// visited by one task. The rows of `tables` (each [height, width]: the
// parameter and its state) and of the values are prefetched
// kPrefetchRowsAhead groups ahead (the rows are random, so each update is
// otherwise a chain of cache misses).
template <typename T, typename Policy, typename Update>
void ForEachMergedRow(const SelectedRows& g, int64_t width, const std::vector<T*>& tables,
                      Update&& update) {
  const int64_t n = static_cast<int64_t>(g.rows().size());
  if (n == 0 || width == 0) return;
  const int64_t* rows = g.rows().data();
  const T* values = g.value().data<T>();
  const auto buckets = rows_internal::RowBuckets::Build<Policy>(rows, n, g.height());
  const int64_t row_bytes = width * static_cast<int64_t>(sizeof(T));
  Policy::ParallelFor(
      n, std::max<int64_t>(1, kMinElementsPerTask / width), [&](int64_t begin, int64_t end) {
        std::vector<int64_t> mine;
        std::vector<T> sum;
        auto whole = [&](int64_t b0, int64_t b1) {
          buckets.Positions(b0, b1, &mine);
          const RowGroups groups = GroupPositions(rows, std::move(mine));
          for (int64_t k = 0; k < groups.size(); ++k) {
            if (k + rows_internal::kPrefetchRowsAhead < groups.size()) {
              const int64_t ahead =
                  groups.order[groups.starts[k + rows_internal::kPrefetchRowsAhead]];
              for (T* table : tables) {
                rows_internal::PrefetchRow</*kWrite=*/true>(table + rows[ahead] * width, row_bytes);
              }
              rows_internal::PrefetchRow(values + ahead * width, row_bytes);
            }
            const int64_t* pos = groups.order.data() + groups.starts[k];
            const int64_t count = groups.starts[k + 1] - groups.starts[k];
            const T* merged = values + pos[0] * width;
            if (count > 1) {
              sum.assign(merged, merged + width);
              for (int64_t c = 1; c < count; ++c) {
                const T* v = values + pos[c] * width;
                for (int64_t j = 0; j < width; ++j) sum[j] += v[j];
              }
              merged = sum.data();
            }
            update(rows[pos[0]], merged);
          }
        };
        // Rows are never split (a merged row is updated whole): no bucket
        // reaches a split load of n + 1.
        buckets.ForEachShare(begin, end, n + 1, whole, [](int64_t, int64_t, int64_t, int64_t) {});
      });
}

// Runs step(offset, g, len) over Param's elements: for a dense Grad on
// element ranges in parallel (g = Grad + offset; a 16-bit Grad widened to
// T, exactly, and with GradScale bound the values times GradScale, rounded
// to T as elementwise_mul would, a block at a time in a local buffer); for
// a sparse one once per distinct row (offset = row * width, g = the merged
// row, len = width), prefetching the rows of Param and of `state`
// (Param-shaped tensors the step updates too).
template <typename T, typename Policy, typename Step>
void ForEachUpdate(const UpdateArgs& a, std::vector<T*> state, Step&& step) {
  const Tensor& param = *a.param;
  const Tensor* grad = a.sparse() ? nullptr : &a.grad->tensor();
  if (a.sparse()) {
    const int64_t height = param.shape().dim(0);
    const int64_t width = height == 0 ? 0 : param.NumElements() / height;
    state.push_back(param.data<T>());
    ForEachMergedRow<T, Policy>(a.grad->selected_rows(), width, state,
                                [&](int64_t row, const T* g) { step(row * width, g, width); });
  } else if (a.GradScaleOnHost() == 1 && grad->dtype() == param.dtype()) {
    const T* g = grad->data<T>();
    Policy::ParallelFor(param.NumElements(), kMinElementsPerTask,
                        [&](int64_t begin, int64_t end) { step(begin, g + begin, end - begin); });
  } else {
    const bool scaled = a.GradScaleOnHost() != 1;
    const T scale = static_cast<T>(a.GradScaleOnHost());
    WithDenseGrad<T>(*grad, [&](const auto* g) {
      Policy::ParallelFor(param.NumElements(), kMinElementsPerTask,
                          [&](int64_t begin, int64_t end) {
                            constexpr int64_t kBlock = 1024;
                            T block[kBlock];
                            for (int64_t lo = begin; lo < end; lo += kBlock) {
                              const int64_t len = std::min(kBlock, end - lo);
                              for (int64_t i = 0; i < len; ++i) {
                                block[i] = static_cast<T>(static_cast<ComputeTypeOf<T>>(g[lo + i]));
                              }
                              if (scaled) {
                                for (int64_t i = 0; i < len; ++i) block[i] *= scale;
                              }
                              step(lo, block, len);
                            }
                          });
    });
  }
}

// out[offset + i] = p[i] rounded to `out`'s 16-bit dtype (to nearest even,
// as cast does), for i < len; `out` is bfloat16 or float16.
inline void NarrowBlock(const float* p, Tensor* out, int64_t offset, int64_t len) {
  if (out->dtype() == DataType::kBFloat16) {
    bfloat16* o = out->data<bfloat16>() + offset;
    for (int64_t i = 0; i < len; ++i) o[i] = ConvertValue<bfloat16>(p[i]);
  } else {
    float16* o = out->data<float16>() + offset;
    for (int64_t i = 0; i < len; ++i) o[i] = ConvertValue<float16>(p[i]);
  }
}

}  // namespace optimizer_kernels_internal

// The registration line sgd, momentum and adam share: a float32/float64
// Param (`param_types`) updated in place from a dense (16-bit too) or
// sparse Grad; the learning rate and the skip flag read on the host, the clip
// factor on the op's place (a device kernel reads it there: no host sync).
inline KernelDef UpdateContract(const std::string& op, const std::string& device_type,
                                std::vector<DataType> param_types) {
  return KernelDef(op, device_type)
      .TypeConstraint("Param", std::move(param_types))
      .TypeConstraint("Grad", kFloatTypesWith16Bit)
      .HostMemory("LearningRate")
      .HostMemory("SkipUpdate")
      .UpdatesRowsOf("Param", "Grad");
}

// ParamOut = Param - LearningRate * Grad, updating Param's buffer in place
// (ParamOut is bound to Param's tensor). Dense Grad: Param's shape. Sparse
// Grad (SelectedRows of height Param.dim(0)): Param[rows[i]] -= lr *
// value[i] for each i, duplicate rows accumulating in order; threads own
// disjoint row ranges of Param, so the update is race-free. LearningRate is
// float32 with one element, in host memory.
template <typename Policy>
class SgdKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return UpdateContract("sgd", device_type, Types::DataTypes());
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::UpdateArgs a, prologue::GetSgdArgs(*ctx));
    if (a.skip) return ctx->SetOutput("ParamOut", *a.param);
    const Tensor& param = *a.param;
    RETURN_IF_ERROR(DispatchType(Types(), param.dtype(), *ctx, "Param", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* p = param.data<T>();
      const T lr = static_cast<T>(a.lr());
      if (a.sparse()) {
        const SelectedRows& g = a.grad->selected_rows();
        const int64_t height = param.shape().dim(0);
        ScatterAddRows<T, Policy>(g.rows().data(), static_cast<int64_t>(g.rows().size()),
                                  g.value().data<T>(),
                                  height == 0 ? 0 : param.NumElements() / height, -lr, p, height);
      } else {
        optimizer_kernels_internal::ForEachUpdate<T, Policy>(
            a, {}, [&](int64_t offset, const T* g, int64_t len) {
              const T rate = lr;
              T* q = p + offset;
              for (int64_t i = 0; i < len; ++i) q[i] -= rate * g[i];
            });
      }
      return absl::OkStatus();
    }));
    return ctx->SetOutput("ParamOut", param);
  }
};

// momentum (see its op doc), in T: v = mu * v + g; p -= lr * v, or with
// Nesterov p -= lr * (g + mu * v). Param and Velocity are updated in place
// and bound to ParamOut and VelocityOut. A sparse Grad is lazy: duplicate
// rows are merged, then only the rows present are updated.
template <typename Policy>
class MomentumKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return UpdateContract("momentum", device_type, Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override {
    return prologue::Store(GetMomentumAttrs(op), &attrs_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::MomentumArgs m, prologue::GetMomentumArgs(*ctx));
    if (m.u.skip) return prologue::BindMomentumOutputs(ctx, m);
    const prologue::UpdateArgs& a = m.u;
    const Tensor* velocity = m.velocity;
    RETURN_IF_ERROR(DispatchType(Types(), a.param->dtype(), *ctx, "Param", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* param = a.param->data<T>();
      T* vel = velocity->data<T>();
      const T lr = static_cast<T>(a.lr());
      const T mu = static_cast<T>(attrs_.mu);
      const bool nesterov = attrs_.use_nesterov;
      optimizer_kernels_internal::ForEachUpdate<T, Policy>(
          a, {vel}, [&](int64_t offset, const T* g, int64_t len) {
            const T m = mu, rate = lr;  // locals, so the loops vectorize (see adam)
            T* p = param + offset;
            T* v = vel + offset;
            if (nesterov) {
              for (int64_t i = 0; i < len; ++i) {
                v[i] = m * v[i] + g[i];
                p[i] -= rate * (g[i] + m * v[i]);
              }
            } else {
              for (int64_t i = 0; i < len; ++i) {
                v[i] = m * v[i] + g[i];
                p[i] -= rate * v[i];
              }
            }
          });
      return absl::OkStatus();
    }));
    return prologue::BindMomentumOutputs(ctx, m);
  }

 private:
  MomentumAttrs attrs_;
};

// adam (see its op doc), in T, with bias corrections 1 - Beta1Pow and
// 1 - Beta2Pow computed in double. Param, Moment1 and Moment2 are updated
// in place on the op's place; Beta1Pow and Beta2Pow in host memory, after
// the step. Every output is bound to its input's tensor. A sparse Grad is
// lazy (merged duplicates, only the rows present updated).
template <typename Policy>
class AdamKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return UpdateContract("adam", device_type, Types::DataTypes())
        .HostMemory("Beta1Pow")
        .HostMemory("Beta2Pow")
        .HostMemory("Beta1PowOut")
        .HostMemory("Beta2PowOut");
  }

  absl::Status Init(const OpDesc& op) override {
    return prologue::Store(GetAdamAttrs(op), &attrs_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::AdamArgs args, prologue::GetAdamArgs(*ctx));
    ASSIGN_OR_RETURN(Tensor * working_copy, prologue::AllocateParamCast(ctx, args));
    if (args.u.skip) {
      if (working_copy != nullptr) {  // a float32 Param (AllocateParamCast checked)
        const float* p = args.u.param->data<float>();
        const int64_t n = args.u.param->NumElements();
        if (working_copy->dtype() == DataType::kBFloat16) {
          Cast<bfloat16, float, Policy>(p, working_copy->data<bfloat16>(), n);
        } else {
          Cast<float16, float, Policy>(p, working_copy->data<float16>(), n);
        }
      }
      return prologue::BindAdamOutputs(ctx, args);
    }
    const prologue::UpdateArgs& a = args.u;
    RETURN_IF_ERROR(DispatchType(Types(), a.param->dtype(), *ctx, "Param", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* beta1_pow = args.beta1_pow->data<T>();
      T* beta2_pow = args.beta2_pow->data<T>();
      RETURN_IF_ERROR(prologue::CheckBetaPow(*ctx, "Beta1Pow", *beta1_pow));
      RETURN_IF_ERROR(prologue::CheckBetaPow(*ctx, "Beta2Pow", *beta2_pow));
      T* param = a.param->data<T>();
      T* mom1 = args.m1->data<T>();
      T* mom2 = args.m2->data<T>();
      const T lr = static_cast<T>(a.lr());
      const T beta1 = static_cast<T>(attrs_.beta1), beta2 = static_cast<T>(attrs_.beta2);
      const T one_minus_beta1 = static_cast<T>(1 - attrs_.beta1);
      const T one_minus_beta2 = static_cast<T>(1 - attrs_.beta2);
      const T correction1 = static_cast<T>(1 - static_cast<double>(*beta1_pow));
      const T correction2 = static_cast<T>(1 - static_cast<double>(*beta2_pow));
      const T epsilon = static_cast<T>(attrs_.epsilon);
      const bool l2 = !attrs_.decoupled_weight_decay;
      const T l2_decay = static_cast<T>(l2 ? attrs_.weight_decay : 0);
      const T shrink = static_cast<T>(l2 ? 1 : 1 - static_cast<double>(lr) * attrs_.weight_decay);
      optimizer_kernels_internal::ForEachUpdate<T, Policy>(
          a, {mom1, mom2}, [&](int64_t offset, const T* g, int64_t len) {
            // Locals: read through the references captured, the constants
            // could alias the arrays for all GCC knows, and the loop stayed
            // scalar (0.6 ms on one thread for a 784 x 256 layer, 84 us so).
            const T rate = lr, b1 = beta1, b2 = beta2, omb1 = one_minus_beta1;
            const T omb2 = one_minus_beta2, c1 = correction1, c2 = correction2;
            const T eps = epsilon, decay = l2_decay, keep = shrink;
            T* p = param + offset;
            T* u = mom1 + offset;
            T* v = mom2 + offset;
            for (int64_t i = 0; i < len; ++i) {
              const T grad = g[i] + decay * p[i];
              u[i] = b1 * u[i] + omb1 * grad;
              v[i] = b2 * v[i] + omb2 * grad * grad;
              p[i] = p[i] * keep - rate * (u[i] / c1) / (std::sqrt(v[i] / c2) + eps);
            }
            // The working copy of the block just written, while it is in cache.
            if constexpr (std::is_same_v<T, float>) {
              if (working_copy != nullptr) {
                optimizer_kernels_internal::NarrowBlock(p, working_copy, offset, len);
              }
            }
          });
      *beta1_pow *= beta1;
      *beta2_pow *= beta2;
      return absl::OkStatus();
    }));
    return prologue::BindAdamOutputs(ctx, args);
  }

 private:
  AdamAttrs attrs_;
};

// check_finite_and_unscale (see its op doc), in T: Out = X / Scale over a
// dense X or a SelectedRows X's values (Out keeps its rows and height);
// FoundInfinite = whether a value of X is inf or NaN. Out may be X's
// variable: X is read through its own handle.
template <typename Policy>
class CheckFiniteAndUnscaleKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("check_finite_and_unscale", device_type)
        .TypeConstraint("X", Types::DataTypes())
        .HostMemory("Scale");
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::UnscaleArgs a, prologue::GetUnscaleArgs(ctx));
    RETURN_IF_ERROR(DispatchType(Types(), a.values.dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = a.values.data<T>();
      T* o = a.out->data<T>();
      const T d = static_cast<T>(a.divisor);
      std::atomic<bool> infinite{false};  // every writer writes true
      Policy::ParallelFor(a.values.NumElements(), kMinElementsPerTask,
                          [&](int64_t begin, int64_t end) {
                            bool found = false;
                            for (int64_t i = begin; i < end; ++i) {
                              found |= !std::isfinite(in[i]);
                              o[i] = in[i] / d;
                            }
                            if (found) infinite.store(true, std::memory_order_relaxed);
                          });
      a.found_infinite->data<bool>()[0] = infinite.load();
      return absl::OkStatus();
    }));
    return prologue::FinishUnscale(ctx, a);
  }
};

// update_loss_scaling (see its op doc), on host memory.
template <typename Policy>
class UpdateLossScalingKernel final : public OpKernel {
 public:
  // Everything in host memory, so a device registers it too (backends/cuda
  // does) and runs it on the host.
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("update_loss_scaling", device_type)
        .HostMemory("FoundInfinite")
        .HostMemory("PrevLossScaling")
        .HostMemory("InGoodSteps")
        .HostMemory("LossScaling")
        .HostMemory("OutGoodSteps")
        .HostMemory("StepSkipped");
  }
  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(attrs_, GetLossScalingAttrs(op));
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext* ctx) override {
    bool found = false;
    for (int i = 0; i < ctx->InputCount("FoundInfinite"); ++i) {
      ASSIGN_OR_RETURN(const Tensor* f, ctx->InputTensor("FoundInfinite", i));
      found |= f->data<bool>()[0];
    }
    ASSIGN_OR_RETURN(const Tensor* scale, ctx->InputTensor("PrevLossScaling"));
    ASSIGN_OR_RETURN(const Tensor* good, ctx->InputTensor("InGoodSteps"));
    float& s = scale->data<float>()[0];
    int32_t& g = good->data<int32_t>()[0];
    if (found) {
      s = static_cast<float>(s * attrs_.backoff_factor);
      g = 0;
    } else if (++g >= attrs_.growth_interval) {
      const float grown = static_cast<float>(s * attrs_.growth_factor);
      if (std::isfinite(grown)) s = grown;
      g = 0;
    }
    ASSIGN_OR_RETURN(Tensor * skipped,
                     ctx->AllocateOutput("StepSkipped", DataType::kBool, Shape({1})));
    skipped->data<bool>()[0] = found;
    ctx->Report("loss_scaling", s);
    ctx->Report("step_skipped", found ? 1 : 0);
    RETURN_IF_ERROR(ctx->SetOutput("LossScaling", *scale));
    return ctx->SetOutput("OutGoodSteps", *good);
  }

 private:
  LossScalingAttrs attrs_;
};

// squared_l2_norm (see its op doc): the sum of X's squares in double, in a
// fixed order (SumOfSquares).
template <typename Policy>
class SquaredL2NormKernel final : public OpKernel {
 public:
  using Types = FloatTypesWith16Bit;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("squared_l2_norm", device_type).TypeConstraint("X", Types::DataTypes());
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::SquaredNormArgs a, prologue::GetSquaredNormArgs(ctx));
    return DispatchType(Types(), a.x->dtype(), *ctx, "X", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const double sum = SumOfSquares<T, Policy>(a.x->data<T>(), a.x->NumElements());
      if (a.out->dtype() == DataType::kFloat64) {
        a.out->data<double>()[0] = sum;
      } else {
        a.out->data<float>()[0] = static_cast<float>(sum);
      }
      return absl::OkStatus();
    });
  }
};

// What every backend's global_norm_clip kernel shares: its max_norm
// attribute and its checked arguments (the outputs allocated).
class GlobalNormClipKernelBase : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    ASSIGN_OR_RETURN(max_norm_, GetAttr<double>(op.attrs, "max_norm", op.type));
    return absl::OkStatus();
  }

 protected:
  absl::StatusOr<prologue::GlobalNormClipArgs> Args(KernelContext* ctx) const {
    return prologue::GetGlobalNormClipArgs(ctx, max_norm_);
  }

 private:
  double max_norm_ = 1;
};

// global_norm_clip (see its op doc) on its place's memory, which the host
// addresses; a device whose memory it does not (CUDA) has its own kernel.
class GlobalNormClipKernel final : public GlobalNormClipKernelBase {
 public:
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("global_norm_clip", device_type);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::GlobalNormClipArgs a, Args(ctx));
    prologue::ComputeGlobalNormClip(a);
    return absl::OkStatus();
  }
};

// Registers every kernel above for `device_type` (see header comment).
template <typename Policy>
void RegisterOptimizerKernels(const std::string& device_type) {
  RegisterByContract<SgdKernel<Policy>, MomentumKernel<Policy>, AdamKernel<Policy>,
                     CheckFiniteAndUnscaleKernel<Policy>, UpdateLossScalingKernel<Policy>,
                     SquaredL2NormKernel<Policy>, GlobalNormClipKernel>(device_type);
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_OPTIMIZER_KERNELS_H_
