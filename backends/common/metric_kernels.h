// The kernel of the metric op (ops/metric) for every backend whose memory
// the host can address: accuracy. Written once, templated on an execution
// policy (serial_policy.h). A backend registers it under its device type
// with one line:
//
//   const HostKernelsRegistrar<SerialPolicy> host_kernels("sim");  // host_kernels.h  //
//   host_kernels.h
//
// Each kernel class's static Contract is its registration line and RegisterMetricKernels lists them
// (all arguments in device memory):
//   accuracy    Out: float32, float64 (Label: int64)
// The kernel validates its inputs with ops/loss/shape_fns.h
// (InvalidArgument naming the op, the arguments or the bad label),
// computes synchronously through the policy and never copies between
// places. Compute is thread-safe across kernel instances.
#ifndef TANDEM_BACKENDS_COMMON_METRIC_KERNELS_H_
#define TANDEM_BACKENDS_COMMON_METRIC_KERNELS_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "backends/common/elementwise.h"
#include "backends/common/softmax.h"
#include "backends/common/type_dispatch.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/kernel/op_kernel.h"
#include "framework/tensor/tensor.h"
#include "ops/loss/prologues.h"
#include "ops/loss/shape_fns.h"

namespace tandem {

// Of the rows of scores Out [..., C] with int64 Label [..., 1] or [...], a
// row is correct when fewer than attr k classes rank above its label
// (higher score, or an equal score at a lower class index). Correct and
// Total (int64 [1]) count the correct and all rows; Accuracy (float32 [1])
// is Correct / Total, or 0 without rows. Labels must be in [0, C): else
// InvalidArgument "op 'accuracy': label 7 at position 2 is out of range
// [0, 5)". attr k < 1 is InvalidArgument at Init.
template <typename Policy>
class AccuracyKernel final : public OpKernel {
 public:
  using Types = FloatTypes;
  static KernelDef Contract(const std::string& device_type) {
    return KernelDef("accuracy", device_type).TypeConstraint("Out", Types::DataTypes());
  }

  absl::Status Init(const OpDesc& op) override { return attrs_.Read(op); }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::ClassBatch b, prologue::GetClassBatch(*ctx, "Out"));
    const Tensor* scores = b.scores;
    const ClassRows& r = b.rows;
    const int64_t* labels = b.label->data<int64_t>();
    const int64_t bad = FirstBadLabel(labels, r.rows, r.classes, std::nullopt);
    if (bad >= 0) return prologue::BadLabelError(*ctx, labels[bad], bad, r.classes, std::nullopt);
    ASSIGN_OR_RETURN(const prologue::AccuracyOutputs o, prologue::AllocateAccuracyOutputs(ctx));
    Tensor* accuracy = o.accuracy;
    Tensor* correct = o.correct;
    Tensor* total = o.total;
    return DispatchType(Types(), scores->dtype(), *ctx, "Out", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* s = scores->data<T>();
      const int64_t classes = r.classes;
      std::vector<char> hit(r.rows);
      Policy::ParallelFor(r.rows,
                          std::max<int64_t>(1, kMinElementsPerTask / std::max<int64_t>(1, classes)),
                          [&](int64_t begin, int64_t end) {
                            for (int64_t i = begin; i < end; ++i) {
                              const T* row = s + i * classes;
                              const int64_t l = labels[i];
                              int64_t above = 0;
                              for (int64_t j = 0; j < classes; ++j) {
                                above += row[j] > row[l] || (row[j] == row[l] && j < l);
                              }
                              hit[i] = above < attrs_.k;
                            }
                          });
      int64_t n = 0;
      for (char h : hit) n += h;
      correct->data<int64_t>()[0] = n;
      total->data<int64_t>()[0] = r.rows;
      accuracy->data<float>()[0] =
          r.rows == 0 ? 0.0f : static_cast<float>(static_cast<double>(n) / r.rows);
      return absl::OkStatus();
    });
  }

 private:
  prologue::AccuracyAttrs attrs_;
};

// Registers the kernel above for `device_type` (see header comment).
template <typename Policy>
void RegisterMetricKernels(const std::string& device_type) {
  RegisterByContract<AccuracyKernel<Policy>>(device_type);
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_METRIC_KERNELS_H_
