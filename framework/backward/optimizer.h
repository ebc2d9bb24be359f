// Optimizers: append backward and update ops for a loss.
//
//   SGD sgd(/*learning_rate=*/0.001);
//   RETURN_IF_ERROR(sgd.Minimize(&builder, loss));
//
// Placement (DESIGN.md section 4): each update op runs where its parameter
// lives, i.e. on the op_device of the first op that reads the parameter, so
// a table kept on the CPU by device_guard("cpu") is updated on the CPU. The
// learning rate is a persistable variable initialised on the host; update
// kernels read it as a HostMemory argument, so no step copies it. Not
// thread-safe.
#ifndef TANDEM_FRAMEWORK_BACKWARD_OPTIMIZER_H_
#define TANDEM_FRAMEWORK_BACKWARD_OPTIMIZER_H_

#include "absl/status/status.h"
#include "framework/backward/backward.h"
#include "framework/program/program_builder.h"

namespace tandem {

class SGD {
 public:
  explicit SGD(double learning_rate) : learning_rate_(learning_rate) {}
  // Appends backward ops and one `sgd` op per trainable parameter.
  // InvalidArgument for a learning rate that is not finite and positive.
  absl::Status Minimize(ProgramBuilder* builder, Var loss);
  // Name of the learning-rate variable after Minimize.
  const std::string& learning_rate_var() const { return lr_var_; }

 private:
  double learning_rate_;
  std::string lr_var_;
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_BACKWARD_OPTIMIZER_H_
