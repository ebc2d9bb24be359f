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
  std::map<std::string, int> last_writer;   // so far, in program order
  std::map<std::string, int> final_writer;  // of the whole program: the next run reads its value
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    for (const std::string& v : ArgumentVars(ops[i].outputs)) final_writer[v] = i;
  }
  std::map<int, Place> pinned;
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    if (placed.is_copy(i) && !placed.table[i].copy->to.is_host()) {
      const std::string& source = placed.table[i].copy->source;
      const VarDesc* var = placed.program.block().FindVar(source);
      int producer = -1;
      if (auto w = last_writer.find(source); w != last_writer.end()) {
        producer = w->second;
      } else if (auto f = final_writer.find(source);
                 f != final_writer.end() && var != nullptr && var->persistable) {
        producer = f->second;  // a persistable the run before wrote last
      }
      if (producer >= 0 && !placed.is_copy(producer)) {
        pinned.emplace(producer, placed.table[i].copy->to);
      }
    }
    for (const std::string& v : ArgumentVars(ops[i].outputs)) last_writer[v] = i;
  }
  return pinned;
}

}  // namespace tandem
