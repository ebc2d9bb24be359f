#include "tests/conformance/gradcheck_cases.h"

namespace tandem {

OpDesc GradOp(const std::string& type, std::map<std::string, std::vector<std::string>> inputs,
              AttrMap attrs, const std::map<std::string, std::string>& outputs) {
  OpDesc op;
  op.type = type;
  op.inputs = std::move(inputs);
  for (const auto& [arg, var] : outputs) op.outputs[arg] = {var};
  op.attrs = std::move(attrs);
  return op;
}

}  // namespace tandem
