#include "framework/backward/optimizer.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"

namespace tandem {
namespace {

// op_device of the first op reading `param` ("" if none).
std::string ParamDevice(const Block& block, const std::string& param) {
  for (const OpDesc& op : block.ops()) {
    for (const auto& [arg, vars] : op.inputs) {
      for (const std::string& v : vars) {
        if (v == param) return op.op_device;
      }
    }
  }
  return "";
}

}  // namespace

absl::Status SGD::Minimize(ProgramBuilder* builder, Var loss) {
  if (!std::isfinite(learning_rate_) || learning_rate_ <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("SGD: learning rate must be finite and > 0, got ", learning_rate_));
  }
  ASSIGN_OR_RETURN(GradMap grads, AppendBackward(builder, loss));
  {
    auto host = builder->device_guard("cpu");  // host mirror: read by every sgd kernel
    lr_var_ = builder->UniqueName("learning_rate");
    builder->CreatePersistableConstant(lr_var_, DataType::kFloat32, Shape({1}), learning_rate_);
  }
  Block& block = builder->main_program().block();
  for (const auto& [param, grad] : grads) {
    OpDesc op;
    op.type = "sgd";
    op.inputs = {{"Param", {param}}, {"Grad", {grad}}, {"LearningRate", {lr_var_}}};
    op.outputs = {{"ParamOut", {param}}};
    op.op_device = ParamDevice(block, param);
    op.role = OpRole::kOptimize;
    block.AppendOp(std::move(op));
  }
  return builder->status();
}

}  // namespace tandem
