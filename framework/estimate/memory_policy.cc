#include "framework/estimate/memory_policy.h"

#include <map>

#include "framework/op/op_desc.h"
#include "framework/op/op_schema.h"

namespace tandem {

std::set<std::string> FoldedConstants(const Block& block) {
  std::map<std::string, int> writes;
  for (const OpDesc& op : block.ops()) {
    for (const std::string& v : ArgumentVars(op.outputs)) ++writes[v];
  }
  std::set<std::string> folded;
  for (const OpDesc& op : block.ops()) {
    if (!op.inputs.empty()) continue;
    absl::StatusOr<const OpSchema*> schema = OpRegistry::Global().Find(op.type);
    if (!schema.ok() || !(*schema)->is_constant()) continue;
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

std::map<int, Place> PinnedCopySources(const PlacedProgram& placed) {
  const std::vector<OpDesc>& ops = placed.program.block().ops();
  std::map<std::string, int> last_writer;  // so far, in program order
  std::map<int, Place> pinned;
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    if (placed.is_copy(i) && !placed.table[i].copy->to.is_host()) {
      auto producer = last_writer.find(placed.table[i].copy->source);
      if (producer != last_writer.end() && !placed.is_copy(producer->second)) {
        pinned.emplace(producer->second, placed.table[i].copy->to);
      }
    }
    for (const std::string& v : ArgumentVars(ops[i].outputs)) last_writer[v] = i;
  }
  return pinned;
}

}  // namespace tandem
