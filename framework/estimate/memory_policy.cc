#include "framework/estimate/memory_policy.h"

#include <map>

#include "framework/op/op_desc.h"

namespace tandem {

std::set<std::string> FoldedConstants(const Block& block) {
  std::map<std::string, int> writes;
  for (const OpDesc& op : block.ops()) {
    for (const std::string& v : ArgumentVars(op.outputs)) ++writes[v];
  }
  std::set<std::string> folded;
  for (const OpDesc& op : block.ops()) {
    if (op.type != "fill_constant" || !op.inputs.empty()) continue;
    bool foldable = true;
    for (const std::string& v : ArgumentVars(op.outputs)) {
      const VarDesc* d = block.FindVar(v);
      foldable &= writes[v] == 1 && (d == nullptr || !d->persistable);
    }
    if (foldable) {
      for (const std::string& v : ArgumentVars(op.outputs)) folded.insert(v);
    }
  }
  return folded;
}

}  // namespace tandem
