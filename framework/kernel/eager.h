// RunOpEager: runs one op on one place, now. For tests, conformance checks,
// tools and small programs; training programs go through the executor.
//
//   OpDesc op;
//   op.type = "matmul";
//   ASSIGN_OR_RETURN(EagerOutputs out,
//       RunOpEager(op, GPUPlace(0), {{"X", {Variable(x)}}, {"Y", {Variable(y)}}}));
//   const Tensor& result = out.at("Out")[0].tensor();   // lives on gpu:0
//
// Validates the op against its schema (filling attribute defaults), finds the
// kernel for the inputs' dtypes, copies each input to where the kernel reads
// it (counted in `stats`), runs the kernel and waits for the device. Inputs
// may live anywhere. Outputs stay where the kernel wrote them. Thread-safe.
#ifndef TANDEM_FRAMEWORK_KERNEL_EAGER_H_
#define TANDEM_FRAMEWORK_KERNEL_EAGER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/op/op_desc.h"
#include "framework/place/place.h"
#include "framework/tensor/variable.h"

namespace tandem {

using EagerInputs = std::map<std::string, std::vector<Variable>>;
using EagerOutputs = std::map<std::string, std::vector<Variable>>;

struct EagerStats {
  int copies_h2d = 0;
  int copies_d2h = 0;
  // Wall time of the kernel's Compute call (its host work and enqueueing;
  // the device's part of its work is not waited for there).
  double compute_us = 0;
};

// If `op.outputs` is empty every output the schema declares is bound
// (optional ones too); otherwise exactly the ones it names. Input variable
// names default to "<arg>_<i>" (used in messages).
absl::StatusOr<EagerOutputs> RunOpEager(OpDesc op, const Place& place, const EagerInputs& inputs,
                                        EagerStats* stats = nullptr);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_KERNEL_EAGER_H_
