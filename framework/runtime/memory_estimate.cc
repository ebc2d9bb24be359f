#include "framework/runtime/memory_estimate.h"

#include <unistd.h>

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/device/device_registry.h"
#include "framework/memory/allocator.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/op/op_schema.h"
#include "framework/runtime/eager.h"
#include "framework/runtime/placement_passes.h"

namespace tandem {
namespace {

enum class Category { kParameter, kState, kConstant, kFeed, kStaging, kIntermediate };

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

std::vector<std::string> Vars(const std::map<std::string, std::vector<std::string>>& args) {
  std::vector<std::string> out;
  for (const auto& [arg, vars] : args) out.insert(out.end(), vars.begin(), vars.end());
  return out;
}

// Input-less fill_constant ops whose output nothing else writes and is not
// persistable run once and are kept (the executor's FoldConstants).
std::set<std::string> FoldedConstants(const Block& block) {
  std::map<std::string, int> writes;
  for (const OpDesc& op : block.ops()) {
    for (const std::string& v : Vars(op.outputs)) ++writes[v];
  }
  std::set<std::string> folded;
  for (const OpDesc& op : block.ops()) {
    if (op.type != "fill_constant" || !op.inputs.empty()) continue;
    bool foldable = true;
    for (const std::string& v : Vars(op.outputs)) {
      const VarDesc* d = block.FindVar(v);
      foldable &= writes[v] == 1 && (d == nullptr || !d->persistable);
    }
    if (foldable) {
      for (const std::string& v : Vars(op.outputs)) folded.insert(v);
    }
  }
  return folded;
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
  std::map<std::string, std::vector<int>> writers_;                     // ascending
  std::map<std::pair<std::string, int>, std::optional<Tensor>> cache_;  // (var, writer)
};

KnownValues::KnownValues(const Block& block) : block_(block) {
  for (int i = 0; i < static_cast<int>(block.ops().size()); ++i) {
    for (const std::string& v : Vars(block.ops()[i].outputs)) writers_[v].push_back(i);
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
  std::map<std::string, Meta> metas_;
  std::set<std::string> unknown_;
};

// Walks the placed program in order, keeping every value's bytes and place
// (the executor's allocations and frees), and records the peaks.
class MemoryWalk {
 public:
  MemoryWalk(const PlacedProgram& placed, const MemoryEstimateOptions& options, KnownValues* known)
      : placed_(placed), block_(placed.program.block()), options_(options), known_(known) {}

  struct LiveEntry {
    Category category;
    Place place;
    LiveValue value;
  };
  // Walks every op; stops after op `stop_at` allocated its outputs (-1:
  // before the first op; past the last: after the fetches) and returns what
  // is live then. Fills `out`'s allocations and live_after_alloc if given.
  std::vector<LiveEntry> Walk(int stop_at, MemoryEstimate* out);
  // After a whole Walk: what was live when op `op` had allocated its outputs
  // (-1: at the start; the op count: after the fetches).
  std::vector<LiveEntry> LiveAt(int op) const;
  const std::map<Place, std::pair<int64_t, int>>& peaks() const { return peaks_; }
  std::vector<std::string> unknown() const {
    return std::vector<std::string>(metas_->unknown().begin(), metas_->unknown().end());
  }

 private:
  struct Value {
    Place place;
    int64_t bytes = 0;
    int refs = 0;
    Category category = Category::kIntermediate;
    std::string var;
    int born = -1;                               // the op that allocated it (-1: the start)
    int died = std::numeric_limits<int>::max();  // the op after which it was freed
  };

  void Reset();
  int NewValue(const std::string& var, const Place& place, int64_t bytes, Category category);
  void Ref(int id) { ++values_[id].refs; }
  void Deref(int id);
  void Bind(const std::string& var, int id);  // var -> id, unbinding the old value
  void NotePeaks(int op);
  void StartResidents(MemoryEstimate* out);
  // Host->device copies to a device with its own pinned memory of values no
  // op of the program writes before them (feeds, persistables): the plan
  // keeps a staging buffer for each (the executor's UploadSource).
  void StageUploads(MemoryEstimate* out);
  // Allocates op `i`'s outputs; returns (var, value) to bind after the op.
  std::vector<std::pair<std::string, int>> AllocateOutputs(int i, MemoryEstimate* out);
  void FinishOp(int i, const std::vector<std::pair<std::string, int>>& bindings);
  void FetchToHost();
  std::vector<LiveEntry> Live() const;

  const PlacedProgram& placed_;
  const Block& block_;
  const MemoryEstimateOptions& options_;
  KnownValues* known_;
  std::vector<Value> values_;
  int op_ = -1;                       // the op being walked
  std::map<std::string, int> bound_;  // var -> its current value
  std::unique_ptr<MetaResolver> metas_;
  std::map<Place, int64_t> live_;
  std::map<Place, std::pair<int64_t, int>> peaks_;  // place -> (bytes, op)
  std::vector<int> kept_;                           // values kept until the run ends
  std::set<std::string> folded_, fetched_;
  std::set<int> staged_copies_;  // host->device copies through a staging buffer
  std::map<std::string, int> last_use_;
};

void MemoryWalk::Reset() {
  values_.clear();
  bound_.clear();
  metas_ = std::make_unique<MetaResolver>(block_, options_.feed_shapes, known_);
  live_.clear();
  peaks_.clear();
  kept_.clear();
  folded_ = FoldedConstants(block_);
  fetched_ = std::set<std::string>(options_.fetches.begin(), options_.fetches.end());
  last_use_.clear();
  for (int i = 0; i < static_cast<int>(block_.ops().size()); ++i) {
    const OpDesc& op = block_.ops()[i];
    for (const std::string& v : Vars(op.inputs)) last_use_[v] = i;
    for (const std::string& v : Vars(op.outputs)) last_use_[v] = i;
  }
}

int MemoryWalk::NewValue(const std::string& var, const Place& place, int64_t bytes,
                         Category category) {
  values_.push_back({place, bytes, 1, category, var, op_});
  live_[place] += bytes;
  return static_cast<int>(values_.size()) - 1;
}

void MemoryWalk::Deref(int id) {
  if (--values_[id].refs > 0) return;
  live_[values_[id].place] -= values_[id].bytes;
  values_[id].died = op_;
}

void MemoryWalk::Bind(const std::string& var, int id) {
  auto it = bound_.find(var);
  if (it != bound_.end()) {
    const int old = it->second;
    it->second = id;
    Deref(old);
  } else {
    bound_[var] = id;
  }
}

void MemoryWalk::NotePeaks(int op) {
  for (const auto& [place, bytes] : live_) {
    auto [it, inserted] = peaks_.try_emplace(place, bytes, op);
    if (!inserted && bytes > it->second.first) it->second = {bytes, op};
  }
}

Meta MetaResolver::Declared(const std::string& var) const {
  Meta m;
  if (const VarDesc* d = block_.FindVar(var)) {
    m = {d->dtype, d->shape, d->kind == VarKind::kSelectedRows};
  }
  auto fed = feed_shapes_.find(var);
  if (fed != feed_shapes_.end()) m.shape = fed->second;
  return m;
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
  for (const std::string& in : Vars(op.inputs)) {
    const Meta ids = Of(in);
    if (ids.dtype != DataType::kInt64 && ids.dtype != DataType::kInt32) continue;
    absl::StatusOr<int64_t> rows = AtLeastOne(ids.shape).NumElements();
    if (rows.ok()) return DenseBytes(m.dtype, shape) / shape.dim(0) * *rows;
  }
  return DenseBytes(m.dtype, shape);
}

void MemoryWalk::StartResidents(MemoryEstimate* out) {
  std::set<std::string> used;
  for (const OpDesc& op : block_.ops()) {
    for (const std::string& v : Vars(op.inputs)) used.insert(v);
    for (const std::string& v : Vars(op.outputs)) used.insert(v);
  }
  for (const auto& [var, place] : placed_.initial_places) {
    const VarDesc* d = block_.FindVar(var);
    if (d == nullptr || !d->persistable || !used.count(var)) continue;
    const int64_t bytes = metas_->Bytes(var);
    Bind(var,
         NewValue(var, place, bytes, d->is_parameter ? Category::kParameter : Category::kState));
    if (out != nullptr) out->allocations.push_back({-1, var, place, bytes, true});
  }
  for (const std::string& f : options_.feeds) {
    const int64_t bytes = metas_->Bytes(f);
    const int id = NewValue(f, CPUPlace(), bytes, Category::kFeed);
    Ref(id);  // the caller's
    Bind(f, id);
    if (out != nullptr) out->allocations.push_back({-1, f, CPUPlace(), bytes, true});
  }
  StageUploads(out);
  for (int i = 0; i < static_cast<int>(block_.ops().size()); ++i) {
    const OpDesc& op = block_.ops()[i];
    if (!folded_.count(op.Output("Out"))) continue;
    metas_->InferOutputs(i);
    const Place where = placed_.kernels[i] != nullptr
                            ? ArgumentPlace(*placed_.kernels[i], "Out", placed_.places[i])
                            : placed_.places[i];
    const int64_t bytes = metas_->OutputBytes(op, op.Output("Out"));
    const int id = NewValue(op.Output("Out"), where, bytes, Category::kConstant);
    Ref(id);  // kept across runs
    Bind(op.Output("Out"), id);
    if (out != nullptr) out->allocations.push_back({i, op.Output("Out"), where, bytes, true});
  }
}

void MemoryWalk::StageUploads(MemoryEstimate* out) {
  staged_copies_.clear();
  std::set<std::string> written;
  for (int i = 0; i < static_cast<int>(block_.ops().size()); ++i) {
    const OpDesc& op = block_.ops()[i];
    const std::optional<CopyStep>& c = placed_.table[i].copy;
    if (c.has_value() && !c->to.is_host() && options_.staged_upload_devices.count(c->to) &&
        !written.count(c->source)) {
      staged_copies_.insert(i);
      const int64_t bytes = metas_->Bytes(c->source);
      NewValue(c->output, CPUPlace(), bytes, Category::kStaging);  // kept across runs
      if (out != nullptr) out->allocations.push_back({i, c->output, CPUPlace(), bytes, true});
    }
    for (const std::string& v : Vars(op.outputs)) written.insert(v);
  }
}

std::vector<std::pair<std::string, int>> MemoryWalk::AllocateOutputs(int i, MemoryEstimate* out) {
  const OpDesc& op = block_.ops()[i];
  const PlacementEntry& entry = placed_.table[i];
  std::vector<std::pair<std::string, int>> bindings;
  if (entry.copy.has_value()) {
    const CopyStep& c = *entry.copy;
    auto src = bound_.find(c.source);
    const int64_t bytes =
        src == bound_.end() ? metas_->OutputBytes(op, c.output) : values_[src->second].bytes;
    metas_->Set(c.output, metas_->Of(c.source));
    bindings.emplace_back(c.output, NewValue(c.output, c.to, bytes, Category::kIntermediate));
    if (out != nullptr) out->allocations.push_back({i, c.output, c.to, bytes, false});
    return bindings;
  }
  metas_->InferOutputs(i);
  std::set<std::string> done;
  for (const auto& [arg, vars] : op.outputs) {
    for (const std::string& v : vars) {
      if (!done.insert(v).second || folded_.count(v)) continue;
      const std::string in_arg = arg.size() > 3 && arg.compare(arg.size() - 3, 3, "Out") == 0
                                     ? arg.substr(0, arg.size() - 3)
                                     : "";
      const std::string in_place = op.role == OpRole::kOptimize ? op.Input(in_arg) : "";
      if (!in_place.empty() && bound_.count(in_place)) {  // updated in place
        Ref(bound_[in_place]);
        bindings.emplace_back(v, bound_[in_place]);
        continue;
      }
      const Place where = ArgumentPlace(*placed_.kernels[i], arg, placed_.places[i]);
      const int64_t bytes = metas_->OutputBytes(op, v);
      bindings.emplace_back(v, NewValue(v, where, bytes, Category::kIntermediate));
      if (out != nullptr) out->allocations.push_back({i, v, where, bytes, false});
    }
  }
  return bindings;
}

void MemoryWalk::FinishOp(int i, const std::vector<std::pair<std::string, int>>& bindings) {
  const PlacementEntry& entry = placed_.table[i];
  if (entry.copy.has_value()) {
    auto src = bound_.find(entry.copy->source);
    // The copy stream reads a device->host source until the run ends; a
    // host->device copy reads pinned sources in place (staged ones are
    // snapshotted into the staging buffer).
    const bool keep = entry.copy->to.is_host() ? !options_.in_order : !staged_copies_.count(i);
    if (keep && src != bound_.end()) {
      Ref(src->second);
      kept_.push_back(src->second);
    }
  }
  for (const auto& [var, id] : bindings) Bind(var, id);
  const OpDesc& op = block_.ops()[i];
  std::set<std::string> touched;
  for (const std::string& v : Vars(op.inputs)) touched.insert(v);
  for (const std::string& v : Vars(op.outputs)) touched.insert(v);
  for (const std::string& v : touched) {
    if (last_use_[v] != i || fetched_.count(v) || folded_.count(v)) continue;
    const VarDesc* d = block_.FindVar(v);
    if (d != nullptr && d->persistable) continue;
    auto it = bound_.find(v);
    if (it == bound_.end()) continue;
    Deref(it->second);
    bound_.erase(it);
  }
}

void MemoryWalk::FetchToHost() {
  for (const std::string& f : options_.fetches) {
    auto it = bound_.find(f);
    if (it == bound_.end() || values_[it->second].place.is_host()) continue;
    NewValue(f, CPUPlace(), values_[it->second].bytes, Category::kIntermediate);
  }
}

std::vector<MemoryWalk::LiveEntry> MemoryWalk::Live() const {
  std::vector<LiveEntry> live;
  for (const Value& v : values_) {
    if (v.refs > 0) live.push_back({v.category, v.place, {v.var, v.bytes}});
  }
  return live;
}

std::vector<MemoryWalk::LiveEntry> MemoryWalk::LiveAt(int op) const {
  std::vector<LiveEntry> live;
  for (const Value& v : values_) {
    if (v.born <= op && v.died >= op) live.push_back({v.category, v.place, {v.var, v.bytes}});
  }
  return live;
}

std::vector<MemoryWalk::LiveEntry> MemoryWalk::Walk(int stop_at, MemoryEstimate* out) {
  Reset();
  op_ = -1;
  StartResidents(out);
  const int n = static_cast<int>(block_.ops().size());
  NotePeaks(-1);
  if (stop_at == -1) return Live();
  for (int i = 0; i < n; ++i) {
    op_ = i;
    const std::vector<std::pair<std::string, int>> bindings = AllocateOutputs(i, out);
    NotePeaks(i);
    if (out != nullptr) {
      for (PlaceMemory& p : out->places) p.live_after_alloc.push_back(live_[p.place]);
    }
    if (i == stop_at) return Live();
    FinishOp(i, bindings);
  }
  op_ = n;
  FetchToHost();
  NotePeaks(n);
  return Live();
}

// Fills `p`'s breakdown and largest values from what is live at its peak.
void Summarise(const std::vector<MemoryWalk::LiveEntry>& live, PlaceMemory* p) {
  for (const MemoryWalk::LiveEntry& e : live) {
    if (!(e.place == p->place)) continue;
    int64_t* buckets[] = {&p->parameters, &p->optimizer_state, &p->constants,
                          &p->feeds,      &p->staging,         &p->intermediates};
    *buckets[static_cast<int>(e.category)] += e.value.bytes;
    p->largest.push_back(e.value);
  }
  std::stable_sort(p->largest.begin(), p->largest.end(),
                   [](const LiveValue& a, const LiveValue& b) { return a.bytes > b.bytes; });
}

std::string Bytes(int64_t b) {
  const std::string human = HumanBytes(b);  // "1536 bytes (1.5 KiB)"
  const size_t open = human.find('(');
  return open == std::string::npos ? human : human.substr(open + 1, human.size() - open - 2);
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
    absl::StrAppend(&out, "memory estimate ", p.place.ToString(), ": peak ", Bytes(p.peak_bytes),
                    " (parameters ", Bytes(p.parameters), ", optimizer state ",
                    Bytes(p.optimizer_state), ", constants ", Bytes(p.constants), ", feeds ",
                    Bytes(p.feeds), ", staging ", Bytes(p.staging), ", intermediates ",
                    Bytes(p.intermediates), ")");
    absl::StrAppend(&out, " at ", p.peak_at);
    std::vector<std::string> largest;
    for (size_t k = 0; k < p.largest.size() && k < 3; ++k) {
      largest.push_back(absl::StrCat(p.largest[k].var, " ", Bytes(p.largest[k].bytes)));
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
  MemoryWalk walk(placed, options, &known);
  walk.Walk(static_cast<int>(placed.program.block().ops().size()), &estimate);
  for (const MemoryWalk::LiveEntry& e : walk.LiveAt(-1)) {
    if (e.category != Category::kParameter && e.category != Category::kState) continue;
    for (PlaceMemory& p : estimate.places) {
      if (p.place == e.place) p.persistables_at_start += e.value.bytes;
    }
  }
  estimate.unknown_vars = walk.unknown();
  const int n = static_cast<int>(placed.program.block().ops().size());
  for (PlaceMemory& p : estimate.places) {
    auto it = walk.peaks().find(p.place);
    if (it == walk.peaks().end()) continue;
    p.peak_bytes = it->second.first;
    p.peak_op = it->second.second;
    p.peak_at = p.peak_op < 0    ? "the start"
                : p.peak_op >= n ? "the end (fetches)"
                                 : absl::StrCat("#", p.peak_op, " '",
                                                placed.program.block().ops()[p.peak_op].type, "'");
    Summarise(walk.LiveAt(it->second.second), &p);
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
            "place within a memory budget (ExecutorOptions::auto_placement), or raise the "
            "memory limit";
  return absl::ResourceExhaustedError(absl::StrCat(
      what, " on ", a.place.ToString(), ": the plan would hold an estimated ", before + a.bytes,
      " bytes (", Bytes(before + a.bytes), ") there: requested ", a.bytes, " bytes (",
      Bytes(a.bytes), ") with ", before, " bytes planned before, more than the limit ", capacity,
      " bytes (", Bytes(capacity), ") of ", a.place.ToString(),
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
  std::map<std::string, int64_t> value_bytes;  // of each variable's latest value
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

MemoryEstimateOptions PlanMemoryOptions(const PlacedProgram& placed,
                                        const std::vector<std::string>& feeds,
                                        const std::vector<std::string>& fetches,
                                        const std::map<std::string, Shape>& feed_shapes,
                                        bool in_order) {
  MemoryEstimateOptions options;
  options.feeds = feeds;
  options.fetches = fetches;
  options.feed_shapes = feed_shapes;
  options.in_order = in_order;
  for (const Place& p : std::set<Place>(placed.places.begin(), placed.places.end())) {
    if (p.is_host()) continue;
    absl::StatusOr<Device*> device = DeviceRegistry::Global().GetDevice(p);
    if (device.ok() && (*device)->host_allocator() != CpuAllocator::Default()) {
      options.staged_upload_devices.insert(p);
    }
  }
  return options;
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
        " bytes there, more than the limit ", it->second, " bytes (", Bytes(it->second), ")"));
  }
  return absl::OkStatus();
}

}  // namespace tandem
