#include "framework/op/op_desc.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tandem {
namespace {

std::string Single(const std::map<std::string, std::vector<std::string>>& args,
                   absl::string_view arg) {
  auto it = args.find(std::string(arg));
  if (it == args.end() || it->second.empty()) return "";
  return it->second[0];
}

std::string FormatArgs(const std::map<std::string, std::vector<std::string>>& args) {
  std::vector<std::string> parts;
  for (const auto& [name, vars] : args) {
    parts.push_back(absl::StrCat(name, "=[", absl::StrJoin(vars, ", "), "]"));
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace

absl::string_view OpRoleName(OpRole role) {
  switch (role) {
    case OpRole::kForward:
      return "forward";
    case OpRole::kBackward:
      return "backward";
    case OpRole::kLoss:
      return "loss";
    case OpRole::kOptimize:
      return "optimize";
    case OpRole::kCopy:
      return "copy";
  }
  return "?";
}

absl::string_view TransferPolicyName(TransferPolicy policy) {
  switch (policy) {
    case TransferPolicy::kInherit:
      return "inherit";
    case TransferPolicy::kAllow:
      return "allow";
    case TransferPolicy::kLog:
      return "log";
    case TransferPolicy::kDisallow:
      return "disallow";
  }
  return "?";
}

absl::StatusOr<TransferPolicy> ParseTransferPolicy(absl::string_view name) {
  for (TransferPolicy p :
       {TransferPolicy::kAllow, TransferPolicy::kLog, TransferPolicy::kDisallow}) {
    if (TransferPolicyName(p) == name) return p;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown transfer policy '", name, "'; accepted: allow, log, disallow"));
}

absl::string_view OpOriginKindName(OpOrigin::Kind kind) {
  switch (kind) {
    case OpOrigin::Kind::kUser:
      return "user";
    case OpOrigin::Kind::kGradOf:
      return "grad_of";
    case OpOrigin::Kind::kLossGradOf:
      return "loss_grad_of";
    case OpOrigin::Kind::kGradSumOf:
      return "grad_sum_of";
    case OpOrigin::Kind::kUpdateOf:
      return "update_of";
    case OpOrigin::Kind::kStateOf:
      return "state_of";
    case OpOrigin::Kind::kHostState:
      return "host_state";
    case OpOrigin::Kind::kAmpCast:
      return "amp_cast";
    case OpOrigin::Kind::kRecomputeOf:
      return "recompute_of";
    case OpOrigin::Kind::kGradNormOf:
      return "grad_norm_of";
  }
  return "?";
}

absl::StatusOr<OpOrigin::Kind> ParseOpOriginKind(absl::string_view name) {
  for (OpOrigin::Kind k :
       {OpOrigin::Kind::kUser, OpOrigin::Kind::kGradOf, OpOrigin::Kind::kLossGradOf,
        OpOrigin::Kind::kGradSumOf, OpOrigin::Kind::kUpdateOf, OpOrigin::Kind::kStateOf,
        OpOrigin::Kind::kHostState, OpOrigin::Kind::kAmpCast, OpOrigin::Kind::kRecomputeOf,
        OpOrigin::Kind::kGradNormOf}) {
    if (OpOriginKindName(k) == name) return k;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown op origin '", name,
      "'; accepted: user, grad_of, loss_grad_of, grad_sum_of, update_of, state_of, host_state, "
      "amp_cast, recompute_of, grad_norm_of"));
}

std::string GradVarName(absl::string_view var) { return absl::StrCat(var, kGradSuffix); }

std::string OpDesc::Input(absl::string_view arg) const { return Single(inputs, arg); }
std::string OpDesc::Output(absl::string_view arg) const { return Single(outputs, arg); }

std::string OpDesc::DebugString() const {
  std::vector<std::string> attr_parts;
  for (const auto& [name, value] : attrs) {
    attr_parts.push_back(absl::StrCat(name, "=", AttrValueToString(value)));
  }
  return absl::StrCat(type, "(", FormatArgs(inputs), ") -> (", FormatArgs(outputs), ")",
                      attr_parts.empty() ? "" : " {", absl::StrJoin(attr_parts, ", "),
                      attr_parts.empty() ? "" : "}", op_device.empty() ? "" : " @", op_device);
}

std::vector<std::string> ArgumentVars(const std::map<std::string, std::vector<std::string>>& args) {
  std::vector<std::string> out;
  for (const auto& [arg, vars] : args) out.insert(out.end(), vars.begin(), vars.end());
  return out;
}

}  // namespace tandem
