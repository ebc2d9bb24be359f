// OpKernel: the implementation of one op on one device type.
//
//   class ScaleKernel : public OpKernel {
//    public:
//     absl::Status Init(const OpDesc& op) override {   // once per op instance
//       ASSIGN_OR_RETURN(scale_, GetAttr<double>(op.attrs, "scale", op.type));
//       return absl::OkStatus();
//     }
//     absl::Status Compute(KernelContext* ctx) override;  // every run
//    private:
//     double scale_ = 1;
//   };
//   REGISTER_KERNEL(KernelDef("scale", "cpu").TypeConstraint("X", kFloatTypes),
//                   ScaleKernel);
//
// Compute may be called from several threads for different op instances,
// never concurrently for one instance. It enqueues device work on
// ctx->stream() and may return before that work finishes (async); it never
// blocks on other kernels and never copies data between places. It runs
// with ctx->place() the calling thread's current device (the executor and
// RunOpEager switch it with DeviceGuard), so kernels never switch devices.
#ifndef TANDEM_FRAMEWORK_KERNEL_OP_KERNEL_H_
#define TANDEM_FRAMEWORK_KERNEL_OP_KERNEL_H_

#include "absl/status/status.h"
#include "framework/op/op_desc.h"

namespace tandem {

class KernelContext;

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  // Reads attributes; InvalidArgument for values the kernel cannot handle.
  virtual absl::Status Init(const OpDesc& op) { return absl::OkStatus(); }
  virtual absl::Status Compute(KernelContext* ctx) = 0;
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_KERNEL_OP_KERNEL_H_
