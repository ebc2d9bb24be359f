#include "framework/parallel/replicate.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/types/data_type.h"

namespace tandem {
namespace {

constexpr char kGatheredSuffix[] = "@ALLGATHER";

// One parameter's update op and what the transform needs to know of it.
struct Update {
  int op = 0;  // the update op's index in the main program
  std::string param, grad;
  bool shared = false;             // every reader pinned to the host
  bool sparse = false;             // the gradient is SelectedRows
  std::string place;               // op_device of the parameter's first reader
  int ready = -1;                  // the last op writing the gradient before the update
  int64_t bytes = 0;               // of the gradient (the parameter's known dims)
  std::vector<std::string> state;  // persistables the update writes (param included)
};

int64_t KnownBytes(const VarDesc& v) {
  int64_t n = 1;
  for (int64_t d : v.shape.dims()) n *= std::max<int64_t>(d, 1);
  return n * static_cast<int64_t>(SizeOf(v.dtype));
}

bool Reads(const OpDesc& op, const std::string& var) {
  for (const auto& [arg, vars] : op.inputs) {
    if (std::find(vars.begin(), vars.end(), var) != vars.end()) return true;
  }
  return false;
}

bool Writes(const OpDesc& op, const std::string& var) {
  for (const auto& [arg, vars] : op.outputs) {
    if (std::find(vars.begin(), vars.end(), var) != vars.end()) return true;
  }
  return false;
}

bool IsUpdate(const OpDesc& op) {
  return op.role == OpRole::kOptimize && op.origin.kind == OpOrigin::Kind::kUpdateOf;
}

absl::StatusOr<Update> DescribeUpdate(const Block& block, int index) {
  const std::vector<OpDesc>& ops = block.ops();
  const OpDesc& op = ops[index];
  Update u;
  u.op = index;
  u.param = op.origin.var;
  u.grad = op.Input("Grad");
  const VarDesc* param = block.FindVar(u.param);
  const VarDesc* grad = block.FindVar(u.grad);
  if (param == nullptr || grad == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("update op '", op.type, "' (#", index,
                                                      ") of '", u.param,
                                                      "' has no declared parameter or Grad"));
  }
  u.sparse = grad->kind == VarKind::kSelectedRows;
  u.bytes = KnownBytes(*param);
  bool all_host = true, any = false;
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    if (i < index && Writes(ops[i], u.grad)) u.ready = i;
    // Generated ops (gradients, updates) follow the user's ops they derive from.
    if (ops[i].origin.kind != OpOrigin::Kind::kUser || !Reads(ops[i], u.param)) continue;
    if (!any) u.place = ops[i].op_device;
    any = true;
    all_host &= ops[i].op_device == "cpu";
  }
  u.shared = any && all_host;
  if (u.ready < 0) {
    return absl::FailedPreconditionError(absl::StrCat("gradient '", u.grad, "' of '", u.param,
                                                      "' is not computed before its update '",
                                                      op.type, "' (#", index, ")"));
  }
  if (u.sparse && !u.shared) {
    return absl::UnimplementedError(absl::StrCat(
        "data parallel: parameter '", u.param, "' has a sparse gradient but is read on '",
        u.place.empty() ? "the default place" : u.place,
        "': replicated parameters need dense gradients; put its lookups under "
        "device_guard(\"cpu\") to share it across the replicas"));
  }
  for (const auto& [arg, vars] : op.outputs) {
    for (const std::string& v : vars) {
      const VarDesc* d = block.FindVar(v);
      if (d != nullptr && d->persistable) u.state.push_back(v);
    }
  }
  return u;
}

// A collective op of rank `rank`.
OpDesc Collective(const std::string& type, std::vector<std::string> x, std::vector<std::string> out,
                  const ReplicateOptions& o, int rank) {
  OpDesc op;
  op.type = type;
  op.inputs["X"] = std::move(x);
  op.outputs["Out"] = std::move(out);
  op.attrs["ring_id"] = o.ring_id;
  op.attrs["nranks"] = static_cast<int64_t>(o.nranks);
  op.attrs["rank"] = static_cast<int64_t>(rank);
  op.role = OpRole::kBackward;
  return op;
}

struct Bucket {
  std::string place;
  std::vector<const Update*> members;
  int64_t bytes = 0;
  int after = -1;  // insert after this op: the one completing its last gradient
};

// Dense gradients in buckets, by place, in the order they become ready.
std::vector<Bucket> MakeBuckets(const std::vector<Update>& updates, int64_t bucket_bytes) {
  std::vector<const Update*> dense;
  for (const Update& u : updates) {
    if (!u.sparse) dense.push_back(&u);
  }
  std::stable_sort(dense.begin(), dense.end(),
                   [](const Update* a, const Update* b) { return a->ready < b->ready; });
  std::vector<Bucket> closed;
  std::map<std::string, Bucket> open;
  for (const Update* u : dense) {
    Bucket& b = open[u->place];
    b.place = u->place;
    b.members.push_back(u);
    b.bytes += u->bytes;
    b.after = u->ready;
    if (b.bytes >= bucket_bytes) {
      closed.push_back(std::move(b));
      open.erase(u->place);
    }
  }
  for (auto& [place, b] : open) closed.push_back(std::move(b));
  std::stable_sort(closed.begin(), closed.end(),
                   [](const Bucket& a, const Bucket& b) { return a.after < b.after; });
  return closed;
}

// `program` with `inserted` ops after the given positions (in order) and
// without the `dropped` ones; op origins renumbered.
Program Rebuild(const Program& program, const std::multimap<int, OpDesc>& inserted,
                const std::set<int>& dropped) {
  const std::vector<OpDesc>& ops = program.block().ops();
  std::vector<int> new_index(ops.size(), -1);
  std::vector<OpDesc> out;
  auto [first, first_end] = inserted.equal_range(-1);  // before every op
  for (auto it = first; it != first_end; ++it) out.push_back(it->second);
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    if (!dropped.count(i)) {
      new_index[i] = static_cast<int>(out.size());
      out.push_back(ops[i]);
    }
    auto [begin, end] = inserted.equal_range(i);
    for (auto it = begin; it != end; ++it) out.push_back(it->second);
  }
  for (OpDesc& op : out) {
    if (op.origin.op >= 0 && op.origin.op < static_cast<int>(ops.size())) {
      op.origin.op = new_index[op.origin.op];
    }
  }
  Program result = program;
  result.block().mutable_ops() = std::move(out);
  return result;
}

Program RankMain(const Program& main, const std::vector<Update>& updates,
                 const std::vector<Bucket>& buckets, const ReplicateOptions& o, int rank) {
  const double scale = 1.0 / o.nranks;
  std::multimap<int, OpDesc> inserted;
  std::set<int> dropped;
  for (const Bucket& b : buckets) {
    std::vector<std::string> grads;
    for (const Update* u : b.members) grads.push_back(u->grad);
    OpDesc op = Collective("c_allreduce_sum", grads, grads, o, rank);
    op.attrs["scale"] = scale;
    op.op_device = b.place;
    op.origin = {OpOrigin::Kind::kUpdateOf, -1, b.members[0]->param};
    inserted.emplace(b.after, std::move(op));
  }
  Program out = main;
  for (const Update& u : updates) {
    if (u.shared && rank != 0 && !o.tables_per_process) dropped.insert(u.op);
    if (!u.sparse) continue;
    const std::string gathered = u.grad + kGatheredSuffix;
    VarDesc v = *main.block().FindVar(u.grad);
    v.name = gathered;
    out.block().SetVar(v);
    OpDesc op = Collective("c_allgather", {u.grad}, {gathered}, o, rank);
    op.attrs["scale"] = scale;
    op.op_device = "cpu";
    inserted.emplace(u.ready, std::move(op));
    out.block().mutable_ops()[u.op].inputs["Grad"] = {gathered};
  }
  return Rebuild(out, inserted, dropped);
}

Program RankStartup(const Program& startup, const std::vector<Update>& updates,
                    const std::set<std::string>& shared, const ReplicateOptions& o, int rank) {
  std::set<int> dropped;
  const std::vector<OpDesc>& ops = startup.block().ops();
  for (int i = 0; rank != 0 && !o.tables_per_process && i < static_cast<int>(ops.size()); ++i) {
    bool only_shared = !ops[i].outputs.empty();
    for (const auto& [arg, vars] : ops[i].outputs) {
      for (const std::string& v : vars) only_shared &= shared.count(v) > 0;
    }
    if (only_shared) dropped.insert(i);
  }
  std::multimap<int, OpDesc> inserted;
  const int last = static_cast<int>(ops.size()) - 1;
  for (const Update& u : updates) {
    if (u.shared && !o.tables_per_process) continue;
    OpDesc op = Collective("c_broadcast", {u.param}, {u.param}, o, rank);
    op.attrs["root"] = int64_t{0};
    if (u.shared) op.op_device = "cpu";
    op.origin = {OpOrigin::Kind::kStateOf, -1, u.param};
    op.role = OpRole::kForward;
    inserted.emplace(last, std::move(op));
  }
  return Rebuild(startup, inserted, dropped);
}

}  // namespace

absl::StatusOr<ReplicatedPrograms> ReplicateForDataParallel(const Program& main,
                                                            const Program& startup,
                                                            const ReplicateOptions& options) {
  if (options.nranks < 1 || options.bucket_bytes < 1) {
    return absl::InvalidArgumentError(absl::StrCat("data parallel: nranks ", options.nranks,
                                                   " and bucket_bytes ", options.bucket_bytes,
                                                   " must be >= 1"));
  }
  std::vector<Update> updates;
  const std::vector<OpDesc>& ops = main.block().ops();
  for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
    if (ops[i].type == "check_finite_and_unscale") {
      // Each rank would decide alone whether to skip a step.
      return absl::UnimplementedError(
          "data parallel: dynamic loss scaling (float16 AMP) is not supported across replicas "
          "yet; train in bfloat16, which needs no loss scaling");
    }
    if (!IsUpdate(ops[i])) continue;
    ASSIGN_OR_RETURN(Update u, DescribeUpdate(main.block(), i));
    updates.push_back(std::move(u));
  }
  if (updates.empty()) {
    return absl::FailedPreconditionError(
        "data parallel: the program has no update op (build it with an optimizer's Minimize)");
  }
  ReplicatedPrograms r;
  std::set<std::string> shared;
  for (const Update& u : updates) {
    if (u.shared && !options.tables_per_process) shared.insert(u.state.begin(), u.state.end());
  }
  r.shared.assign(shared.begin(), shared.end());
  const std::vector<Bucket> buckets = MakeBuckets(updates, options.bucket_bytes);
  for (const Bucket& b : buckets) {
    r.buckets.emplace_back();
    for (const Update* u : b.members) r.buckets.back().push_back(u->grad);
  }
  for (int rank = 0; rank < options.nranks; ++rank) {
    r.main.push_back(RankMain(main, updates, buckets, options, rank));
    r.startup.push_back(RankStartup(startup, updates, shared, options, rank));
  }
  return r;
}

}  // namespace tandem
