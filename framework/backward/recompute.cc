#include "framework/backward/recompute.h"

#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"

namespace tandem {
namespace {

constexpr absl::string_view kSuffix = "@RECOMPUTE";

// Rewrites one block (see recompute.h). One use per block.
class Recomputer {
 public:
  Recomputer(const RecomputeOptions& options, Block* block) : options_(options), block_(block) {}

  absl::StatusOr<RecomputeReport> Run() {
    Index();
    if (backward_begin_ < 0) {
      return absl::FailedPreconditionError(
          "recompute: the program has no backward op; apply it after AppendBackward / "
          "Optimizer::Minimize");
    }
    const std::vector<OpDesc>& ops = block_->ops();
    std::vector<OpDesc> out(ops.begin(), ops.begin() + backward_begin_);
    for (size_t i = backward_begin_; i < ops.size(); ++i) {
      OpDesc op = ops[i];
      if (op.role == OpRole::kBackward) {
        for (auto& [arg, names] : op.inputs) {
          for (std::string& name : names) {
            if (!Recomputable(name)) continue;
            if (reported_.insert(name).second) {
              report_.values.push_back(absl::StrCat(name, " (", ops[writers_[name][0]].type, " #",
                                                    writers_[name][0], ")"));
            }
            name = Emit(name, &out);
          }
        }
      }
      new_index_[i] = static_cast<int>(out.size());
      out.push_back(std::move(op));
    }
    for (OpDesc& op : out) {
      if (op.origin.op >= backward_begin_) op.origin.op = new_index_.at(op.origin.op);
    }
    block_->mutable_ops() = std::move(out);
    return report_;
  }

 private:
  // Writers of every variable, where the backward begins, and which
  // variables ops after the forward read.
  void Index() {
    const std::vector<OpDesc>& ops = block_->ops();
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const OpDesc& op = ops[i];
      if (backward_begin_ < 0 && op.role == OpRole::kBackward) backward_begin_ = i;
      for (const auto& [arg, names] : op.outputs) {
        for (const std::string& name : names) writers_[name].push_back(i);
      }
      if (backward_begin_ < 0) continue;
      for (const auto& [arg, names] : op.inputs) {
        for (const std::string& name : names) {
          (op.role == OpRole::kBackward ? backward_reads_ : other_late_reads_).insert(name);
        }
      }
    }
  }

  bool Persistable(const std::string& name) const {
    const VarDesc* var = block_->FindVar(name);
    return var != nullptr && var->persistable;
  }

  // Whether forward value `v` can be made again in the backward from what
  // is available there (see recompute.h). Memoised; false while deciding
  // (no cycle can recompute itself).
  bool Recomputable(const std::string& v) {
    auto known = memo_.find(v);
    if (known != memo_.end()) return known->second;
    memo_[v] = false;
    auto w = writers_.find(v);
    if (w == writers_.end() || w->second.size() != 1 || w->second[0] >= backward_begin_) {
      return false;
    }
    const int p = w->second[0];
    const OpDesc& op = block_->ops()[p];
    if (op.role != OpRole::kForward || !options_.ops.count(op.type) || other_late_reads_.count(v)) {
      return false;
    }
    for (const auto& [arg, names] : op.outputs) {
      for (const std::string& name : names) {
        if (Persistable(name)) return false;
      }
    }
    for (const auto& [arg, names] : op.inputs) {
      for (const std::string& u : names) {
        if (!InputAvailable(op, p, u)) return false;
      }
    }
    memo_[v] = true;
    return true;
  }

  // Whether input `u` of forward op #p can be read by its copy in the
  // backward without keeping anything the program did not keep.
  bool InputAvailable(const OpDesc& op, int p, const std::string& u) {
    auto w = writers_.find(u);
    const std::vector<int> none;
    const std::vector<int>& writers = w == writers_.end() ? none : w->second;
    if (Persistable(u)) {
      if (op.type == "cast" && !options_.parameter_casts) return false;
      for (int i : writers) {
        if (block_->ops()[i].role != OpRole::kOptimize) return false;  // changes in the step
      }
      return true;
    }
    if (writers.empty()) return true;  // a feed
    if (writers.size() != 1 || writers[0] >= p) return false;
    return Recomputable(u) || backward_reads_.count(u) > 0;
  }

  // Appends the copy of `v`'s writer (after those of its recomputed
  // inputs) unless it is there already; returns v's recomputed name.
  std::string Emit(const std::string& v, std::vector<OpDesc>* out) {
    auto done = recomputed_.find(v);
    if (done != recomputed_.end()) return done->second;
    const int p = writers_[v][0];
    OpDesc copy = block_->ops()[p];
    for (auto& [arg, names] : copy.inputs) {
      for (std::string& u : names) {
        if (Recomputable(u)) u = Emit(u, out);
      }
    }
    for (auto& [arg, names] : copy.outputs) {
      for (std::string& name : names) {
        const std::string fresh = Declare(name);
        recomputed_[name] = fresh;
        name = fresh;
      }
    }
    copy.role = OpRole::kBackward;
    copy.origin = {OpOrigin::Kind::kRecomputeOf, p, ""};
    out->push_back(std::move(copy));
    ++report_.ops;
    return recomputed_.at(v);
  }

  // Declares the recomputed twin of `name`: its declaration, not persistable.
  std::string Declare(const std::string& name) {
    std::string fresh = absl::StrCat(name, kSuffix);
    for (int n = 1; block_->HasVar(fresh); ++n) fresh = absl::StrCat(name, kSuffix, "_", n);
    const VarDesc* source = block_->FindVar(name);
    VarDesc var = source != nullptr ? *source : VarDesc();
    var.name = fresh;
    var.persistable = false;
    block_->SetVar(std::move(var));
    return fresh;
  }

  const RecomputeOptions& options_;
  Block* block_;
  int backward_begin_ = -1;
  std::map<std::string, std::vector<int>> writers_;
  std::set<std::string> backward_reads_;    // read by backward ops
  std::set<std::string> other_late_reads_;  // read by other ops after the forward
  std::map<std::string, bool> memo_;
  std::map<std::string, std::string> recomputed_;  // forward value -> its recomputed twin
  std::set<std::string> reported_;
  std::map<int, int> new_index_;  // backward op: old index -> new
  RecomputeReport report_;
};

}  // namespace

const std::set<std::string>& DefaultRecomputeOps() {
  static const auto* ops = new std::set<std::string>{"cast", "gelu", "relu", "layer_norm"};
  return *ops;
}

absl::StatusOr<std::optional<RecomputeOptions>> ParseRecomputeFlag(absl::string_view value) {
  if (value == "none" || value.empty()) return std::optional<RecomputeOptions>();
  RecomputeOptions options;
  if (value == "cheap") return std::optional(options);
  options.parameter_casts = true;
  if (value == "cheap+weights") return std::optional(options);
  return absl::InvalidArgumentError(absl::StrCat("--recompute: unknown value '", value,
                                                 "'; accepted: none, cheap, cheap+weights"));
}

absl::StatusOr<RecomputeReport> ApplyRecompute(const RecomputeOptions& options, Program* program) {
  for (const std::string& op : options.ops) {
    if (op == "dropout" || op == "uniform_random" || op == "gaussian_random") {
      return absl::InvalidArgumentError(
          absl::StrCat("recompute: '", op,
                       "' draws random numbers; running it again would not give the "
                       "values the backward needs"));
    }
  }
  if (options.parameter_casts) {
    for (const OpDesc& op : program->block().ops()) {
      if (op.outputs.count("ParamCastOut") == 0) continue;
      return absl::FailedPreconditionError(
          absl::StrCat("recompute: parameter_casts, but '", op.type, "' of '", op.Input("Param"),
                       "' writes its 16-bit working copy '", op.Output("ParamCastOut"),
                       "', which no forward cast makes: build the program with "
                       "Optimizer::set_working_copies(false) to recompute the weights' casts"));
    }
  }
  return Recomputer(options, &program->block()).Run();
}

}  // namespace tandem
