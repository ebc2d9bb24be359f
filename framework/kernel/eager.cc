#include "framework/kernel/eager.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "framework/kernel/kernel_context.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/op/op_schema.h"

namespace tandem {
namespace {

// Moves `v`'s data to `want`, counting the copy.
absl::StatusOr<Variable> PlaceVariable(const Variable& v, const Place& want, EagerStats* stats) {
  const Tensor* t = v.data_tensor();
  if (t == nullptr || !t->initialized() || t->place() == want) return v;
  ASSIGN_OR_RETURN(Tensor moved, CopyTensorTo(*t, want));
  if (stats != nullptr) {
    (want.is_host() ? stats->copies_d2h : stats->copies_h2d)++;
  }
  if (v.is_selected_rows()) {
    const SelectedRows& r = v.selected_rows();
    return Variable(SelectedRows(r.height(), r.rows(), std::move(moved)));
  }
  return Variable(std::move(moved));
}

}  // namespace

absl::StatusOr<EagerOutputs> RunOpEager(OpDesc op, const Place& place, const EagerInputs& inputs,
                                        EagerStats* stats) {
  ASSIGN_OR_RETURN(const OpSchema* schema, OpRegistry::Global().Find(op.type));
  std::map<std::string, DataType> var_dtypes;
  for (const auto& [arg, vars] : inputs) {
    std::vector<std::string>& names = op.inputs[arg];
    for (size_t i = names.size(); i < vars.size(); ++i) {
      names.push_back(absl::StrCat(arg, "_", i));
    }
    for (size_t i = 0; i < vars.size(); ++i) {
      if (const Tensor* t = vars[i].data_tensor()) var_dtypes[names[i]] = t->dtype();
    }
  }
  if (op.outputs.empty()) {
    for (const OpSchema::ArgDef& out : schema->outputs()) {
      op.outputs[out.name] = {out.name + "_0"};
    }
  }
  RETURN_IF_ERROR(schema->Validate(&op));

  ASSIGN_OR_RETURN(Device * device, DeviceRegistry::Global().GetDevice(place));
  ASSIGN_OR_RETURN(const KernelRegistration* reg,
                   KernelRegistry::Global().FindForOp(
                       op, place.type(), [&](const std::string& var) -> std::optional<DataType> {
                         auto it = var_dtypes.find(var);
                         if (it == var_dtypes.end()) return std::nullopt;
                         return it->second;
                       }));
  ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> kernel, reg->Create(op));

  std::map<std::string, std::vector<Variable>> placed_in;
  for (const auto& [arg, vars] : inputs) {
    const Place want = reg->def.IsHostMemory(arg) ? CPUPlace() : place;
    for (const Variable& v : vars) {
      ASSIGN_OR_RETURN(Variable moved, PlaceVariable(v, want, stats));
      placed_in[arg].push_back(std::move(moved));
    }
  }
  EagerOutputs outputs;
  for (const auto& [arg, names] : op.outputs) outputs[arg].resize(names.size());

  ArgVars in_args, out_args;
  for (auto& [arg, vars] : placed_in) {
    std::vector<Variable*> ptrs;
    for (Variable& v : vars) ptrs.push_back(&v);
    in_args.emplace_back(arg, std::move(ptrs));
  }
  for (auto& [arg, vars] : outputs) {
    std::vector<Variable*> ptrs;
    for (Variable& v : vars) ptrs.push_back(&v);
    out_args.emplace_back(arg, std::move(ptrs));
  }
  KernelContext ctx(op, reg->def, device, device->compute_stream(), in_args, out_args);
  RETURN_IF_ERROR(ctx.CheckInputPlaces());
  {
    DeviceGuard guard(place);
    const auto start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(kernel->Compute(&ctx));
    if (stats != nullptr) {
      stats->compute_us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count();
    }
    RETURN_IF_ERROR(device->SynchronizeStream(device->compute_stream()));
  }
  return outputs;
}

}  // namespace tandem
