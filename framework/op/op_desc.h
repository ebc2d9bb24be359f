// OpDesc: one op instance in a program (type, named arguments, attrs, place).
//
//   OpDesc op;
//   op.type = "elementwise_add";
//   op.inputs["X"] = {"a"};
//   op.inputs["Y"] = {"b"};
//   op.outputs["Out"] = {"c"};
//   op.attrs["axis"] = int64_t{-1};
//   op.op_device = "gpu:0";   // from device_guard; "" = default place
//
// Plain data; not thread-safe to mutate.
#ifndef TANDEM_FRAMEWORK_OP_OP_DESC_H_
#define TANDEM_FRAMEWORK_OP_OP_DESC_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/op/attr.h"

namespace tandem {

// Suffix of gradient variables: the gradient of "w" is "w@GRAD".
inline constexpr char kGradSuffix[] = "@GRAD";
std::string GradVarName(absl::string_view var);

// Why an op exists; set by the builder, backward pass, optimizer or placer.
enum class OpRole { kForward, kBackward, kLoss, kOptimize, kCopy };
absl::string_view OpRoleName(OpRole role);  // "forward", "backward", ...

// What to do when an op needs a host/device copy of an input
// (settable per program and per builder scope).
enum class TransferPolicy { kInherit, kAllow, kLog, kDisallow };
absl::string_view TransferPolicyName(TransferPolicy policy);  // "allow", ...
// Accepts "allow", "log", "disallow"; InvalidArgument listing them otherwise.
absl::StatusOr<TransferPolicy> ParseTransferPolicy(absl::string_view name);

struct OpDesc {
  std::string type;
  std::map<std::string, std::vector<std::string>> inputs;
  std::map<std::string, std::vector<std::string>> outputs;
  AttrMap attrs;
  // The place requested by device_guard ("cpu", "gpu:0", ...); "" = default.
  std::string op_device;
  OpRole role = OpRole::kForward;
  // kInherit: the program's policy applies.
  TransferPolicy transfer_policy = TransferPolicy::kInherit;

  // The single variable bound to argument `arg`, or "" if none.
  std::string Input(absl::string_view arg) const;
  std::string Output(absl::string_view arg) const;
  // "elementwise_add(X=[a], Y=[b]) -> (Out=[c]) {axis=-1} @gpu:0"
  std::string DebugString() const;
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_OP_OP_DESC_H_
