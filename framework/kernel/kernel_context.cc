#include "framework/kernel/kernel_context.h"

#include "framework/base/status_macros.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/op/op_schema.h"

namespace tandem {
namespace {

const std::vector<Variable*>* FindArg(const ArgVars& args, absl::string_view arg) {
  for (const auto& [name, vars] : args) {
    if (name == arg) return &vars;
  }
  return nullptr;
}

std::string VarName(const std::map<std::string, std::vector<std::string>>& names,
                    absl::string_view arg, int index) {
  auto it = names.find(std::string(arg));
  if (it == names.end() || index >= static_cast<int>(it->second.size())) return "?";
  return it->second[index];
}

}  // namespace

int KernelContext::InputCount(absl::string_view arg) const {
  const std::vector<Variable*>* v = FindArg(inputs_, arg);
  return v == nullptr ? 0 : static_cast<int>(v->size());
}

const Variable* KernelContext::InputVar(absl::string_view arg, int index) const {
  const std::vector<Variable*>* v = FindArg(inputs_, arg);
  if (v == nullptr || index >= static_cast<int>(v->size())) return nullptr;
  return (*v)[index];
}

std::string KernelContext::InputName(absl::string_view arg, int index) const {
  return VarName(op_.inputs, arg, index);
}

std::string KernelContext::OutputName(absl::string_view arg, int index) const {
  return VarName(op_.outputs, arg, index);
}

absl::StatusOr<const Tensor*> KernelContext::InputTensor(absl::string_view arg, int index) const {
  const Variable* v = InputVar(arg, index);
  if (v == nullptr) return InvalidArgument(absl::StrCat("input '", arg, "' is missing"));
  if (!v->is_tensor() || !v->tensor().initialized()) {
    return InvalidArgument(
        absl::StrCat("input '", arg, "' (variable '", InputName(arg, index), "') ",
                     v->is_selected_rows() ? "holds SelectedRows, expected a dense tensor"
                                           : "is not initialised"));
  }
  return &held_inputs_.emplace_front(v->tensor());
}

int KernelContext::OutputCount(absl::string_view arg) const {
  const std::vector<Variable*>* v = FindArg(outputs_, arg);
  return v == nullptr ? 0 : static_cast<int>(v->size());
}

Variable* KernelContext::OutputVar(absl::string_view arg, int index) const {
  const std::vector<Variable*>* v = FindArg(outputs_, arg);
  if (v == nullptr || index >= static_cast<int>(v->size())) return nullptr;
  return (*v)[index];
}

absl::StatusOr<Tensor*> KernelContext::AllocateOutput(absl::string_view arg, DataType dtype,
                                                      const Shape& shape, int index) {
  Variable* v = OutputVar(arg, index);
  if (v == nullptr) return InvalidArgument(absl::StrCat("output '", arg, "' is not bound"));
  const bool on_host = def_.IsHostMemory(arg) || device_->place().is_host();
  Allocator* allocator =
      !on_host ? device_->allocator()
               : (host_output_allocator_ != nullptr
                      ? host_output_allocator_
                      : (def_.IsHostMemory(arg) ? CpuAllocator::Default() : device_->allocator()));
  absl::StatusOr<Tensor> t = Tensor::Allocate(allocator, dtype, shape);
  if (!t.ok()) {
    if (t.status().code() != absl::StatusCode::kResourceExhausted) {
      return InvalidArgument(absl::StrCat("output '", arg, "' (variable '", OutputName(arg, index),
                                          "'): ", t.status().message()));
    }
    return absl::ResourceExhaustedError(absl::StrCat(
        "op '", op_.type, "' output '", arg, "' (variable '", OutputName(arg, index), "', ",
        DataTypeName(dtype), shape.ToString(), "): ", t.status().message(),
        on_host ? ". Hint: the host cannot hold it; use a smaller batch or shape"
                : ". Hint: run this op under device_guard(\"cpu\") or raise the memory limit"));
  }
  v->set(*std::move(t));
  return v->mutable_tensor();
}

absl::Status KernelContext::SetOutput(absl::string_view arg, Tensor tensor, int index) {
  Variable* v = OutputVar(arg, index);
  if (v == nullptr) return InvalidArgument(absl::StrCat("output '", arg, "' is not bound"));
  // An in-place update binds its input's tensor again: leave the variable
  // untouched, so that steps reading it meanwhile (a pipelined run's
  // lookup of rows this update does not write) race with nothing.
  const Tensor* now = v->is_tensor() ? &v->tensor() : nullptr;
  if (now != nullptr && now->buffer() == tensor.buffer() && now->dtype() == tensor.dtype() &&
      now->shape() == tensor.shape()) {
    return absl::OkStatus();
  }
  v->set(std::move(tensor));
  return absl::OkStatus();
}

absl::Status KernelContext::AllocateInferredOutputs() {
  ASSIGN_OR_RETURN(const OpSchema* schema, OpRegistry::Global().Find(op_.type));
  if (!schema->infer_shape()) {
    return absl::InternalError(absl::StrCat("op '", op_.type, "' has no shape inference"));
  }
  std::map<std::string, std::vector<TensorMeta>> metas;
  std::map<std::string, std::vector<const Tensor*>> host_values;
  for (const auto& [name, vars] : inputs_) {
    for (const Variable* v : vars) {
      const Tensor* t = v == nullptr ? nullptr : v->data_tensor();
      if (t == nullptr) {
        return InvalidArgument(absl::StrCat("input '", name, "' is not initialised"));
      }
      metas[name].push_back(TensorMeta{t->dtype(), t->shape()});
      if (t->place().is_host()) host_values[name].push_back(t);
    }
  }
  InferShapeContext ictx(op_, std::move(metas), std::move(host_values));
  RETURN_IF_ERROR(schema->infer_shape()(&ictx));
  for (const auto& [name, vars] : outputs_) {
    auto it = ictx.outputs().find(name);
    for (int i = 0; i < static_cast<int>(vars.size()); ++i) {
      if (it == ictx.outputs().end() || i >= static_cast<int>(it->second.size())) {
        return absl::InternalError(
            absl::StrCat("op '", op_.type, "': shape inference did not set output '", name, "'"));
      }
      const TensorMeta& m = it->second[i];
      RETURN_IF_ERROR(AllocateOutput(name, m.dtype, m.shape, i).status());
    }
  }
  return absl::OkStatus();
}

absl::Status KernelContext::CheckInputPlaces() const {
  for (const auto& [name, vars] : inputs_) {
    const Place want = def_.IsHostMemory(name) ? CPUPlace() : place();
    for (int i = 0; i < static_cast<int>(vars.size()); ++i) {
      const Tensor* t = vars[i] == nullptr ? nullptr : vars[i]->data_tensor();
      if (t == nullptr || !t->initialized()) continue;
      if (t->place() != want) {
        return absl::InternalError(absl::StrCat(
            "op '", op_.type, "' input '", name, "' (variable '", InputName(name, i), "') is on ",
            t->place().ToString(), " but the kernel '", def_.DebugString(), "' reads it from ",
            want.ToString(), ": a copy is missing"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace tandem
