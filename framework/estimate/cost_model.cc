#include "framework/estimate/cost_model.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/persistence/atomic_file.h"
#include "framework/kernel/eager.h"
#include "glog/logging.h"

namespace tandem {
namespace {

constexpr int kTimedRuns = 3;

double Now() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t MetaBytes(const TensorMeta& m) {
  int64_t n = 1;
  for (int64_t d : m.shape.dims()) n *= std::max<int64_t>(d, 1);
  return n * static_cast<int64_t>(SizeOf(m.dtype));
}

}  // namespace

absl::StatusOr<double> TimeMicros(const std::function<absl::Status()>& f) {
  if (absl::Status s = f(); !s.ok()) return s;
  std::vector<double> t;
  for (int i = 0; i < kTimedRuns; ++i) {
    const double start = Now();
    if (absl::Status s = f(); !s.ok()) return s;
    t.push_back(Now() - start);
  }
  return *std::min_element(t.begin(), t.end());
}

namespace {

// A zero-filled tensor of `m` on `place` (made on the host, copied there).
absl::StatusOr<Tensor> Zeros(const TensorMeta& m, const Place& place) {
  ASSIGN_OR_RETURN(Tensor host, Tensor::Allocate(CpuAllocator::Default(), m.dtype, m.shape));
  if (host.NumBytes() > 0) std::memset(host.raw_data(), 0, host.NumBytes());
  if (place.is_host()) return host;
  return CopyTensorTo(host, place);
}

// A sparse value of `m` (SelectedRows of `height` rows: m.shape's first
// dimension of distinct rows, zeros) on `place`.
absl::StatusOr<Variable> SparseZeros(const TensorMeta& m, int64_t height, const Place& place) {
  const int64_t n = m.shape.rank() == 0 ? 0 : m.shape.dim(0);
  if (height <= 0) height = std::max<int64_t>(n, 1);
  std::vector<int64_t> rows(n);
  for (int64_t k = 0; k < n; ++k) rows[k] = k % height;
  ASSIGN_OR_RETURN(Tensor value, Zeros({m.dtype, m.shape, false}, place));
  return Variable(SelectedRows(height, std::move(rows), std::move(value)));
}

// The fastest of TimeMicros' eager runs: wall time to the end of the op's
// device work, and (its own fastest) of its kernel's Compute call alone.
struct EagerTimes {
  double total = 0, compute = 0;
};
absl::StatusOr<EagerTimes> TimeEager(const OpDesc& op, const Place& place,
                                     const EagerInputs& inputs) {
  EagerTimes best{0, std::numeric_limits<double>::infinity()};
  ASSIGN_OR_RETURN(best.total, TimeMicros([&]() {
                     EagerStats stats;
                     absl::Status s = RunOpEager(op, place, inputs, &stats).status();
                     best.compute = std::min(best.compute, stats.compute_us);
                     return s;
                   }));
  return best;
}

// Eager runs of `scale` on `n` zero floats already on `place`.
absl::StatusOr<EagerTimes> TimeScale(const Place& place, int64_t n) {
  OpDesc op;
  op.type = "scale";
  op.attrs["scale"] = 2.0;
  ASSIGN_OR_RETURN(Tensor x, Zeros({DataType::kFloat32, Shape({n})}, place));
  const EagerInputs inputs = {{"X", {Variable(x)}}};
  return TimeEager(op, place, inputs);
}

// Latency (us) and bandwidth (bytes/us) of copies of `kind` as the executor
// makes them: enqueued on the compute stream, then waited for.
absl::StatusOr<std::pair<double, double>> TimeCopies(Device* device, CopyKind kind) {
  constexpr int64_t kSmall = 8, kLarge = int64_t{8} << 20;
  ASSIGN_OR_RETURN(std::shared_ptr<Buffer> host,
                   Buffer::Allocate(device->host_allocator(), kLarge));
  ASSIGN_OR_RETURN(std::shared_ptr<Buffer> dev, Buffer::Allocate(device->allocator(), kLarge));
  std::memset(host->data(), 0, kLarge);
  Stream* stream = device->compute_stream();
  auto copy = [&](int64_t bytes) {
    const absl::Status queued =
        kind == CopyKind::kHostToDevice
            ? device->CopyAsync(kind, dev->data(), host->data(), bytes, stream)
            : device->CopyAsync(kind, host->data(), dev->data(), bytes, stream);
    return queued.ok() ? device->SynchronizeStream(stream) : queued;
  };
  ASSIGN_OR_RETURN(double small, TimeMicros([&]() { return copy(kSmall); }));
  ASSIGN_OR_RETURN(double large, TimeMicros([&]() { return copy(kLarge); }));
  return std::make_pair(small, (kLarge - kSmall) / std::max(large - small, 1e-3));
}

std::string MetaString(const TensorMeta& m) {
  return absl::StrCat(DataTypeName(m.dtype), m.shape.ToString(), m.selected_rows ? "sparse" : "");
}

std::string ArgsString(const std::map<std::string, std::vector<TensorMeta>>& args) {
  std::vector<std::string> parts;
  for (const auto& [arg, metas] : args) {
    std::vector<std::string> m;
    for (const TensorMeta& t : metas) m.push_back(MetaString(t));
    parts.push_back(absl::StrCat(arg, "=", absl::StrJoin(m, ",")));
  }
  return absl::StrJoin(parts, "|");
}

std::string Sanitize(std::string s) {
  s = s.substr(0, s.find(" ("));  // "simulated accelerator sim:0 (memory limit: ...)"
  for (char& c : s) {
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

// Exactly (reads back to the same double).
std::string Exact(double v) { return absl::StrFormat("%.17g", v); }

// "micros<TAB>host_micros" of a cache line, 0 <= host_micros <= micros.
bool ParseOpCost(absl::string_view text, OpCost* c) {
  std::pair<std::string, std::string> parts = absl::StrSplit(text, absl::MaxSplits('\t', 1));
  c->measured = true;
  return absl::SimpleAtod(parts.first, &c->micros) &&
         absl::SimpleAtod(parts.second, &c->host_micros) && c->host_micros >= 0 &&
         c->micros >= c->host_micros;
}

// "launch_us=5;bytes_per_us=10000;..." and back.
std::string ConstantsString(const DeviceConstants& c) {
  return absl::StrCat(
      "launch_us=", Exact(c.launch_us), ";run_us=", Exact(c.run_us),
      ";bytes_per_us=", Exact(c.bytes_per_us), ";h2d_latency_us=", Exact(c.h2d_latency_us),
      ";h2d_bytes_per_us=", Exact(c.h2d_bytes_per_us), ";d2h_latency_us=", Exact(c.d2h_latency_us),
      ";d2h_bytes_per_us=", Exact(c.d2h_bytes_per_us), ";sync_us=", Exact(c.sync_us));
}

bool ParseConstants(absl::string_view text, DeviceConstants* c) {
  std::map<std::string, double*> fields = {{"launch_us", &c->launch_us},
                                           {"run_us", &c->run_us},
                                           {"bytes_per_us", &c->bytes_per_us},
                                           {"h2d_latency_us", &c->h2d_latency_us},
                                           {"h2d_bytes_per_us", &c->h2d_bytes_per_us},
                                           {"d2h_latency_us", &c->d2h_latency_us},
                                           {"d2h_bytes_per_us", &c->d2h_bytes_per_us},
                                           {"sync_us", &c->sync_us}};
  size_t seen = 0;
  for (absl::string_view kv : absl::StrSplit(text, ';')) {
    std::pair<std::string, std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    auto it = fields.find(p.first);
    double v = 0;
    if (it == fields.end() || !absl::SimpleAtod(p.second, &v) || !(v >= 0)) return false;
    *it->second = v;
    ++seen;
  }
  return seen == fields.size();
}

// mkdir -p (errors surface when the file is created).
void MakeDirs(const std::string& dir) {
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    mkdir(dir.substr(0, slash).c_str(), 0755);
    if (slash == std::string::npos) return;
  }
}

}  // namespace

std::string DefaultCostCacheDir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return absl::StrCat(xdg, "/tandem");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return absl::StrCat(home, "/.cache/tandem");
  }
  return "";
}

std::string OpCostKey(const OpDesc& op, const Place& place,
                      const std::map<std::string, std::vector<TensorMeta>>& inputs,
                      const std::map<std::string, std::vector<TensorMeta>>& outputs) {
  std::vector<std::string> attrs;
  for (const auto& [name, value] : op.attrs) {
    attrs.push_back(absl::StrCat(name, "=", AttrValueToString(value)));
  }
  return absl::StrCat(op.type, "|", place.type().name(), "|", ArgsString(inputs), "|",
                      ArgsString(outputs), "|{", absl::StrJoin(attrs, ", "), "}");
}

int64_t OpBytes(const std::map<std::string, std::vector<TensorMeta>>& inputs,
                const std::map<std::string, std::vector<TensorMeta>>& outputs) {
  int64_t bytes = 0;
  for (const auto* args : {&inputs, &outputs}) {
    for (const auto& [arg, metas] : *args) {
      for (const TensorMeta& m : metas) bytes += MetaBytes(m);
    }
  }
  return bytes;
}

CostModel::CostModel(CostModelOptions options) : options_(std::move(options)) {}

std::string CostModel::CachePath(const Place& place) const {
  if (options_.cache_dir.empty()) return "";
  absl::StatusOr<Device*> device = DeviceRegistry::Global().GetDevice(place);
  const std::string what = device.ok() ? Sanitize((*device)->Description()) : "unknown";
  return absl::StrCat(options_.cache_dir, "/costs-", place.type().name(), "-", what, ".tsv");
}

void CostModel::Load(const Place& place, DeviceCosts* costs) const {
  const std::string path = CachePath(place);
  if (path.empty()) return;
  std::ifstream in(path);
  std::string line;
  int bad = 0;
  while (std::getline(in, line)) {
    std::pair<std::string, std::string> kv = absl::StrSplit(line, absl::MaxSplits('\t', 1));
    if (kv.first == "@constants") {
      DeviceConstants c;
      if (ParseConstants(kv.second, &c)) {
        c.measured = true;
        costs->constants = c;
      } else {
        ++bad;
      }
    } else if (OpCost c; ParseOpCost(kv.second, &c) && !kv.first.empty()) {
      costs->ops[kv.first] = c;
    } else {
      ++bad;
    }
  }
  if (bad > 0) {
    LOG(WARNING) << "cost cache '" << path << "': ignored " << bad << " malformed line(s)";
  }
}

CostModel::DeviceCosts& CostModel::For(const Place& place) {
  DeviceCosts& costs = devices_[place];
  if (!costs.loaded) {
    costs.loaded = true;
    Load(place, &costs);
    if (!costs.constants.measured && options_.measure) {
      costs.constants = MeasureConstants(place);
      costs.dirty = costs.constants.measured;
    }
  }
  return costs;
}

const DeviceConstants& CostModel::Constants(const Place& place) { return For(place).constants; }

DeviceConstants CostModel::MeasureConstants(const Place& place) {
  DeviceConstants c;
  absl::StatusOr<Device*> device = DeviceRegistry::Global().GetDevice(place);
  if (!device.ok()) return c;
  constexpr int64_t kElements = int64_t{1} << 20;
  absl::StatusOr<EagerTimes> small = TimeScale(place, 1);
  absl::StatusOr<EagerTimes> large = TimeScale(place, kElements);
  if (!options_.time_dispatch) return c;  // the executor's costs are not ours to time
  absl::StatusOr<DispatchCost> dispatch = options_.time_dispatch(place);
  if (!small.ok() || !large.ok() || !dispatch.ok()) return c;  // no scale kernel: the defaults
  c.launch_us = dispatch->per_op_us;
  c.run_us = dispatch->per_run_us;
  c.bytes_per_us = 2.0 * kElements * sizeof(float) / std::max(large->total - small->total, 1e-3);
  if (!place.is_host()) {
    absl::StatusOr<std::pair<double, double>> h2d = TimeCopies(*device, CopyKind::kHostToDevice);
    absl::StatusOr<std::pair<double, double>> d2h = TimeCopies(*device, CopyKind::kDeviceToHost);
    if (!h2d.ok() || !d2h.ok()) return c;
    std::tie(c.h2d_latency_us, c.h2d_bytes_per_us) = *h2d;
    std::tie(c.d2h_latency_us, c.d2h_bytes_per_us) = *d2h;
    Device* d = *device;
    absl::StatusOr<double> sync =
        TimeMicros([d]() { return d->SynchronizeStream(d->compute_stream()); });
    if (!sync.ok()) return c;
    c.sync_us = std::max(*sync, 0.1);
  }
  c.measured = true;
  return c;
}

absl::StatusOr<OpCost> CostModel::Measure(
    const OpDesc& op, const Place& place,
    const std::map<std::string, std::vector<TensorMeta>>& inputs) {
  auto dtype_of = [&](const std::string& var) -> std::optional<DataType> {
    for (const auto& [arg, vars] : op.inputs) {
      for (size_t k = 0; k < vars.size(); ++k) {
        if (vars[k] == var && inputs.count(arg) && k < inputs.at(arg).size()) {
          return inputs.at(arg)[k].dtype;
        }
      }
    }
    return std::nullopt;
  };
  ASSIGN_OR_RETURN(const KernelRegistration* kernel,
                   KernelRegistry::Global().FindForOp(op, place.type(), dtype_of));
  // A sparse input's rows index the first dimension of Param (an update's
  // table), else its own.
  auto param = inputs.find("Param");
  const int64_t height =
      param != inputs.end() && !param->second.empty() && param->second[0].shape.rank() > 0
          ? param->second[0].shape.dim(0)
          : 0;
  EagerInputs eager;
  for (const auto& [arg, metas] : inputs) {
    const Place where = kernel->def.IsHostMemory(arg) ? CPUPlace() : place;
    for (const TensorMeta& m : metas) {
      if (m.selected_rows) {
        ASSIGN_OR_RETURN(Variable v, SparseZeros(m, height, where));
        eager[arg].push_back(std::move(v));
        continue;
      }
      ASSIGN_OR_RETURN(Tensor t, Zeros(m, where));
      eager[arg].push_back(Variable(std::move(t)));
    }
  }
  OpDesc trial = op;
  trial.outputs.clear();  // every output the schema declares
  ++measurements_;
  ASSIGN_OR_RETURN(const EagerTimes t, TimeEager(trial, place, eager));
  ASSIGN_OR_RETURN(const EagerTimes trivial, TimeScale(place, 1));
  const double launch = Constants(place).launch_us;
  OpCost timed;
  timed.measured = true;
  timed.micros = std::max(t.total - trivial.total, 0.0) + launch;
  timed.host_micros =
      place.is_host() ? timed.micros
                      : std::min(timed.micros, launch + std::max(t.compute - trivial.compute, 0.0));
  return timed;
}

absl::StatusOr<OpCost> CostModel::OpTime(
    const OpDesc& op, const Place& place,
    const std::map<std::string, std::vector<TensorMeta>>& inputs,
    const std::map<std::string, std::vector<TensorMeta>>& outputs) {
  DeviceCosts& costs = For(place);
  const std::string key = OpCostKey(op, place, inputs, outputs);
  auto cached = costs.ops.find(key);
  if (cached != costs.ops.end()) return cached->second;
  const int64_t bytes = OpBytes(inputs, outputs);
  if (options_.measure) {
    absl::StatusOr<OpCost> measured = bytes <= options_.max_measured_bytes
                                          ? Measure(op, place, inputs)
                                          : Extrapolate(op, place, inputs, outputs);
    if (measured.ok()) {
      costs.ops[key] = *measured;
      costs.dirty = true;
      return *measured;
    }
    VLOG(1) << "cost model: " << key << " not timed (" << measured.status().message()
            << "); analytical estimate";
  }
  const DeviceConstants& c = costs.constants;
  const double micros = c.launch_us + bytes / c.bytes_per_us;
  return OpCost{micros, place.is_host() ? micros : c.launch_us, false};
}

absl::StatusOr<OpCost> CostModel::Extrapolate(
    const OpDesc& op, const Place& place,
    const std::map<std::string, std::vector<TensorMeta>>& inputs,
    const std::map<std::string, std::vector<TensorMeta>>& outputs) {
  int64_t rows = 0;  // the largest first dimension
  for (const auto* args : {&inputs, &outputs}) {
    for (const auto& [arg, metas] : *args) {
      for (const TensorMeta& m : metas) {
        if (m.shape.rank() > 0) rows = std::max(rows, m.shape.dim(0));
      }
    }
  }
  const int64_t bytes = OpBytes(inputs, outputs);
  const int64_t small = rows * (options_.max_measured_bytes / 8) / std::max<int64_t>(bytes, 1);
  if (small < 16) return absl::UnimplementedError("too large to time even scaled down");
  // Every argument whose first dimension is `rows` gets `n` rows instead.
  auto scaled = [&](const std::map<std::string, std::vector<TensorMeta>>& args, int64_t n) {
    std::map<std::string, std::vector<TensorMeta>> out = args;
    for (auto& [arg, metas] : out) {
      for (TensorMeta& m : metas) {
        if (m.shape.rank() == 0 || m.shape.dim(0) != rows) continue;
        std::vector<int64_t> dims(m.shape.dims().begin(), m.shape.dims().end());
        dims[0] = n;
        m.shape = Shape(dims);
      }
    }
    return out;
  };
  ASSIGN_OR_RETURN(const OpCost t1, Measure(op, place, scaled(inputs, small)));
  ASSIGN_OR_RETURN(const OpCost t4, Measure(op, place, scaled(inputs, 4 * small)));
  OpCost timed;
  timed.measured = true;
  timed.micros = ExtrapolateRows(small, t1.micros, t4.micros, rows);
  timed.host_micros =
      std::min(timed.micros, ExtrapolateRows(small, t1.host_micros, t4.host_micros, rows));
  return timed;
}

double ExtrapolateRows(int64_t n, double t_n, double t_4n, int64_t rows) {
  if (t_4n < 1.5 * t_n) return t_4n;
  const double per_row = (t_4n - t_n) / (3.0 * n);
  return t_4n + per_row * static_cast<double>(rows - 4 * n);
}

double CostModel::CopyMicros(const Place& device, CopyKind kind, int64_t bytes, bool sync) {
  const DeviceConstants& c = For(device).constants;
  const bool h2d = kind == CopyKind::kHostToDevice;
  return (h2d ? c.h2d_latency_us : c.d2h_latency_us) +
         bytes / (h2d ? c.h2d_bytes_per_us : c.d2h_bytes_per_us) + (sync ? c.sync_us : 0);
}

absl::Status CostModel::Save() const {
  if (options_.cache_dir.empty()) return absl::OkStatus();
  for (const auto& [place, costs] : devices_) {
    if (!costs.dirty) continue;
    MakeDirs(options_.cache_dir);
    std::string text;
    if (costs.constants.measured) {
      absl::StrAppend(&text, "@constants\t", ConstantsString(costs.constants), "\n");
    }
    for (const auto& [key, c] : costs.ops) {
      absl::StrAppend(&text, key, "\t", Exact(c.micros), "\t", Exact(c.host_micros), "\n");
    }
    AtomicFileWriter out(CachePath(place), "cost cache");
    RETURN_IF_ERROR(out.Open());
    RETURN_IF_ERROR(out.Write(text.data(), text.size()));
    RETURN_IF_ERROR(out.Commit());
  }
  return absl::OkStatus();
}

}  // namespace tandem
