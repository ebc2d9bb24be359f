#include "framework/estimate/memory_estimate.h"

#include <unistd.h>

#include <algorithm>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/device/device_registry.h"
#include "framework/estimate/memory_policy.h"
#include "framework/estimate/memory_walk.h"
#include "framework/kernel/eager.h"
#include "framework/memory/allocator.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/op/op_schema.h"
#include "framework/placement/copy_rule.h"
#include "framework/placement/placement_passes.h"

namespace tandem {
namespace {

// What the walk knows of a variable's value: dtype, shape, sparse.
struct Meta {
  DataType dtype = DataType::kFloat32;
  Shape shape;
  bool selected_rows = false;
};

bool FullyKnown(const Shape& s) {
  for (int64_t d : s.dims()) {
    if (d < 0) return false;
  }
  return true;
}

int64_t DenseBytes(DataType dtype, const Shape& shape) {
  absl::StatusOr<int64_t> n = shape.NumElements();
  if (!n.ok()) return 0;
  const int64_t size = static_cast<int64_t>(SizeOf(dtype));
  return *n > INT64_MAX / size ? INT64_MAX : *n * size;
}

// -1 dims as 1: the lower bound of an unknown size.
Shape AtLeastOne(const Shape& s) {
  std::vector<int64_t> dims(s.dims().begin(), s.dims().end());
  for (int64_t& d : dims) d = std::max<int64_t>(d, 1);
  return Shape(dims);
}

// A value of `bytes` as KernelDef::Scratch sees it: a SelectedRows value's
// first dim is the rows it holds.
TensorMeta ScratchMeta(TensorMeta m, int64_t bytes) {
  if (!m.selected_rows || m.shape.rank() == 0) return m;
  std::vector<int64_t> dims(m.shape.dims().begin(), m.shape.dims().end());
  int64_t row = static_cast<int64_t>(SizeOf(m.dtype));
  for (size_t k = 1; k < dims.size(); ++k) row *= std::max<int64_t>(dims[k], 1);
  dims[0] = bytes / std::max<int64_t>(row, 1);
  m.shape = Shape(dims);
  return m;
}

// The name of op #`index`'s scratch in the estimate ("conv2d#12 scratch").
std::string ScratchName(const std::string& type, int index) {
  return absl::StrCat(type, "#", index, " scratch");
}

// Values of small host tensors known before the program runs: an op's
// output when all its inputs are known (fill_constant, then shape, slice,
// ...), computed on the CPU with RunOpEager, so that shape inference can read
// the HostMemory values an output's shape depends on (crop_tensor's Shape).
class KnownValues {
 public:
  explicit KnownValues(const Block& block);
  // The value `var` has when op `reader` reads it, or nullptr if unknown.
  const Tensor* Get(const std::string& var, int reader, int depth = 0);

 private:
  static constexpr int64_t kMaxElements = 4096;  // per value: evaluation stays cheap
  static constexpr int kMaxDepth = 8;
  int Writer(const std::string& var, int before) const;
  const Block& block_;
  absl::flat_hash_map<std::string, std::vector<int>> writers_;          // ascending
  std::map<std::pair<std::string, int>, std::optional<Tensor>> cache_;  // (var, writer)
};

KnownValues::KnownValues(const Block& block) : block_(block) {
  for (int i = 0; i < static_cast<int>(block.ops().size()); ++i) {
    for (const std::string& v : ArgumentVars(block.ops()[i].outputs)) writers_[v].push_back(i);
  }
}

int KnownValues::Writer(const std::string& var, int before) const {
  auto it = writers_.find(var);
  if (it == writers_.end()) return -1;
  auto w = std::lower_bound(it->second.begin(), it->second.end(), before);
  return w == it->second.begin() ? -1 : *std::prev(w);
}

const Tensor* KnownValues::Get(const std::string& var, int reader, int depth) {
  const int writer = Writer(var, reader);
  if (writer < 0 || depth > kMaxDepth) return nullptr;  // fed, persistable: not known
  auto [it, inserted] = cache_.try_emplace({var, writer});
  if (!inserted) return it->second.has_value() ? &*it->second : nullptr;
  const OpDesc& op = block_.ops()[writer];
  if (op.role == OpRole::kCopy) {
    const Tensor* source = Get(op.Input("X"), writer, depth + 1);
    if (source != nullptr) cache_[{var, writer}] = *source;
    return source == nullptr ? nullptr : &*cache_[{var, writer}];
  }
  const VarDesc* out = block_.FindVar(var);
  absl::StatusOr<int64_t> n =
      out == nullptr ? absl::StatusOr<int64_t>(-1) : out->shape.NumElements();
  if (!n.ok() || *n < 0 || *n > kMaxElements || !FullyKnown(out->shape)) return nullptr;
  EagerInputs inputs;
  for (const auto& [arg, vars] : op.inputs) {
    for (const std::string& v : vars) {
      const Tensor* t = Get(v, writer, depth + 1);
      if (t == nullptr) return nullptr;
      inputs[arg].push_back(Variable(*t));
    }
  }
  OpDesc eager = op;
  eager.op_device.clear();
  absl::StatusOr<EagerOutputs> outputs = RunOpEager(eager, CPUPlace(), inputs);
  if (!outputs.ok()) return nullptr;
  for (const auto& [arg, vars] : op.outputs) {
    auto produced = outputs->find(arg);
    for (size_t k = 0; produced != outputs->end() && k < vars.size() && k < produced->second.size();
         ++k) {
      const Tensor* t = produced->second[k].data_tensor();
      if (t != nullptr && t->place().is_host()) cache_[{vars[k], writer}] = *t;
    }
  }
  auto done = cache_.find({var, writer});
  return done != cache_.end() && done->second.has_value() ? &*done->second : nullptr;
}

// The dtype, shape and sparsity of each variable as a walk in program order
// reaches it: declared, with fed shapes, refined by shape inference.
class MetaResolver {
 public:
  MetaResolver(const Block& block, const std::map<std::string, Shape>& feed_shapes,
               KnownValues* known)
      : block_(block), feed_shapes_(feed_shapes), known_(known) {}

  Meta Of(const std::string& var);
  // Infers op `i`'s outputs from what is known of its inputs.
  void InferOutputs(int i);
  void Set(const std::string& var, const Meta& m) { metas_[var] = m; }
  // Bytes of `var` written by `op` (a SelectedRows value: one row per id of
  // the op's integer input); unknown dims count as 1 and are noted.
  int64_t OutputBytes(const OpDesc& op, const std::string& var);
  // Bytes of `var`'s value as known now (dense; unknown dims noted).
  int64_t Bytes(const std::string& var);
  const std::set<std::string>& unknown() const { return unknown_; }

 private:
  Meta Declared(const std::string& var) const;

  const Block& block_;
  const std::map<std::string, Shape>& feed_shapes_;
  KnownValues* known_;
  absl::flat_hash_map<std::string, Meta> metas_;
  std::set<std::string> unknown_;
};

// What the program declares of `var` (`d`, nullptr if undeclared), with its fed shape.
Meta DeclaredMeta(const VarDesc* d, const std::string& var,
                  const std::map<std::string, Shape>& feed_shapes) {
  Meta m;
  if (d != nullptr) m = {d->dtype, d->shape, d->kind == VarKind::kSelectedRows};
  auto fed = feed_shapes.find(var);
  if (fed != feed_shapes.end()) m.shape = fed->second;
  return m;
}

Meta MetaResolver::Declared(const std::string& var) const {
  return DeclaredMeta(block_.FindVar(var), var, feed_shapes_);
}

Meta MetaResolver::Of(const std::string& var) {
  auto it = metas_.find(var);
  if (it != metas_.end()) return it->second;
  return metas_[var] = Declared(var);
}

int64_t MetaResolver::Bytes(const std::string& var) {
  const Meta m = Of(var);
  if (!FullyKnown(m.shape)) unknown_.insert(var);
  return DenseBytes(m.dtype, AtLeastOne(m.shape));
}

// Shape inference with the shapes known so far, so that -1 dims of the
// declared variables take the feed shapes, and with the known values of
// small integer inputs when the shapes alone leave dims open; declared
// shapes where it cannot.
void MetaResolver::InferOutputs(int i) {
  const OpDesc& op = block_.ops()[i];
  std::map<std::string, std::vector<TensorMeta>> inputs;
  for (const auto& [arg, vars] : op.inputs) {
    for (const std::string& v : vars) {
      const Meta m = Of(v);
      inputs[arg].push_back({m.dtype, m.shape, m.selected_rows});
    }
  }
  for (const auto& [arg, vars] : op.outputs) {
    for (const std::string& v : vars) metas_[v] = Declared(v);
  }
  absl::StatusOr<const OpSchema*> schema = OpRegistry::Global().Find(op.type);
  if (!schema.ok() || !(*schema)->infer_shape()) return;
  // Takes the fully known inferred shapes; true if every output got one.
  auto infer = [&](std::map<std::string, std::vector<const Tensor*>> values) {
    InferShapeContext ctx(op, inputs, std::move(values));
    if (!(*schema)->infer_shape()(&ctx).ok()) return false;
    bool all = true;
    for (const auto& [arg, vars] : op.outputs) {
      auto it = ctx.outputs().find(arg);
      for (size_t k = 0; k < vars.size(); ++k) {
        const bool known =
            it != ctx.outputs().end() && k < it->second.size() && FullyKnown(it->second[k].shape);
        if (known) {
          metas_[vars[k]] = {it->second[k].dtype, it->second[k].shape, it->second[k].selected_rows};
        }
        all &= known;
      }
    }
    return all;
  };
  if (infer({})) return;
  std::map<std::string, std::vector<const Tensor*>> values;
  for (const auto& [arg, vars] : op.inputs) {
    for (size_t k = 0; k < vars.size(); ++k) {
      const DataType t = inputs[arg][k].dtype;
      const bool integer = t == DataType::kInt32 || t == DataType::kInt64;
      values[arg].push_back(integer ? known_->Get(vars[k], i) : nullptr);
    }
  }
  infer(std::move(values));
}

// A SelectedRows value holds one row per id: the producer's integer input.
int64_t MetaResolver::OutputBytes(const OpDesc& op, const std::string& var) {
  const Meta m = Of(var);
  if (!FullyKnown(m.shape)) unknown_.insert(var);
  const Shape shape = AtLeastOne(m.shape);
  if (!m.selected_rows || shape.rank() == 0 || shape.dim(0) == 0) {
    return DenseBytes(m.dtype, shape);
  }
  for (const std::string& in : ArgumentVars(op.inputs)) {
    const Meta ids = Of(in);
    if (ids.dtype != DataType::kInt64 && ids.dtype != DataType::kInt32) continue;
    absl::StatusOr<int64_t> rows = AtLeastOne(ids.shape).NumElements();
    if (rows.ok()) return DenseBytes(m.dtype, shape) / shape.dim(0) * *rows;
  }
  return DenseBytes(m.dtype, shape);
}

// The placed program as the memory walk sees it (memory_walk.h), resolving
// the metas in the order the executor meets the values: residents
// (persistables, feeds, staging buffers, folded constants), then each op.
class MemoryProgramBuilder {
 public:
  MemoryProgramBuilder(const PlacedProgram& placed, const MemoryEstimateOptions& options,
                       const std::vector<Place>& places, MetaResolver* metas)
      : placed_(placed), block_(placed.program.block()), options_(options), metas_(metas) {
    program_.places = places;
  }

  MemoryProgram Build();
  const std::vector<std::string>& names() const { return names_; }

 private:
  int Id(const std::string& var);
  int Slot(const Place& place) const {
    return static_cast<int>(
        std::lower_bound(program_.places.begin(), program_.places.end(), place) -
        program_.places.begin());
  }
  void AddResidents();
  // Host->device copies to a device with its own pinned memory of values no
  // op of the program writes before them (feeds, persistables): the plan
  // keeps a staging buffer for each (the executor's UploadSource).
  void StageUploads();
  void AddOp(int i);
  // What the metas say now of these arguments (unknown dims as 1).
  ArgMetas ArgMetasOf(const std::map<std::string, std::vector<std::string>>& args);

  const PlacedProgram& placed_;
  const Block& block_;
  const MemoryEstimateOptions& options_;
  MetaResolver* metas_;
  MemoryProgram program_;
  std::map<std::string, int> ids_;
  std::vector<std::string> names_;
  std::set<std::string> folded_;
  std::set<int> staged_;        // copies through a staging buffer
  std::vector<bool> valued_;    // per variable: has a value when the op being added runs
  std::vector<int64_t> bytes_;  // per variable: its value's bytes then
  std::vector<std::vector<int>> reads_, writes_;  // per op: variables
};

int MemoryProgramBuilder::Id(const std::string& var) {
  auto [it, inserted] = ids_.try_emplace(var, static_cast<int>(names_.size()));
  if (inserted) {
    names_.push_back(var);
    const VarDesc* d = block_.FindVar(var);
    program_.vars.push_back({d != nullptr && d->persistable, false, folded_.count(var) > 0});
    valued_.push_back(false);
    bytes_.push_back(0);
  }
  return it->second;
}

void MemoryProgramBuilder::AddResidents() {
  std::set<std::string> used;
  for (const OpDesc& op : block_.ops()) {
    for (const std::string& v : ArgumentVars(op.inputs)) used.insert(v);
    for (const std::string& v : ArgumentVars(op.outputs)) used.insert(v);
  }
  const int host = Slot(CPUPlace());
  for (const auto& [var, place] : placed_.initial_places) {
    const VarDesc* d = block_.FindVar(var);
    if (d == nullptr || !d->persistable || !used.count(var)) continue;
    program_.residents.push_back(
        {Id(var), Slot(place), metas_->Bytes(var),
         d->is_parameter ? MemoryCategory::kParameter : MemoryCategory::kState});
  }
  for (const std::string& f : options_.feeds) {
    program_.residents.push_back({Id(f), host, metas_->Bytes(f), MemoryCategory::kFeed, -1,
                                  /*held=*/true});  // the caller's
  }
  StageUploads();
  for (int i = 0; i < static_cast<int>(block_.ops().size()); ++i) {
    const OpDesc& op = block_.ops()[i];
    if (!folded_.count(op.Output("Out"))) continue;
    metas_->InferOutputs(i);
    const Place where = placed_.kernels[i] != nullptr
                            ? ArgumentPlace(*placed_.kernels[i], "Out", placed_.places[i])
                            : placed_.places[i];
    program_.residents.push_back({Id(op.Output("Out")), Slot(where),
                                  metas_->OutputBytes(op, op.Output("Out")),
                                  MemoryCategory::kConstant, i, /*held=*/true});  // across runs
  }
  for (const MemoryProgram::Resident& r : program_.residents) {
    if (!r.bound) continue;
    valued_[r.var] = true;
    bytes_[r.var] = r.bytes;
  }
}

void MemoryProgramBuilder::StageUploads() {
  std::set<std::string> written;
  for (int i = 0; i < static_cast<int>(block_.ops().size()); ++i) {
    const OpDesc& op = block_.ops()[i];
    const std::optional<CopyStep>& c = placed_.table[i].copy;
    if (c.has_value() && !c->to.is_host() &&
        UploadIsStaged(options_.staged_upload_devices.count(c->to) > 0,
                       written.count(c->source) > 0)) {
      staged_.insert(i);
      program_.residents.push_back({Id(c->output), Slot(CPUPlace()), metas_->Bytes(c->source),
                                    MemoryCategory::kStaging, i, /*held=*/false,
                                    /*bound=*/false});  // kept across runs
    }
    for (const std::string& v : ArgumentVars(op.outputs)) written.insert(v);
  }
}

ArgMetas MemoryProgramBuilder::ArgMetasOf(
    const std::map<std::string, std::vector<std::string>>& args) {
  ArgMetas out;
  for (const auto& [arg, vars] : args) {
    for (const std::string& v : vars) {
      const Meta m = metas_->Of(v);
      out[arg].push_back(ScratchMeta({m.dtype, AtLeastOne(m.shape), m.selected_rows},
                                     ids_.count(v) ? bytes_[ids_.at(v)] : 0));
    }
  }
  return out;
}

void MemoryProgramBuilder::AddOp(int i) {
  const OpDesc& op = block_.ops()[i];
  MemoryProgram::Op& m = program_.ops.emplace_back();
  std::vector<int>& reads = reads_.emplace_back();
  std::vector<int>& writes = writes_.emplace_back();
  for (const std::string& v : ArgumentVars(op.inputs)) reads.push_back(Id(v));
  for (const std::string& v : ArgumentVars(op.outputs)) writes.push_back(Id(v));
  if (const std::optional<CopyStep>& c = placed_.table[i].copy; c.has_value()) {
    m.copy = true;
    m.copy_source = Id(c->source);
    if (!valued_[m.copy_source]) m.unbound_bytes = metas_->OutputBytes(op, c->output);
    metas_->Set(c->output, metas_->Of(c->source));
    // The copy stream reads a device->host source until the run ends; a
    // host->device copy reads pinned sources in place (staged ones are
    // snapshotted into the staging buffer).
    m.keep_source = c->to.is_host() ? !options_.in_order : !staged_.count(i);
    m.outputs.push_back({Id(c->output), Slot(c->to)});
    const int out = m.outputs[0].var;
    bytes_[out] = valued_[m.copy_source] ? bytes_[m.copy_source] : m.unbound_bytes;
    valued_[out] = true;
    return;
  }
  ArgMetas scratch_inputs;
  const KernelDef& def = placed_.kernels[i]->def;
  if (def.declares_scratch() || def.declares_host_staging()) scratch_inputs = ArgMetasOf(op.inputs);
  metas_->InferOutputs(i);
  std::set<std::string> done;
  for (const auto& [arg, vars] : op.outputs) {
    for (const std::string& v : vars) {
      if (!done.insert(v).second || folded_.count(v)) continue;
      const std::string in_arg = arg.size() > 3 && arg.compare(arg.size() - 3, 3, "Out") == 0
                                     ? arg.substr(0, arg.size() - 3)
                                     : "";
      const std::string in_place = op.role == OpRole::kOptimize ? op.Input(in_arg) : "";
      if (!in_place.empty() && ids_.count(in_place) && valued_[ids_[in_place]]) {
        m.outputs.push_back({Id(v), 0, 0, ids_[in_place]});  // updated in place
        continue;
      }
      const Place where = ArgumentPlace(*placed_.kernels[i], arg, placed_.places[i]);
      m.outputs.push_back({Id(v), Slot(where), metas_->OutputBytes(op, v)});
    }
  }
  for (const MemoryProgram::Output& out : m.outputs) {
    valued_[out.var] = true;
    bytes_[out.var] = out.in_place >= 0 ? bytes_[out.in_place] : out.bytes;
  }
  const ArgMetas scratch_outputs =
      def.declares_scratch() || def.declares_host_staging() ? ArgMetasOf(op.outputs) : ArgMetas();
  if (def.declares_host_staging()) {
    const int64_t bytes = def.HostStagingBytes(op, scratch_inputs, scratch_outputs);
    if (bytes > 0) {
      program_.residents.push_back({Id(absl::StrCat(op.type, "#", i, " host staging")),
                                    Slot(CPUPlace()), bytes, MemoryCategory::kKernelStaging, i,
                                    /*held=*/true, /*bound=*/false});  // the kernel's, across runs
    }
  }
  if (def.declares_scratch()) {
    m.scratch_bytes = def.ScratchBytes(op, scratch_inputs, scratch_outputs);
    m.scratch_var = Id(ScratchName(op.type, i));
    m.scratch_place = Slot(placed_.places[i]);
  }
}

MemoryProgram MemoryProgramBuilder::Build() {
  folded_ = FoldedConstants(block_);
  AddResidents();
  for (int i = 0; i < static_cast<int>(block_.ops().size()); ++i) AddOp(i);
  for (const std::string& f : options_.fetches) {
    program_.fetches.push_back(Id(f));
    program_.vars[program_.fetches.back()].fetched = true;
  }
  program_.pipelined = !options_.in_order;
  SetUses(reads_, writes_, &program_);
  return std::move(program_);
}

// Fills `p`'s breakdown and largest values from what is live at its peak.
void Summarise(const MemoryWalkResult& walk, const std::vector<std::string>& names, int slot,
               PlaceMemory* p) {
  for (const MemoryWalkResult::Value& v : walk.values) {
    if (v.place != slot || !v.live_at(p->peak_op)) continue;
    int64_t* buckets[] = {&p->parameters, &p->optimizer_state, &p->constants,
                          &p->feeds,      &p->staging,         &p->intermediates,
                          &p->scratch,    &p->staging};  // kernels' staging is staging
    *buckets[static_cast<int>(v.category)] += v.bytes;
    p->largest.push_back({names[v.var], v.bytes});
  }
  std::stable_sort(p->largest.begin(), p->largest.end(),
                   [](const LiveValue& a, const LiveValue& b) { return a.bytes > b.bytes; });
}

}  // namespace

const PlaceMemory* MemoryEstimate::Find(const Place& place) const {
  for (const PlaceMemory& p : places) {
    if (p.place == place) return &p;
  }
  return nullptr;
}

int64_t MemoryEstimate::PeakBytes(const Place& place) const {
  const PlaceMemory* p = Find(place);
  return p == nullptr ? 0 : p->peak_bytes;
}

std::string MemoryEstimate::ToString() const {
  std::string out;
  for (const PlaceMemory& p : places) {
    absl::StrAppend(&out, "memory estimate ", p.place.ToString(), ": peak ",
                    ShortBytes(p.peak_bytes), " (parameters ", ShortBytes(p.parameters),
                    ", optimizer state ", ShortBytes(p.optimizer_state), ", constants ",
                    ShortBytes(p.constants), ", feeds ", ShortBytes(p.feeds), ", staging ",
                    ShortBytes(p.staging), ", intermediates ", ShortBytes(p.intermediates));
    if (p.scratch > 0) absl::StrAppend(&out, ", scratch ", ShortBytes(p.scratch));
    absl::StrAppend(&out, ")");
    absl::StrAppend(&out, " at ", p.peak_at);
    if (p.pipelined_peak_bytes > p.peak_bytes) {
      absl::StrAppend(&out, "; two runs in flight: ", ShortBytes(p.pipelined_peak_bytes), " (",
                      p.pipelined_peak_at, ")");
    }
    std::vector<std::string> largest;
    for (size_t k = 0; k < p.largest.size() && k < 3; ++k) {
      largest.push_back(absl::StrCat(p.largest[k].var, " ", ShortBytes(p.largest[k].bytes)));
    }
    if (!largest.empty()) absl::StrAppend(&out, "; largest: ", absl::StrJoin(largest, ", "));
    absl::StrAppend(&out, "\n");
  }
  if (!unknown_vars.empty()) {
    absl::StrAppend(&out, "memory estimate is a lower bound: unknown dims (counted as 1) in ",
                    absl::StrJoin(unknown_vars, ", "), "\n");
  }
  return out;
}

absl::StatusOr<MemoryEstimate> EstimateMemory(const PlacedProgram& placed,
                                              const MemoryEstimateOptions& options) {
  MemoryEstimate estimate;
  std::set<Place> places(placed.places.begin(), placed.places.end());
  for (const auto& [var, place] : placed.initial_places) places.insert(place);
  places.insert(CPUPlace());
  for (const Place& p : places) estimate.places.push_back({p});
  KnownValues known(placed.program.block());
  MetaResolver metas(placed.program.block(), options.feed_shapes, &known);
  const std::vector<Place> slots(places.begin(), places.end());
  MemoryProgramBuilder builder(placed, options, slots, &metas);
  const MemoryProgram program = builder.Build();
  const std::vector<std::string>& names = builder.names();
  const MemoryWalkResult walk = WalkMemory(program);
  for (int k = 0; k < walk.fetch_values_begin; ++k) {
    const MemoryWalkResult::Value& v = walk.values[k];
    const bool resident = k < static_cast<int>(program.residents.size());
    estimate.allocations.push_back({resident ? program.residents[k].op : v.born, names[v.var],
                                    slots[v.place], v.bytes, resident});
  }
  for (const MemoryWalkResult::Value& v : walk.values) {
    const bool persistable =
        v.category == MemoryCategory::kParameter || v.category == MemoryCategory::kState;
    if (persistable && v.live_at(-1)) estimate.places[v.place].persistables_at_start += v.bytes;
  }
  estimate.unknown_vars.assign(metas.unknown().begin(), metas.unknown().end());
  const int n = static_cast<int>(placed.program.block().ops().size());
  for (int slot = 0; slot < static_cast<int>(slots.size()); ++slot) {
    PlaceMemory& p = estimate.places[slot];
    p.live_after_alloc = walk.live_after_alloc[slot];
    const MemoryWalkResult::Peak& peak = walk.peak[slot];
    if (!peak.seen) continue;
    p.pipelined_peak_bytes =
        walk.pipelined.empty() ? peak.bytes : std::max(peak.bytes, walk.pipelined[slot].bytes);
    p.peak_bytes = peak.bytes;
    p.peak_op = peak.op;
    auto op_at = [&](int op) {
      return op < 0    ? std::string("the start")
             : op >= n ? std::string("the end (fetches)")
                       : absl::StrCat("#", op, " '", placed.program.block().ops()[op].type, "'");
    };
    p.peak_at = op_at(p.peak_op);
    if (p.pipelined_peak_bytes > p.peak_bytes) {
      const MemoryWalkResult::PipelinedPeak& pp = walk.pipelined[slot];
      p.pipelined_peak_at =
          absl::StrCat(op_at(pp.op), " of one run beside ", op_at(pp.other_op), " of the next");
    }
    Summarise(walk, names, slot, &p);
  }
  return estimate;
}

std::string DescribeVar(const Block& block, const std::string& var) {
  const VarDesc* d = block.FindVar(var);
  if (d == nullptr) return absl::StrCat("variable '", var, "'");
  return absl::StrCat("variable '", var, "', ", DataTypeName(d->dtype), d->shape.ToString());
}

std::string OutputArg(const OpDesc& op, const std::string& var) {
  for (const auto& [name, vars] : op.outputs) {
    if (std::count(vars.begin(), vars.end(), var)) return name;
  }
  return "?";
}

// "op 'fill_constant' (#0) output 'Out' (variable 'x', float32[2, 2]) on sim:0: the plan would
// hold ... requested N bytes ... with M bytes planned before, more than the limit ...".
absl::Status Overflow(const PlacedProgram& placed, const MemoryEstimate::Allocation& a,
                      int64_t before, int64_t capacity) {
  const Block& block = placed.program.block();
  const std::string what =
      a.op >= 0
          ? absl::StrCat("op '", block.ops()[a.op].type, "' (#", a.op, ") output '",
                         OutputArg(block.ops()[a.op], a.var), "' (", DescribeVar(block, a.var), ")")
          : absl::StrCat(DescribeVar(block, a.var), ", resident before the run,");
  const std::string hint =
      a.place.is_host()
          ? "Hint: the host cannot hold it; use a smaller batch or shape"
          : "Hint: run this op under device_guard(\"cpu\"), let auto placement keep the "
            "place within a memory budget (MakeAutoPlacer), or raise the "
            "memory limit";
  return absl::ResourceExhaustedError(absl::StrCat(
      what, " on ", a.place.ToString(), ": the plan would hold an estimated ", before + a.bytes,
      " bytes (", ShortBytes(before + a.bytes), ") there: requested ", a.bytes, " bytes (",
      ShortBytes(a.bytes), ") with ", before, " bytes planned before, more than the limit ",
      capacity, " bytes (", ShortBytes(capacity), ") of ", a.place.ToString(),
      " (refused at Prepare, before anything is allocated). ", hint));
}

// The first value at which `p` exceeds `capacity`, as an error; OK if none:
// residents in creation order, then each op's allocations.
absl::Status FirstOverflow(const PlacedProgram& placed, const MemoryEstimate& estimate,
                           const PlaceMemory& p, int64_t capacity) {
  std::vector<const MemoryEstimate::Allocation*> residents;
  for (const MemoryEstimate::Allocation& a : estimate.allocations) {
    if (a.resident && a.place == p.place) residents.push_back(&a);
  }
  std::stable_sort(residents.begin(), residents.end(),
                   [](const auto* a, const auto* b) { return a->op < b->op; });
  int64_t live = 0;
  for (const MemoryEstimate::Allocation* a : residents) {
    if (live + a->bytes > capacity) return Overflow(placed, *a, live, capacity);
    live += a->bytes;
  }
  for (size_t i = 0; i < p.live_after_alloc.size(); ++i) {
    if (p.live_after_alloc[i] <= capacity) continue;
    const MemoryEstimate::Allocation* largest = nullptr;
    for (const MemoryEstimate::Allocation& a : estimate.allocations) {
      if (a.op != static_cast<int>(i) || a.resident || !(a.place == p.place)) continue;
      if (largest == nullptr || a.bytes > largest->bytes) largest = &a;
    }
    if (largest != nullptr) {
      return Overflow(placed, *largest, p.live_after_alloc[i] - largest->bytes, capacity);
    }
  }
  return absl::OkStatus();
}

std::vector<OpArgMetas> ResolveArgMetas(const Program& program,
                                        const std::map<std::string, Shape>& feed_shapes) {
  const Block& block = program.block();
  KnownValues known(block);
  MetaResolver metas(block, feed_shapes, &known);
  std::vector<OpArgMetas> out(block.ops().size());
  absl::flat_hash_map<std::string, int64_t> value_bytes;  // of each variable's latest value
  auto meta = [&](const std::string& v) {
    const Meta m = metas.Of(v);
    return TensorMeta{m.dtype, AtLeastOne(m.shape), m.selected_rows};
  };
  for (size_t i = 0; i < block.ops().size(); ++i) {
    const OpDesc& op = block.ops()[i];
    for (const auto& [arg, vars] : op.inputs) {
      for (const std::string& v : vars) {
        out[i].inputs[arg].push_back(meta(v));
        auto known_bytes = value_bytes.find(v);
        out[i].bytes[v] = known_bytes != value_bytes.end() ? known_bytes->second : metas.Bytes(v);
      }
    }
    metas.InferOutputs(static_cast<int>(i));
    for (const auto& [arg, vars] : op.outputs) {
      for (const std::string& v : vars) {
        out[i].outputs[arg].push_back(meta(v));
        out[i].bytes[v] = value_bytes[v] = metas.OutputBytes(op, v);
      }
    }
  }
  return out;
}

namespace {

// `args` (an op's inputs or outputs) of metas `metas` as KernelDef::Scratch
// sees them, with the bytes of the op's values.
ArgMetas ScratchMetas(const std::map<std::string, std::vector<std::string>>& args,
                      const std::map<std::string, std::vector<TensorMeta>>& metas,
                      const std::map<std::string, int64_t>& bytes) {
  ArgMetas out;
  for (const auto& [arg, vars] : args) {
    auto m = metas.find(arg);
    for (size_t k = 0; m != metas.end() && k < vars.size() && k < m->second.size(); ++k) {
      auto b = bytes.find(vars[k]);
      out[arg].push_back(ScratchMeta(m->second[k], b == bytes.end() ? 0 : b->second));
    }
  }
  return out;
}

}  // namespace

// PlacementMemory: the placer's copies and the MemoryProgramBuilder's
// program, made from per-op places and kernels with the metas resolved once.
struct PlacementMemory::Impl {
  struct Arg {
    const std::string* name;  // the argument's name
    int var;
  };
  struct Output {
    const std::string* arg;
    int var;
    int64_t bytes;
    int in_place_input = -1;  // index into the op's inputs of the value it updates
    bool allocated = true;    // not a repeat or a folded constant
  };
  struct OpInfo {
    std::vector<Arg> inputs;
    std::vector<Output> outputs;
    int folded_out = -1;  // the folded constant it makes
    int64_t folded_bytes = 0;
  };
  // A variable the placed program adds: a copy, or an op's scratch.
  struct CopyVar {
    int base;  // the program variable copied; -1: op `consumer`'s scratch
    int slot;
    int ordinal;   // how many copies of `base` to `slot` came before
    int consumer;  // the program op that reads the copy (-1: a write-back)
    int placed;    // a scratch's placed op index
  };

  Impl(const Program& program, const MemoryEstimateOptions& options,
       const std::vector<OpArgMetas>& metas);
  int Id(const std::string& name);
  int SlotOf(const Place& place) const;
  void Reset(const std::vector<Place>& places, const std::map<std::string, Place>& initial);
  // A new copy variable of `base` to `slot` for op `consumer`.
  int NewCopyVar(int base, int slot, int consumer);
  // Appends the copy op `source` -> `output` on `slot`.
  void AppendCopy(int source, int output, int slot);
  // The variable op `consumer` reads for `var` wanted on `want` (a copy).
  int Ensure(int var, int want, int consumer);
  void AppendOp(int i, const Place& place, const KernelRegistration* kernel);
  // The pinned buffer op `i`'s kernel keeps (KernelDef::HostStaging), if any.
  void AddKernelStaging(int i, int index, const KernelRegistration& kernel);
  void WriteBack();
  void Finish();
  // Whether a slot is the host's (copy_rule.h's is_host).
  auto IsHostSlot() const {
    return [this](int slot) { return places[slot].is_host(); };
  }

  const Block& block;
  const MemoryEstimateOptions options;
  std::vector<std::string> names;  // program variables
  absl::flat_hash_map<std::string, int> ids;
  std::vector<int64_t> declared_bytes;
  std::vector<bool> persistable, parameter, folded, used;
  std::vector<OpInfo> ops;
  std::vector<int> feeds, fetches;
  const std::vector<OpArgMetas>& metas;
  // Per op: the kernel its scratch was last computed for, and the bytes.
  std::vector<std::pair<const KernelRegistration*, int64_t>> scratch;

  // Per estimate.
  std::vector<Place> places;
  std::vector<bool> staged_slot;
  std::vector<CopyVar> copy_vars;  // variable names.size() + k
  std::map<std::pair<int, int>, int> copies_made;
  std::vector<int> loc;                   // per variable: slot, -1 none
  std::vector<CopyList<int, int>> valid;  // per variable: its valid copies by slot
  std::vector<bool> valued, written;
  std::vector<MemoryProgram::Resident> staging, constants;
  std::vector<std::pair<int, int>> initial;  // (variable, slot) in name order
  // program.ops, reads and writes [0, num_ops) are this estimate's; the
  // storage is kept across estimates.
  int num_ops = 0;
  std::vector<std::vector<int>> reads, writes;
  std::vector<int> renamed;
  MemoryProgram program;
  MemoryWalkResult walk;

  // The next op of the program, cleared; the variables it reads and writes go to
  // reads[num_ops - 1] and writes[num_ops - 1].
  MemoryProgram::Op& NextOp();
};

PlacementMemory::Impl::Impl(const Program& program, const MemoryEstimateOptions& options,
                            const std::vector<OpArgMetas>& metas)
    : block(program.block()), options(options), metas(metas) {
  const std::set<std::string> folded_vars = FoldedConstants(block);
  scratch.assign(block.ops().size(), {nullptr, 0});
  for (const VarDesc& v : block.vars()) Id(v.name);
  ops.resize(block.ops().size());
  for (int i = 0; i < static_cast<int>(block.ops().size()); ++i) {
    const OpDesc& op = block.ops()[i];
    OpInfo& info = ops[i];
    std::map<std::string, int> first_input;  // arg -> index of its first variable
    for (const auto& [arg, vars] : op.inputs) {
      for (const std::string& v : vars) {
        first_input.emplace(arg, static_cast<int>(info.inputs.size()));
        info.inputs.push_back({&arg, Id(v)});
      }
    }
    std::set<std::string> done;
    for (const auto& [arg, vars] : op.outputs) {
      const std::string in_arg = arg.size() > 3 && arg.compare(arg.size() - 3, 3, "Out") == 0
                                     ? arg.substr(0, arg.size() - 3)
                                     : "";
      auto in = first_input.find(in_arg);
      const int in_place =
          op.role == OpRole::kOptimize && in != first_input.end() ? in->second : -1;
      for (const std::string& v : vars) {
        auto bytes = metas[i].bytes.find(v);
        const bool allocated = done.insert(v).second && !folded_vars.count(v);
        info.outputs.push_back(
            {&arg, Id(v), bytes == metas[i].bytes.end() ? 0 : bytes->second, in_place, allocated});
      }
    }
    if (folded_vars.count(op.Output("Out"))) {
      info.folded_out = Id(op.Output("Out"));
      info.folded_bytes = metas[i].bytes.at(op.Output("Out"));
    }
  }
  for (const std::string& f : options.feeds) feeds.push_back(Id(f));
  for (const std::string& f : options.fetches) fetches.push_back(Id(f));
  for (int v = 0; v < static_cast<int>(names.size()); ++v) {
    const VarDesc* d = v < static_cast<int>(block.vars().size()) ? &block.vars()[v] : nullptr;
    const Meta m = DeclaredMeta(d, names[v], options.feed_shapes);
    declared_bytes.push_back(DenseBytes(m.dtype, AtLeastOne(m.shape)));  // MetaResolver::Bytes
    persistable.push_back(d != nullptr && d->persistable);
    parameter.push_back(d != nullptr && d->is_parameter);
    folded.push_back(folded_vars.count(names[v]) > 0);
  }
  used.assign(names.size(), false);
  for (const OpInfo& info : ops) {
    for (const Arg& a : info.inputs) used[a.var] = true;
    for (const Output& o : info.outputs) used[o.var] = true;
  }
}

int PlacementMemory::Impl::Id(const std::string& name) {
  auto [it, inserted] = ids.try_emplace(name, static_cast<int>(names.size()));
  if (inserted) names.push_back(name);
  return it->second;
}

int PlacementMemory::Impl::SlotOf(const Place& place) const {
  auto it = std::lower_bound(places.begin(), places.end(), place);
  return it == places.end() || !(*it == place) ? -1 : static_cast<int>(it - places.begin());
}

void PlacementMemory::Impl::Reset(const std::vector<Place>& op_places,
                                  const std::map<std::string, Place>& initial_places) {
  std::set<Place> set(op_places.begin(), op_places.end());
  for (const auto& [var, place] : initial_places) set.insert(place);
  set.insert(CPUPlace());
  places.assign(set.begin(), set.end());
  staged_slot.assign(places.size(), false);
  for (const Place& p : options.staged_upload_devices) {
    if (SlotOf(p) >= 0) staged_slot[SlotOf(p)] = true;
  }
  const int n = static_cast<int>(names.size());
  copy_vars.clear();
  copies_made.clear();
  loc.assign(n, -1);
  for (CopyList<int, int>& v : valid) v.Clear();
  valid.resize(n);
  valued.assign(n, false);
  written.assign(n, false);
  staging.clear();
  constants.clear();
  initial.clear();
  for (const auto& [var, place] : initial_places) {
    auto it = ids.find(var);
    if (it == ids.end()) continue;
    initial.emplace_back(it->second, SlotOf(place));
    loc[it->second] = SlotOf(place);
    // Persistables and feeds have their values before the first op.
    if (persistable[it->second] && used[it->second]) valued[it->second] = true;
  }
  for (int f : feeds) valued[f] = true;
  num_ops = 0;
  program.places = places;
  program.vars.resize(n);
  for (int v = 0; v < n; ++v) program.vars[v] = {persistable[v], false, folded[v]};
  for (int f : fetches) program.vars[f].fetched = true;
  program.fetches = fetches;
  program.residents.clear();
}

MemoryProgram::Op& PlacementMemory::Impl::NextOp() {
  if (num_ops == static_cast<int>(program.ops.size())) program.ops.emplace_back();
  if (num_ops == static_cast<int>(reads.size())) reads.emplace_back(), writes.emplace_back();
  MemoryProgram::Op& op = program.ops[num_ops];
  std::vector<MemoryProgram::Output> outputs = std::move(op.outputs);
  std::vector<int> frees = std::move(op.frees);
  op = MemoryProgram::Op();
  op.outputs = std::move(outputs);
  op.outputs.clear();
  op.frees = std::move(frees);
  reads[num_ops].clear();
  writes[num_ops].clear();
  ++num_ops;
  return op;
}

int PlacementMemory::Impl::NewCopyVar(int base, int slot, int consumer) {
  const int ordinal = copies_made[{base, slot}]++;
  copy_vars.push_back({base, slot, ordinal, consumer, -1});
  program.vars.emplace_back();
  valued.push_back(false);
  written.push_back(false);
  return static_cast<int>(names.size() + copy_vars.size()) - 1;
}

void PlacementMemory::Impl::AppendCopy(int source, int output, int slot) {
  const int index = num_ops;
  MemoryProgram::Op& op = NextOp();
  reads[index].push_back(source);
  writes[index].push_back(output);
  op.copy = true;
  op.copy_source = source;
  const int base =
      source < static_cast<int>(names.size()) ? source : copy_vars[source - names.size()].base;
  if (!valued[source]) op.unbound_bytes = declared_bytes[base];
  const bool to_host = places[slot].is_host();
  const bool staged = !to_host && UploadIsStaged(staged_slot[slot], written[source]);
  if (staged) {
    staging.push_back({output, SlotOf(CPUPlace()), declared_bytes[base], MemoryCategory::kStaging,
                       index, /*held=*/false, /*bound=*/false});
  }
  op.keep_source = to_host ? !options.in_order : !staged;
  op.outputs.push_back({output, slot});
  valued[output] = written[output] = true;
}

int PlacementMemory::Impl::Ensure(int var, int want, int consumer) {
  const int have = loc[var];
  if (have < 0) return var;
  return EnsureCopy(var, have, want, SlotOf(CPUPlace()), &valid[var], IsHostSlot(),
                    [&](int source, int /*from*/, int to) {
                      const int copy = NewCopyVar(var, to, consumer);
                      AppendCopy(source, copy, to);
                      return copy;
                    });
}

void PlacementMemory::Impl::AppendOp(int i, const Place& place, const KernelRegistration* kernel) {
  const OpInfo& info = ops[i];
  const int slot = SlotOf(place);
  const int host = SlotOf(CPUPlace());
  const bool host_args = kernel != nullptr && !kernel->def.host_memory_args().empty();
  auto arg_slot = [&](const std::string& arg) {
    return host_args && kernel->def.IsHostMemory(arg) ? host : slot;
  };
  renamed.clear();
  for (const Arg& a : info.inputs) renamed.push_back(Ensure(a.var, arg_slot(*a.name), i));
  if (info.folded_out >= 0) {
    constants.push_back({info.folded_out, arg_slot("Out"), info.folded_bytes,
                         MemoryCategory::kConstant, num_ops, /*held=*/true});  // kept across runs
    valued[info.folded_out] = true;
  }
  const int index = num_ops;
  MemoryProgram::Op& op = NextOp();
  reads[index] = renamed;
  if (kernel != nullptr && kernel->def.declares_scratch()) {
    if (scratch[i].first != kernel) {
      const OpDesc& desc = block.ops()[i];
      scratch[i] = {kernel, kernel->def.ScratchBytes(
                                desc, ScratchMetas(desc.inputs, metas[i].inputs, metas[i].bytes),
                                ScratchMetas(desc.outputs, metas[i].outputs, metas[i].bytes))};
    }
    op.scratch_bytes = scratch[i].second;
    op.scratch_var = static_cast<int>(names.size() + copy_vars.size());
    op.scratch_place = slot;
    copy_vars.push_back({-1, slot, 0, i, index});
    program.vars.emplace_back();
    valued.push_back(false);
    written.push_back(false);
  }
  if (kernel != nullptr && kernel->def.declares_host_staging()) AddKernelStaging(i, index, *kernel);
  for (const Output& o : info.outputs) {
    writes[index].push_back(o.var);
    if (!o.allocated) continue;
    if (o.in_place_input >= 0 && valued[renamed[o.in_place_input]]) {
      op.outputs.push_back({o.var, 0, 0, renamed[o.in_place_input]});  // updated in place
    } else {
      op.outputs.push_back({o.var, arg_slot(*o.arg), o.bytes});
    }
  }
  for (const Output& o : info.outputs) {
    loc[o.var] = arg_slot(*o.arg);
    valid[o.var].Clear();
    valued[o.var] = written[o.var] = true;
  }
}

void PlacementMemory::Impl::AddKernelStaging(int i, int index, const KernelRegistration& kernel) {
  const OpDesc& desc = block.ops()[i];
  const int64_t bytes =
      kernel.def.HostStagingBytes(desc, ScratchMetas(desc.inputs, metas[i].inputs, metas[i].bytes),
                                  ScratchMetas(desc.outputs, metas[i].outputs, metas[i].bytes));
  if (bytes <= 0) return;
  const int host = SlotOf(CPUPlace());
  const int var = static_cast<int>(names.size() + copy_vars.size());
  copy_vars.push_back({-1, host, 0, i, index});
  program.vars.emplace_back();
  valued.push_back(false);
  written.push_back(false);
  constants.push_back({var, host, bytes, MemoryCategory::kKernelStaging, index, /*held=*/true,
                       /*bound=*/false});  // the kernel's, across runs
}

void PlacementMemory::Impl::WriteBack() {
  const int host = SlotOf(CPUPlace());
  for (const auto& [persistable_var, home] : initial) {
    const int var = persistable_var;
    if (!persistable[var] || loc[var] < 0) continue;
    WriteBackCopy(var, loc[var], home, host, IsHostSlot(),
                  [&](int source, int /*from*/, int to, bool into_var) {
                    // The last copy's output is the persistable itself.
                    const int output = into_var ? var : NewCopyVar(var, to, -1);
                    AppendCopy(source, output, to);
                    return output;
                  });
  }
}

void PlacementMemory::Impl::Finish() {
  program.ops.resize(num_ops);
  reads.resize(num_ops);
  writes.resize(num_ops);
  std::vector<MemoryProgram::Resident>& r = program.residents;
  for (const auto& [v, slot] : initial) {
    if (!persistable[v] || !used[v]) continue;
    r.push_back({v, slot, declared_bytes[v],
                 parameter[v] ? MemoryCategory::kParameter : MemoryCategory::kState});
  }
  for (int f : feeds) {
    r.push_back({f, SlotOf(CPUPlace()), declared_bytes[f], MemoryCategory::kFeed, -1,
                 /*held=*/true});  // the caller's
  }
  r.insert(r.end(), staging.begin(), staging.end());
  r.insert(r.end(), constants.begin(), constants.end());
  program.pipelined = !options.in_order;
  SetUses(reads, writes, &program);
}

PlacementMemory::PlacementMemory(const Program& program, const MemoryEstimateOptions& options,
                                 const std::vector<OpArgMetas>& metas)
    : impl_(std::make_unique<Impl>(program, options, metas)) {}

PlacementMemory::~PlacementMemory() = default;

const MemoryWalkResult& PlacementMemory::Estimate(
    const std::vector<Place>& places, const std::vector<const KernelRegistration*>& kernels,
    const std::map<std::string, Place>& initial_places) {
  Impl& m = *impl_;
  m.Reset(places, initial_places);
  for (int i = 0; i < static_cast<int>(m.ops.size()); ++i) m.AppendOp(i, places[i], kernels[i]);
  m.WriteBack();
  m.Finish();
  m.walk = WalkMemory(m.program);
  return m.walk;
}

int PlacementMemory::Slot(const Place& place) const { return impl_->SlotOf(place); }

std::string PlacementMemory::Name(int var) const {
  const Impl& m = *impl_;
  if (var < static_cast<int>(m.names.size())) return m.names[var];
  const Impl::CopyVar& c = m.copy_vars[var - m.names.size()];
  if (c.base < 0) return ScratchName(m.block.ops()[c.consumer].type, c.placed);
  std::string name = absl::StrCat(m.names[c.base], "@", m.places[c.slot].ToString());
  if (c.ordinal > 0) absl::StrAppend(&name, "#", c.ordinal);
  return name;
}

int PlacementMemory::Consumer(int var) const {
  const Impl& m = *impl_;
  return var < static_cast<int>(m.names.size()) ? -1 : m.copy_vars[var - m.names.size()].consumer;
}

std::map<Place, int64_t> AvailableMemory(const MemoryEstimate& estimate) {
  std::map<Place, int64_t> available;
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) available[CPUPlace()] = static_cast<int64_t>(pages) * page;
  for (const PlaceMemory& p : estimate.places) {
    if (p.place.is_host()) continue;
    absl::StatusOr<Device*> device = DeviceRegistry::Global().GetDevice(p.place);
    if (!device.ok()) continue;
    const AllocatorStats stats = (*device)->allocator()->GetStats();
    if (stats.bytes_limit <= 0) continue;
    const int64_t others = std::max<int64_t>(0, stats.bytes_in_use - p.persistables_at_start);
    available[p.place] = std::max<int64_t>(0, stats.bytes_limit - others);
  }
  return available;
}

MemoryEstimateOptions PlanMemoryOptions(const std::set<Place>& places,
                                        const std::vector<std::string>& feeds,
                                        const std::vector<std::string>& fetches,
                                        const std::map<std::string, Shape>& feed_shapes,
                                        bool in_order) {
  MemoryEstimateOptions options;
  options.feeds = feeds;
  options.fetches = fetches;
  options.feed_shapes = feed_shapes;
  options.in_order = in_order;
  for (const Place& p : places) {
    if (p.is_host()) continue;
    absl::StatusOr<Device*> device = DeviceRegistry::Global().GetDevice(p);
    if (device.ok() && (*device)->host_allocator() != CpuAllocator::Default()) {
      options.staged_upload_devices.insert(p);
    }
  }
  return options;
}

MemoryEstimateOptions PlanMemoryOptions(const PlacedProgram& placed,
                                        const std::vector<std::string>& feeds,
                                        const std::vector<std::string>& fetches,
                                        const std::map<std::string, Shape>& feed_shapes,
                                        bool in_order) {
  return PlanMemoryOptions(std::set<Place>(placed.places.begin(), placed.places.end()), feeds,
                           fetches, feed_shapes, in_order);
}

absl::Status CheckMemoryFits(const PlacedProgram& placed, const MemoryEstimate& estimate,
                             const std::map<Place, int64_t>& capacity) {
  for (const PlaceMemory& p : estimate.places) {
    auto it = capacity.find(p.place);
    if (it == capacity.end() || p.peak_bytes <= it->second) continue;
    absl::Status s = FirstOverflow(placed, estimate, p, it->second);
    if (!s.ok()) return s;
    return absl::ResourceExhaustedError(absl::StrCat(  // at the end: the fetched values
        "fetching ",
        absl::StrJoin(p.largest.empty() ? std::vector<std::string>{}
                                        : std::vector<std::string>{p.largest[0].var},
                      ", "),
        " to ", p.place.ToString(), ": the plan would hold an estimated ", p.peak_bytes,
        " bytes there, more than the limit ", it->second, " bytes (", ShortBytes(it->second), ")"));
  }
  return absl::OkStatus();
}

}  // namespace tandem
