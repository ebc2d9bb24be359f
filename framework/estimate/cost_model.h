// CostModel: the estimated time of an op on a place and of a copy between
// places, for the auto placement (auto_placement.h).
//
//   CostModel costs({.cache_dir = DefaultCostCacheDir(), .measure = true});
//   ASSIGN_OR_RETURN(OpCost c, costs.OpTime(op, GPUPlace(0), inputs, outputs));
//   c.micros;                          // measured once, then read from the cache
//   costs.CopyMicros(GPUPlace(0), CopyKind::kDeviceToHost, bytes, /*sync=*/true);
//   RETURN_IF_ERROR(costs.Save());     // $XDG_CACHE_HOME/tandem/costs-gpu-....tsv
//
// An op's time is measured the first time it is asked for a (op type,
// place, dtypes, shapes, attributes) key: its kernel runs on zero-filled
// inputs of those shapes (a sparse input: that many distinct rows of
// Param's height), by RunOpEager, a warm-up then the fastest of a few runs
// (noise only ever adds time). Its time is the eager call's minus that of a
// trivial op, plus the executor's cost of a trivial op on that place; its
// host part (OpCost::host_micros) is the executor's cost plus how much
// longer its Compute call takes than the trivial op's. Both are kept in
// memory and, with Save, in a per-device file. An op larger than
// max_measured_bytes is timed with its largest first dimension cut to two
// sizes that fit, n and 4n, and extrapolated (ExtrapolateRows: a gather from
// a 10M-row table stays cheap, its dense update does not). Ops that cannot
// be measured (values that zeros make invalid, no kernel) get the
// analytical estimate instead: the device's launch cost (all of it the
// host's) plus the bytes they read and write over its measured memory
// bandwidth. Each device's constants (the executor's cost of one trivial op
// and of a run, timed by CostModelOptions::time_dispatch; kernels' memory
// bandwidth; copy latency and bandwidth per direction, copies enqueued then
// waited for as the executor makes them; the round trip of a stream
// synchronisation) are measured once and cached the same way.
// A copy costs its direction's latency plus bytes over bandwidth, and a
// synchronous one also the device round trip. With `measure` off, nothing
// runs: constants are the cached ones or conservative defaults, and every
// op is analytical.
//
// Not thread-safe (one planner at a time); the cache file is written
// atomically.
#ifndef TANDEM_FRAMEWORK_ESTIMATE_COST_MODEL_H_
#define TANDEM_FRAMEWORK_ESTIMATE_COST_MODEL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/device/device.h"
#include "framework/op/op_desc.h"
#include "framework/op/op_schema.h"
#include "framework/place/place.h"

namespace tandem {

// Measured (or default) speeds of one place.
struct DeviceConstants {
  double launch_us = 5;         // the executor's cost of one trivial op
  double run_us = 20;           // the executor's fixed cost of a run (feeds, syncs, fetches)
  double bytes_per_us = 10000;  // kernels' memory bandwidth (10 GB/s)
  double h2d_latency_us = 10, h2d_bytes_per_us = 5000;
  double d2h_latency_us = 10, d2h_bytes_per_us = 5000;
  double sync_us = 10;  // a synchronous copy's round trip
  bool measured = false;
};

// The executor's cost of one trivial op and the fixed cost of a run, in us.
struct DispatchCost {
  double per_op_us = 0;
  double per_run_us = 0;
};

struct CostModelOptions {
  // Where the per-device cache files live; "" keeps costs in memory only.
  std::string cache_dir;
  // Time kernels and copies; off: cached values or the analytical model only.
  bool measure = true;
  // Largest op (inputs + outputs) timed for real; larger ones are analytical.
  int64_t max_measured_bytes = int64_t{64} << 20;
  // Times the executor's cost of one trivial op and of a run on a place
  // (DeviceConstants::launch_us and run_us). The executor sits above this
  // layer, so the caller lends the timer (framework/autoplace/calibration.h:
  // TimeExecutorDispatch). Without one, a place's constants are never
  // measured: they stay the cached ones or the defaults.
  std::function<absl::StatusOr<DispatchCost>(const Place&)> time_dispatch;
};

// $XDG_CACHE_HOME/tandem, else $HOME/.cache/tandem, else "" (no cache).
std::string DefaultCostCacheDir();

struct OpCost {
  double micros = 0;
  // Of `micros`, the time of the thread that runs the op: all of it on the
  // host; on a device, the executor's cost of an op plus the kernel's own
  // host work (what its Compute does before returning, as cuBLAS's setup or
  // a sparse update's grouping of ids). The rest is the device's, which
  // overlaps the host's work on the next ops.
  double host_micros = 0;
  bool measured = false;  // false: the analytical estimate
};

class CostModel {
 public:
  explicit CostModel(CostModelOptions options);

  // The time of `op` on `place` with inputs and outputs of these metas (by
  // argument, as shape inference gives them).
  absl::StatusOr<OpCost> OpTime(const OpDesc& op, const Place& place,
                                const std::map<std::string, std::vector<TensorMeta>>& inputs,
                                const std::map<std::string, std::vector<TensorMeta>>& outputs);
  // Latency + bytes / bandwidth of a copy with `device` (the device side),
  // plus the device's round trip when `sync`.
  double CopyMicros(const Place& device, CopyKind kind, int64_t bytes, bool sync);
  // The constants of `place` (measured on first use when `measure` is on).
  const DeviceConstants& Constants(const Place& place);

  // Writes each device's file in cache_dir (created if needed); a no-op
  // without cache_dir.
  absl::Status Save() const;

  int measurements() const { return measurements_; }  // kernels timed so far

 private:
  struct DeviceCosts {
    DeviceConstants constants;
    std::map<std::string, OpCost> ops;  // key -> measured cost
    bool loaded = false;
    bool dirty = false;
  };
  DeviceCosts& For(const Place& place);
  std::string CachePath(const Place& place) const;
  void Load(const Place& place, DeviceCosts* costs) const;
  absl::StatusOr<OpCost> Measure(const OpDesc& op, const Place& place,
                                 const std::map<std::string, std::vector<TensorMeta>>& inputs);
  // An op too large to time: timed with its largest first dimension cut to
  // two sizes that fit max_measured_bytes, then ExtrapolateRows (the host
  // part likewise).
  absl::StatusOr<OpCost> Extrapolate(const OpDesc& op, const Place& place,
                                     const std::map<std::string, std::vector<TensorMeta>>& inputs,
                                     const std::map<std::string, std::vector<TensorMeta>>& outputs);
  DeviceConstants MeasureConstants(const Place& place);

  CostModelOptions options_;
  std::map<Place, DeviceCosts> devices_;
  int measurements_ = 0;
};

// The time of an op at `rows` rows from its times at n and 4n rows (t_n,
// t_4n). Linear through the two when four times the rows cost at least 1.5
// times as much; otherwise the rows do not drive the time (a gather reads
// the rows it is given, not the table) and the time is t_4n, so timing
// noise is not multiplied by rows / n.
double ExtrapolateRows(int64_t n, double t_n, double t_4n, int64_t rows);

// The key an op's measurement is cached under:
// "scale|sim|X=float32[4, 8]|Out=float32[4, 8]|{bias=0, scale=2}".
std::string OpCostKey(const OpDesc& op, const Place& place,
                      const std::map<std::string, std::vector<TensorMeta>>& inputs,
                      const std::map<std::string, std::vector<TensorMeta>>& outputs);

// The fastest wall time of `f`, in us, over a few runs after one warm-up
// (other work on the machine only ever adds time), or `f`'s first error.
absl::StatusOr<double> TimeMicros(const std::function<absl::Status()>& f);

// Bytes an op reads and writes (its inputs' and outputs' sizes).
int64_t OpBytes(const std::map<std::string, std::vector<TensorMeta>>& inputs,
                const std::map<std::string, std::vector<TensorMeta>>& outputs);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_ESTIMATE_COST_MODEL_H_
