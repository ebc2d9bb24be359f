#include "framework/amp/amp.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/op/op_schema.h"

namespace tandem {
namespace {

// Rewrites one block's ops in order (see amp.h). One use per block.
class AmpRewriter {
 public:
  AmpRewriter(const AmpOptions& options, Block* block)
      : options_(options),
        block_(block),
        suffix_(absl::StrCat(".cast_", DataTypeName(options.dtype))) {}

  AmpReport Run() {
    std::vector<OpDesc> rewritten;
    const std::vector<OpDesc>& ops = block_->ops();
    low_ = LowPrecisionOps();
    for (size_t i = 0; i < ops.size(); ++i) {
      const OpDesc& op = ops[i];
      // A variable written again makes its low-precision twin stale.
      for (const auto& [arg, names] : op.outputs) {
        for (const std::string& name : names) low_of_.erase(name);
      }
      if (!low_[i]) {
        rewritten.push_back(op);
        continue;
      }
      Rewrite(i, &rewritten);
      report_.low_precision_ops.push_back(absl::StrCat(op.type, " #", i));
    }
    block_->mutable_ops() = std::move(rewritten);
    return report_;
  }

 private:
  DataType DtypeOf(const std::string& name) const {
    const VarDesc* var = block_->FindVar(name);
    return var == nullptr ? DataType::kFloat32 : var->dtype;
  }

  // Which ops run in 16 bits: the allow-listed ones that read float32, and
  // the pass-through ones that read float32 and whose output such an op
  // reads (found walking backwards, so chains of them count).
  std::vector<bool> LowPrecisionOps() const {
    const std::vector<OpDesc>& ops = block_->ops();
    std::vector<bool> low(ops.size(), false);
    std::set<std::string> read_in_low;
    for (size_t i = ops.size(); i-- > 0;) {
      const OpDesc& op = ops[i];
      if (!ReadsOnlyFloat32(op)) continue;
      bool feeds_low = options_.allow.count(op.type) > 0;
      if (!feeds_low && options_.pass_through.count(op.type) > 0) {
        for (const auto& [arg, names] : op.outputs) {
          for (const std::string& name : names) feeds_low |= read_in_low.count(name) > 0;
        }
      }
      if (!feeds_low) continue;
      low[i] = true;
      for (const auto& [arg, names] : op.inputs) read_in_low.insert(names.begin(), names.end());
    }
    return low;
  }

  // True when the op has a floating input and all of them are float32.
  bool ReadsOnlyFloat32(const OpDesc& op) const {
    bool any = false;
    for (const auto& [arg, names] : op.inputs) {
      for (const std::string& name : names) {
        const DataType t = DtypeOf(name);
        if (!IsFloating(t)) continue;
        if (t != DataType::kFloat32) return false;
        any = true;
      }
    }
    return any;
  }

  // Declares the low-precision twin of float32 variable `name`.
  std::string DeclareTwin(const std::string& name) {
    const VarDesc* source = block_->FindVar(name);
    std::string twin = name + suffix_;
    for (int n = 1; block_->HasVar(twin); ++n) twin = absl::StrCat(name, suffix_, "_", n);
    VarDesc var;
    var.name = twin;
    var.dtype = options_.dtype;
    if (source != nullptr) {
      var.shape = source->shape;
      var.stop_gradient = source->stop_gradient;
    }
    block_->SetVar(var);
    return twin;
  }

  OpDesc CastOp(const std::string& from, const std::string& to, DataType dtype,
                const OpDesc& beside) {
    OpDesc cast;
    cast.type = "cast";
    cast.origin.kind = OpOrigin::Kind::kAmpCast;  // the placer's cast-at-source rule
    cast.origin.var = from;
    cast.inputs["X"] = {from};
    cast.outputs["Out"] = {to};
    cast.attrs["out_dtype"] = dtype;
    cast.op_device = beside.op_device;
    cast.role = beside.role == OpRole::kLoss ? OpRole::kForward : beside.role;
    cast.transfer_policy = beside.transfer_policy;
    ++report_.casts;
    return cast;
  }

  // The low-precision twin of float32 `name`, cast before `consumer` the
  // first time it is needed.
  std::string LowTwin(const std::string& name, const OpDesc& consumer, std::vector<OpDesc>* out) {
    auto found = low_of_.find(name);
    if (found != low_of_.end()) return found->second;
    const std::string twin = DeclareTwin(name);
    out->push_back(CastOp(name, twin, options_.dtype, consumer));
    low_of_[name] = twin;
    return twin;
  }

  // Whether the float32 value of `name`, written by op #i in 16 bits, is
  // needed: an op after it that is not a 16-bit one reads it, nothing
  // reads it (the caller may fetch it), or it is persistable.
  bool NeedsFloat32(size_t i, const std::string& name) const {
    const VarDesc* var = block_->FindVar(name);
    if (var != nullptr && var->persistable) return true;
    const std::vector<OpDesc>& ops = block_->ops();
    bool read = false;
    for (size_t j = i + 1; j < ops.size(); ++j) {
      for (const auto& [arg, names] : ops[j].inputs) {
        if (std::find(names.begin(), names.end(), name) == names.end()) continue;
        if (!low_[j]) return true;
        read = true;
      }
      for (const auto& [arg, names] : ops[j].outputs) {
        if (std::find(names.begin(), names.end(), name) != names.end()) return !read;
      }
    }
    return !read;
  }

  void Rewrite(size_t i, std::vector<OpDesc>* out) {
    const OpDesc& op = block_->ops()[i];
    OpDesc low = op;
    for (auto& [arg, names] : low.inputs) {
      for (std::string& name : names) {
        if (DtypeOf(name) == DataType::kFloat32) name = LowTwin(name, op, out);
      }
    }
    std::vector<std::pair<std::string, std::string>> produced;  // float32 name, twin
    const std::map<std::string, DataType> inferred = InferredOutputDtypes(low);
    for (auto& [arg, names] : low.outputs) {
      for (std::string& name : names) {
        if (DtypeOf(name) != DataType::kFloat32) continue;
        // An output the op keeps in float32 with 16-bit inputs (statistics
        // such as self_attention's Lse) stays as it is.
        auto kept = inferred.find(name);
        if (kept != inferred.end() && kept->second == DataType::kFloat32) continue;
        const std::string twin = DeclareTwin(name);
        produced.emplace_back(name, twin);
        name = twin;
      }
    }
    out->push_back(low);
    for (const auto& [name, twin] : produced) {
      if (NeedsFloat32(i, name)) out->push_back(CastOp(twin, name, DataType::kFloat32, op));
      low_of_[name] = twin;
    }
  }

  // The dtype op `low` (its inputs already rewritten) gives each output
  // variable, by its schema's shape inference; empty when it cannot tell.
  std::map<std::string, DataType> InferredOutputDtypes(const OpDesc& low) const {
    std::map<std::string, DataType> dtypes;
    absl::StatusOr<const OpSchema*> schema = OpRegistry::Global().Find(low.type);
    if (!schema.ok() || !(*schema)->infer_shape()) return dtypes;
    std::map<std::string, std::vector<TensorMeta>> metas;
    for (const auto& [arg, names] : low.inputs) {
      for (const std::string& name : names) {
        const VarDesc* d = block_->FindVar(name);
        if (d == nullptr) return dtypes;
        metas[arg].push_back(TensorMeta{d->dtype, d->shape, d->kind == VarKind::kSelectedRows});
      }
    }
    InferShapeContext ctx(low, std::move(metas));
    if (!(*schema)->infer_shape()(&ctx).ok()) return dtypes;
    for (const auto& [arg, names] : low.outputs) {
      auto it = ctx.outputs().find(arg);
      if (it == ctx.outputs().end()) continue;
      for (size_t k = 0; k < names.size() && k < it->second.size(); ++k) {
        dtypes[names[k]] = it->second[k].dtype;
      }
    }
    return dtypes;
  }

  const AmpOptions& options_;
  Block* block_;
  const std::string suffix_;
  std::vector<bool> low_;                      // per op: runs in 16 bits
  std::map<std::string, std::string> low_of_;  // float32 variable -> its live twin
  AmpReport report_;
};

}  // namespace

const std::set<std::string>& DefaultAmpAllowList() {
  static const auto* allow =
      new std::set<std::string>{"mul", "matmul", "fc", "conv2d", "self_attention"};
  return *allow;
}

const std::set<std::string>& DefaultAmpPassThroughList() {
  static const auto* pass_through = new std::set<std::string>{"concat", "relu", "gelu"};
  return *pass_through;
}

absl::StatusOr<std::optional<DataType>> ParseAmpFlag(absl::string_view value) {
  if (value == "none" || value.empty()) return std::optional<DataType>();
  if (value == "bf16" || value == "bfloat16") return std::optional(DataType::kBFloat16);
  if (value == "fp16" || value == "float16") return std::optional(DataType::kFloat16);
  return absl::InvalidArgumentError(absl::StrCat(
      "--amp='", value, "': accepted values are none, bf16 (bfloat16), fp16 (float16)"));
}

absl::StatusOr<AmpReport> ApplyAmp(const AmpOptions& options, Program* program) {
  if (!IsLowPrecisionFloat(options.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("AMP computes in bfloat16 or float16, not ", DataTypeName(options.dtype)));
  }
  const std::vector<OpDesc>& ops = program->block().ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].role == OpRole::kBackward || ops[i].role == OpRole::kOptimize) {
      return absl::FailedPreconditionError(absl::StrCat(
          "AMP rewrites the forward program, but op '", ops[i].type, "' (#", i, ") is a ",
          OpRoleName(ops[i].role), " op: apply AMP before AppendBackward / Minimize"));
    }
  }
  return AmpRewriter(options, &program->block()).Run();
}

}  // namespace tandem
