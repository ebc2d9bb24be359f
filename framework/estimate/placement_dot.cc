#include "framework/estimate/placement_dot.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "framework/memory/allocator.h"

namespace tandem {
namespace {

constexpr const char* kColours[] = {"#9ecae1", "#fdae6b", "#a1d99b", "#bcbddc", "#fc9272"};

std::string Quote(const std::string& s) {
  return absl::StrCat("\"", absl::StrReplaceAll(s, {{"\\", "\\\\"}, {"\"", "\\\""}, {"\n", "\\n"}}),
                      "\"");
}

std::string Human(int64_t b) {
  const std::string human = HumanBytes(b);  // "1536 bytes (1.5 KiB)"
  const size_t open = human.find('(');
  return open == std::string::npos ? human : human.substr(open + 1, human.size() - open - 2);
}

// Where the value a reader sees comes from: the op that wrote it (or the
// variable's box when it exists before the run) and the copies on the way.
struct Source {
  std::string node;         // "op3", or a variable box "var_x"
  std::vector<int> copies;  // placed indices of the copies between
};

}  // namespace

std::string PlacementDot(const PlacedProgram& placed, const MemoryEstimate* memory) {
  const std::vector<OpDesc>& ops = placed.program.block().ops();
  std::map<Place, std::string> colour;
  colour[CPUPlace()] = kColours[0];
  for (const Place& p : placed.places) {
    if (!colour.count(p)) colour[p] = kColours[colour.size() % std::size(kColours)];
  }
  std::map<int, int64_t> copy_bytes;
  if (memory != nullptr) {
    for (const MemoryEstimate::Allocation& a : memory->allocations) {
      if (a.op >= 0 && placed.is_copy(a.op) && !a.resident) copy_bytes[a.op] = a.bytes;
    }
  }
  std::string out =
      "digraph placement {\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", "
      "fontname=\"Helvetica\"];\n";
  if (!placed.auto_summary.empty()) {
    absl::StrAppend(&out, "  label=", Quote(placed.auto_summary), "; labelloc=t;\n");
  }
  absl::StrAppend(&out, "  subgraph cluster_legend {\n    label=\"places\";\n");
  for (const auto& [place, c] : colour) {
    absl::StrAppend(&out, "    ", Quote("legend_" + place.ToString()),
                    " [label=", Quote(place.ToString()), ", fillcolor=", Quote(c), "];\n");
  }
  absl::StrAppend(&out, "  }\n");
  std::map<std::string, Source> source;  // the current value of each variable
  std::set<std::string> boxes;
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpDesc& op = ops[i];
    if (placed.is_copy(static_cast<int>(i))) {
      const CopyStep& c = *placed.table[i].copy;
      Source s = source.count(c.source) ? source[c.source] : Source{"var_" + c.source, {}};
      s.copies.push_back(static_cast<int>(i));
      source[c.output] = s;
      if (s.node.rfind("var_", 0) == 0) boxes.insert(c.source);
      continue;
    }
    const std::string node = absl::StrCat("op", i);
    absl::StrAppend(&out, "  ", node, " [label=",
                    Quote(absl::StrCat("#", i, " ", op.type, "\n", placed.places[i].ToString())),
                    ", fillcolor=", Quote(colour[placed.places[i]]), "];\n");
    for (const auto& [arg, vars] : op.inputs) {
      for (const std::string& v : vars) {
        auto it = source.find(v);
        const Source s = it != source.end() ? it->second : Source{"var_" + v, {}};
        if (it == source.end()) boxes.insert(v);
        std::string attrs;
        if (!s.copies.empty()) {
          const CopyStep& c = *placed.table[s.copies.back()].copy;
          int64_t bytes = 0;
          for (int k : s.copies) bytes = std::max(bytes, copy_bytes[k]);
          absl::StrAppend(&attrs, " [color=red, penwidth=2, label=",
                          Quote(absl::StrCat(c.var, "\n", c.from.ToString(), "->", c.to.ToString(),
                                             memory != nullptr ? "\n" + Human(bytes) : "")),
                          "]");
        }
        absl::StrAppend(&out, "  ", Quote(s.node), " -> ", node, attrs, ";\n");
      }
    }
    for (const auto& [arg, vars] : op.outputs) {
      for (const std::string& v : vars) source[v] = Source{node, {}};
    }
  }
  for (const std::string& v : boxes) {
    absl::StrAppend(&out, "  ", Quote("var_" + v), " [label=", Quote(v),
                    ", shape=note, style=\"\", fontsize=10];\n");
  }
  absl::StrAppend(&out, "}\n");
  return out;
}

}  // namespace tandem
