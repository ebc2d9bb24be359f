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

// Every variable of an op's inputs or outputs, argument by argument (in
// the map's order), repeats kept: ArgumentVars(op.inputs).
std::vector<std::string> ArgumentVars(const std::map<std::string, std::vector<std::string>>& args);

// Why an op exists; set by the builder, backward pass, optimizer or placer.
enum class OpRole { kForward, kBackward, kLoss, kOptimize, kCopy };
absl::string_view OpRoleName(OpRole role);  // "forward", "backward", ...

// What to do when an op needs a host/device copy of an input
// (settable per program and per builder scope).
enum class TransferPolicy { kInherit, kAllow, kLog, kDisallow };
absl::string_view TransferPolicyName(TransferPolicy policy);  // "allow", ...
// Accepts "allow", "log", "disallow"; InvalidArgument listing them otherwise.
absl::StatusOr<TransferPolicy> ParseTransferPolicy(absl::string_view name);

// What generated an op, so that the placer can place it with what it
// derives from (framework/placement/placer.h states the rules). Set by
// AppendBackward and the optimizers; ops a user builds are kUser. `op` is an
// index into the same block, `var` a variable of it.
struct OpOrigin {
  enum class Kind {
    kUser,
    kGradOf,       // a gradient op of forward op `op`
    kLossGradOf,   // the loss-gradient fill of the loss produced by op `op`
    kGradSumOf,    // a gradient sum adding the partial gradient `var`
    kUpdateOf,     // the update op of parameter `var`
    kStateOf,      // initialises optimizer state of parameter `var`
    kHostState,    // initialises a host scalar the update kernels read (learning rate)
    kAmpCast,      // a cast the mixed-precision rewrite inserted, of variable `var`
    kRecomputeOf,  // forward op `op` run again in the backward (framework/backward/recompute.h)
    kGradNormOf,   // reduces gradient `var` to a scalar (the clip's squared norm)
  };
  Kind kind = Kind::kUser;
  int op = -1;
  std::string var;

  bool operator==(const OpOrigin& o) const { return kind == o.kind && op == o.op && var == o.var; }
  bool operator!=(const OpOrigin& o) const { return !(*this == o); }
};
// "user", "grad_of", "loss_grad_of", "grad_sum_of", "update_of", "state_of", "host_state",
// "amp_cast", "recompute_of", "grad_norm_of".
absl::string_view OpOriginKindName(OpOrigin::Kind kind);
// InvalidArgument listing the accepted names otherwise.
absl::StatusOr<OpOrigin::Kind> ParseOpOriginKind(absl::string_view name);

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
  OpOrigin origin;

  // The single variable bound to argument `arg`, or "" if none.
  std::string Input(absl::string_view arg) const;
  std::string Output(absl::string_view arg) const;
  // "elementwise_add(X=[a], Y=[b]) -> (Out=[c]) {axis=-1} @gpu:0"
  std::string DebugString() const;
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_OP_OP_DESC_H_
