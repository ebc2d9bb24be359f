// KernelContext: what a kernel sees during one Compute call.
//
//   absl::Status Compute(KernelContext* ctx) override {
//     ASSIGN_OR_RETURN(const Tensor* x, ctx->InputTensor("X"));
//     ASSIGN_OR_RETURN(Tensor* out, ctx->AllocateOutput("Out", x->dtype(), x->shape()));
//     Launch(x->data<float>(), out->data<float>(), ctx->stream());
//     return absl::OkStatus();
//   }
//
// Or let the op's shape inference size every output:
//     RETURN_IF_ERROR(ctx->AllocateInferredOutputs());
//
// The context does not own the variables nor the argument lists it is
// given; the runner (executor or eager runner) keeps both alive while the
// context lives. Outputs are allocated where the kernel's
// registration says: host memory for HostMemory arguments, the device's
// memory otherwise. Not thread-safe; one context per Compute call.
#ifndef TANDEM_FRAMEWORK_KERNEL_KERNEL_CONTEXT_H_
#define TANDEM_FRAMEWORK_KERNEL_KERNEL_CONTEXT_H_

#include <cstdint>
#include <forward_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "framework/device/device.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/op/op_desc.h"
#include "framework/tensor/variable.h"

namespace tandem {

// Variables bound to each argument name, in the op's order.
using ArgVars = std::vector<std::pair<std::string, std::vector<Variable*>>>;

class KernelContext {
 public:
  // `inputs` and `outputs` are referenced, not copied (no allocation per
  // kernel call): they must outlive the context.
  KernelContext(const OpDesc& op, const KernelDef& def, Device* device, Stream* stream,
                const ArgVars& inputs, const ArgVars& outputs)
      : op_(op), def_(def), device_(device), stream_(stream), inputs_(inputs), outputs_(outputs) {}

  const OpDesc& op() const { return op_; }
  const KernelDef& def() const { return def_; }
  Device* device() const { return device_; }
  Place place() const { return device_->place(); }
  Stream* stream() const { return stream_; }

  int InputCount(absl::string_view arg) const;
  bool HasInput(absl::string_view arg) const { return InputCount(arg) > 0; }
  // nullptr when absent.
  const Variable* InputVar(absl::string_view arg, int index = 0) const;
  // InvalidArgument naming op, argument and variable when the input is
  // missing, not initialised or not a dense tensor. The tensor is held by
  // the context: it stays valid and unchanged while the context lives, even
  // when an output bound to the same variable is replaced (the backward
  // pass accumulates gradients in place: g = elementwise_add(g, partial)).
  absl::StatusOr<const Tensor*> InputTensor(absl::string_view arg, int index = 0) const;
  // Values of an attribute (validated by the op's schema).
  template <typename T>
  absl::StatusOr<T> Attr(absl::string_view name) const {
    return GetAttr<T>(op_.attrs, name, op_.type);
  }

  int OutputCount(absl::string_view arg) const;
  // nullptr when the op does not bind the output.
  Variable* OutputVar(absl::string_view arg, int index = 0) const;
  // Allocates the output tensor (see header comment for where). On
  // ResourceExhausted the message names op, variable, dtype, shape and
  // suggests device_guard("cpu").
  absl::StatusOr<Tensor*> AllocateOutput(absl::string_view arg, DataType dtype, const Shape& shape,
                                         int index = 0);
  // Binds an existing tensor (e.g. an input updated in place) to an output.
  absl::Status SetOutput(absl::string_view arg, Tensor tensor, int index = 0);
  // Runs the op's shape inference on the actual inputs and allocates every
  // bound output accordingly.
  absl::Status AllocateInferredOutputs();

  // Host memory for this kernel's host-resident outputs (HostMemory
  // outputs, and every output of a host kernel). The executor passes a
  // device's pinned allocator when the output is copied to that device
  // next, so the copy can be asynchronous. Default: CpuAllocator::Default().
  void set_host_output_allocator(Allocator* allocator) { host_output_allocator_ = allocator; }

  // The executor run this call belongs to (unique per run; 0 outside the
  // executor). A backend that reports errors after Compute returns (at a
  // later synchronisation) tags them with it: Device::TakeRunErrors.
  void set_run_id(uint64_t id) { run_id_ = id; }
  uint64_t run_id() const { return run_id_; }

  // Whether a kernel registered ForwardsInput may bind its outputs to that
  // input's tensor in this call (the executor's plan decides,
  // Step::forwards_inputs; false by default and while a CUDA graph is
  // captured).
  void set_may_forward_inputs(bool allowed) { may_forward_inputs_ = allowed; }
  bool may_forward_inputs() const { return may_forward_inputs_; }

  // Named values the kernel reports for the run (RunStats::reports), e.g.
  // update_loss_scaling's scale after the step. The sink is the runner's,
  // written only by this call; without one (outside an executor run) the
  // values are dropped.
  void set_report_sink(std::vector<std::pair<std::string, double>>* sink) { reports_ = sink; }
  void Report(std::string name, double value) {
    if (reports_ != nullptr) reports_->emplace_back(std::move(name), value);
  }

  // Internal error if an input is not where the kernel's registration
  // expects it (host for HostMemory arguments, the device otherwise):
  // a copy the placer should have inserted is missing.
  absl::Status CheckInputPlaces() const;

  // InvalidArgument prefixed with "op '<type>': ".
  absl::Status InvalidArgument(absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat("op '", op_.type, "': ", message));
  }
  // The name of the variable bound to an input / output, for messages.
  std::string InputName(absl::string_view arg, int index = 0) const;
  std::string OutputName(absl::string_view arg, int index = 0) const;

 private:
  const OpDesc& op_;
  const KernelDef& def_;
  Device* device_;
  Stream* stream_;
  const ArgVars& inputs_;
  const ArgVars& outputs_;
  Allocator* host_output_allocator_ = nullptr;
  uint64_t run_id_ = 0;
  bool may_forward_inputs_ = false;
  std::vector<std::pair<std::string, double>>* reports_ = nullptr;
  // The tensors InputTensor returned (list nodes never move).
  mutable std::forward_list<Tensor> held_inputs_;
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_KERNEL_KERNEL_CONTEXT_H_
