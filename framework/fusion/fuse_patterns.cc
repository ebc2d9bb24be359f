#include "framework/fusion/fuse_patterns.h"

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "framework/op/op_schema.h"

namespace tandem {
namespace {

// Indices of the ops reading each variable, and of its last writer.
struct Uses {
  std::map<std::string, std::vector<size_t>> readers;
  std::map<std::string, size_t> writer;
};

Uses FindUses(const std::vector<OpDesc>& ops) {
  Uses u;
  for (size_t i = 0; i < ops.size(); ++i) {
    for (const auto& [arg, vars] : ops[i].inputs) {
      for (const std::string& v : vars) u.readers[v].push_back(i);
    }
    for (const auto& [arg, vars] : ops[i].outputs) {
      for (const std::string& v : vars) u.writer[v] = i;
    }
  }
  return u;
}

// The op that writes `var`, if it has type `type`.
std::optional<size_t> WriterOfType(const Uses& u, const std::vector<OpDesc>& ops,
                                   const std::string& var, const std::string& type) {
  auto it = u.writer.find(var);
  if (var.empty() || it == u.writer.end() || ops[it->second].type != type) return std::nullopt;
  return it->second;
}

// The one reader of `var` of type `type` whose argument `arg` is `var`.
std::optional<size_t> ReaderOfType(const Uses& u, const std::vector<OpDesc>& ops,
                                   const std::string& var, const std::string& type,
                                   const std::string& arg) {
  auto it = u.readers.find(var);
  if (it == u.readers.end()) return std::nullopt;
  for (size_t i : it->second) {
    if (ops[i].type == type && ops[i].Input(arg) == var) return i;
  }
  return std::nullopt;
}

// Whether every reader of `var` is among `allowed`.
bool ReadOnlyBy(const Uses& u, const std::string& var, const std::set<size_t>& allowed) {
  auto it = u.readers.find(var);
  if (it == u.readers.end()) return true;
  for (size_t i : it->second) {
    if (!allowed.count(i)) return false;
  }
  return true;
}

// One matched chain: forward op indices, backward ones (when present) and
// the fused ops that replace them.
struct Chain {
  std::set<size_t> remove;
  size_t forward_at = 0, backward_at = 0;
  OpDesc forward;
  std::optional<OpDesc> backward;
};

// The backward half of the chain ending in mean #mean, given its forward
// ops; nullopt when it is absent or not fusable (then the forward stays too).
std::optional<std::optional<Chain>> MatchBackward(const std::vector<OpDesc>& ops, const Uses& u,
                                                  const FusionOptions& options, Chain chain,
                                                  size_t norm, size_t sq, size_t mean) {
  const std::string a = ops[norm].Output("Out"), c = ops[sq].Output("Out");
  const std::optional<size_t> mean_grad = ReaderOfType(u, ops, c, "mean_grad", "X");
  const std::optional<size_t> sq_grad = ReaderOfType(u, ops, a, "square_error_cost_grad", "X");
  const std::optional<size_t> norm_grad = ReaderOfType(u, ops, a, "l2_normalize_grad", "Out");
  if (!mean_grad && !sq_grad && !norm_grad) return std::optional<Chain>(chain);  // forward only
  if (!mean_grad || !sq_grad || !norm_grad) return std::nullopt;
  const std::string dc = ops[*mean_grad].Output("X@GRAD"), da = ops[*sq_grad].Output("X@GRAD");
  if (dc.empty() || da.empty() || ops[*sq_grad].Input("Out@GRAD") != dc ||
      ops[*norm_grad].Input("Out@GRAD") != da || options.keep.count(dc) || options.keep.count(da) ||
      !ReadOnlyBy(u, dc, {*sq_grad}) || !ReadOnlyBy(u, da, {*norm_grad}) ||
      ops[*norm_grad].attrs != ops[norm].attrs) {
    return std::nullopt;
  }
  for (size_t i : {*mean_grad, *sq_grad, *norm_grad}) {
    if (ops[i].op_device != ops[mean].op_device) return std::nullopt;
  }
  OpDesc g;
  g.type = "l2_normalize_square_error_mean_grad";
  g.inputs = {{"X", {ops[norm].Input("X")}},
              {"Label", {ops[sq].Input("Y")}},
              {"Out@GRAD", {ops[*mean_grad].Input("Out@GRAD")}}};
  g.outputs["X@GRAD"] = {ops[*norm_grad].Output("X@GRAD")};
  if (!ops[*sq_grad].Output("Y@GRAD").empty()) {
    g.outputs["Label@GRAD"] = {ops[*sq_grad].Output("Y@GRAD")};
  }
  g.attrs = ops[norm].attrs;
  g.op_device = ops[*norm_grad].op_device;
  g.role = ops[*norm_grad].role;
  g.origin = ops[*norm_grad].origin;
  chain.backward = g;
  chain.backward_at = std::max({*mean_grad, *sq_grad, *norm_grad});
  chain.remove.insert({*mean_grad, *sq_grad, *norm_grad});
  return std::optional<Chain>(chain);
}

// The chain ending in mean #mean, if it can be fused.
std::optional<Chain> Match(const std::vector<OpDesc>& ops, const Uses& u,
                           const FusionOptions& options, size_t mean) {
  const std::optional<size_t> sq = WriterOfType(u, ops, ops[mean].Input("X"), "square_error_cost");
  if (!sq) return std::nullopt;
  const std::optional<size_t> norm = WriterOfType(u, ops, ops[*sq].Input("X"), "l2_normalize");
  if (!norm) return std::nullopt;
  const std::string a = ops[*norm].Output("Out"), c = ops[*sq].Output("Out");
  if (ops[*norm].op_device != ops[mean].op_device || ops[*sq].op_device != ops[mean].op_device ||
      options.keep.count(a) || options.keep.count(c) ||
      (options.has_kernels && !options.has_kernels(ops[mean].op_device))) {
    return std::nullopt;
  }
  Chain chain;
  chain.forward.type = "l2_normalize_square_error_mean";
  chain.forward.inputs = {{"X", {ops[*norm].Input("X")}}, {"Label", {ops[*sq].Input("Y")}}};
  chain.forward.outputs = {{"Out", {ops[mean].Output("Out")}}};
  chain.forward.attrs = ops[*norm].attrs;
  chain.forward.op_device = ops[mean].op_device;
  chain.forward.role = ops[mean].role;
  chain.forward.origin = ops[mean].origin;
  chain.forward_at = mean;
  chain.remove = {*norm, *sq, mean};
  std::optional<std::optional<Chain>> whole =
      MatchBackward(ops, u, options, chain, *norm, *sq, mean);
  if (!whole || !*whole) return std::nullopt;
  // The intermediates are read by the chain's own ops only.
  std::set<size_t> chain_ops = (*whole)->remove;
  if (!ReadOnlyBy(u, a, chain_ops) || !ReadOnlyBy(u, c, chain_ops)) return std::nullopt;
  return **whole;
}

// `ops` with the chain's ops replaced by its fused ones, and every origin
// that names an op by index (gradient of, loss gradient of, recompute of)
// renumbered; a removed forward op's index becomes the fused forward op's,
// a removed backward op's the fused backward op's.
std::vector<OpDesc> Rewrite(const std::vector<OpDesc>& ops, const Chain& chain) {
  std::vector<OpDesc> rewritten;
  std::vector<int> new_index(ops.size(), -1);
  int forward_index = -1, backward_index = -1;
  for (size_t k = 0; k < ops.size(); ++k) {
    if (k == chain.forward_at) {
      forward_index = static_cast<int>(rewritten.size());
      rewritten.push_back(chain.forward);
    }
    if (chain.backward && k == chain.backward_at) {
      backward_index = static_cast<int>(rewritten.size());
      rewritten.push_back(*chain.backward);
    }
    if (!chain.remove.count(k)) {
      new_index[k] = static_cast<int>(rewritten.size());
      rewritten.push_back(ops[k]);
    }
  }
  for (size_t k : chain.remove) {
    const bool forward = ops[k].role == chain.forward.role;
    new_index[k] = forward ? forward_index : backward_index;
  }
  for (OpDesc& op : rewritten) {
    const OpOrigin::Kind kind = op.origin.kind;
    if ((kind == OpOrigin::Kind::kGradOf || kind == OpOrigin::Kind::kLossGradOf ||
         kind == OpOrigin::Kind::kRecomputeOf) &&
        op.origin.op >= 0 && op.origin.op < static_cast<int>(ops.size())) {
      op.origin.op = new_index[op.origin.op];
    }
  }
  return rewritten;
}

}  // namespace

absl::StatusOr<int> FuseL2NormalizeSquareErrorMean(const FusionOptions& options, Program* program) {
  std::vector<OpDesc>& ops = program->block().mutable_ops();
  int fused = 0;
  // Each fusion moves the indices: match again from the start until no
  // chain is left (each fusion removes one mean, so this ends).
  for (bool again = true; again;) {
    again = false;
    const Uses u = FindUses(ops);
    for (size_t i = 0; i < ops.size() && !again; ++i) {
      if (ops[i].type != "mean") continue;
      const std::optional<Chain> chain = Match(ops, u, options, i);
      if (!chain) continue;
      ops = Rewrite(ops, *chain);
      ++fused;
      again = true;
    }
  }
  return fused;
}

}  // namespace tandem
