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

#include "framework/op/attr.h"

namespace tandem {

// Suffix of gradient variables: the gradient of "w" is "w@GRAD".
inline constexpr char kGradSuffix[] = "@GRAD";
std::string GradVarName(absl::string_view var);

struct OpDesc {
  std::string type;
  std::map<std::string, std::vector<std::string>> inputs;
  std::map<std::string, std::vector<std::string>> outputs;
  AttrMap attrs;
  std::string op_device;

  // The single variable bound to argument `arg`, or "" if none.
  std::string Input(absl::string_view arg) const;
  std::string Output(absl::string_view arg) const;
  // "elementwise_add(X=[a], Y=[b]) -> (Out=[c]) {axis=-1} @gpu:0"
  std::string DebugString() const;
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_OP_OP_DESC_H_
