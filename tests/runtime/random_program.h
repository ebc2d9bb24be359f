// A differential program generator for the executor: seeded random
// *training* programs over cpu, sim:0 and sim:1, run in every execution
// mode of the executor and compared bit for bit with the in-order run.
//
//   GeneratedProgram p;
//   RETURN_IF_ERROR(BuildRandomTrainingProgram(seed, RandomProgramOptions(), &p));
//   std::string error;
//   Trajectory expected = RunTrajectory(p, ExecMode::kInOrder, 4, &error);
//   Trajectory got = RunTrajectory(p, ExecMode::kPipelined2, 4, &error);
//   std::string diff = CompareTrajectories(expected, got);  // "" when identical
//   if (!diff.empty()) std::cerr << ProgramSummary(p) << diff;
//
// A program (BuildRandomTrainingProgram): one or two fed float inputs
// ([4, 6]); zero to two embedding tables, dense or sparse, some with a
// padding_idx, looked up with Embedding or LookupTable from int64 id feeds
// ([4] or [8], sometimes [n, 1] with the result reshaped; a dense table may
// be looked up twice, an id feed may serve two lookups); dense parameters
// (CreateParameter with deterministic initialisers, or the weights Fc
// makes) created outside any device_guard or under a random one, so that
// they live anywhere, in particular on the host while a device reads them;
// then a random DAG (chains and branches) of the ops the conformance suite
// covers (elementwise add / sub / mul with broadcasting, scale, relu,
// sigmoid, tanh, softmax, matmul, mul, fc, reduce_sum / reduce_mean,
// slice, split, concat, reshape, transpose, square_error_cost,
// fill_constant, and now and then a transformer layer op: layer_norm,
// dropout, self_attention), each under a random device_guard of "cpu",
// "sim:0", "sim:1" or none. Some programs are rewritten by AMP (bfloat16,
// or float16 with dynamic loss scaling, whose skipped steps every mode
// must skip alike). The loss is the mean of the sum of every branch end's
// mean (some through square_error_cost), minimised by SGD, Momentum or Adam,
// sometimes with gradient clipping by global norm;
// sometimes a probe after the loss reads a parameter and is only fetched.
// Values are kept small (a tanh follows a value that could grow), so every
// run is finite. The fetches: the loss and up to two of forward values,
// dense gradients, parameters and feeds. Everything is a function of the
// seed; so are the feeds of each step.
//
// Runs (RunTrajectory): a fresh Executor and Scope, the startup program,
// Prepare, then `steps` training steps with a fresh feed map per step
// (GeneratedProgram::Feeds), in one of the modes of ExecMode; the fetches of
// every step and every scope variable at the end, as host bytes. Errors are
// returned as strings (the library never aborts on a run's failure).
#ifndef TANDEM_TESTS_RUNTIME_RANDOM_PROGRAM_H_
#define TANDEM_TESTS_RUNTIME_RANDOM_PROGRAM_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "framework/place/place.h"
#include "framework/program/program_builder.h"
#include "framework/runtime/executor.h"
#include "framework/types/data_type.h"
#include "framework/types/shape.h"

namespace tandem {
namespace differential {

struct RandomProgramOptions {
  // Forward ops drawn after the inputs (the loss and its reductions extra).
  int min_ops = 3;
  int max_ops = 12;
  // Fed float inputs, [batch, input_width] each.
  int min_float_inputs = 1;
  int max_float_inputs = 2;
  int64_t batch = 4;
  int64_t input_width = 6;
  // Embedding tables and their int64 id feeds.
  int max_tables = 2;
  double table_probability = 0.5;   // per table slot
  double sparse_probability = 0.5;  // per table: is_sparse lookups
  // The device_guard strings ops and parameters draw from ("" = none).
  std::vector<std::string> guards = {"", "cpu", "sim:0", "sim:1"};
  // The executor's default place draws from these.
  std::vector<std::string> default_places = {"cpu", "sim:0"};
  // Extra fetches besides the loss: forward values, dense gradients,
  // feeds and (with fetch_parameters) parameters, which each run updates
  // (the fetch is the value after the run's update, as in order).
  int max_extra_fetches = 2;
  bool fetch_parameters = true;
  // A probe: a dense parameter times the loss, after the loss, under the guard
  // of the parameter's first reader or a random one, fetched and read by
  // nothing else (an update in place must still wait for it).
  double probe_probability = 0.3;
  // Gradient clipping by global norm (programs without sparse tables): the
  // squared norms where the gradients are, the factor where the clip runs,
  // read by every update (max_norm 0.05, 1 or 100: clipping every step,
  // some steps or none).
  double clip_probability = 0.3;
  // Per forward op drawn: a transformer layer op instead (layer_norm with
  // its scale and shift parameters, seeded dropout, or causal / full
  // self_attention over the value's rows as [batch, seq, 3 * width]).
  double layer_op_probability = 0.08;
  // Automatic mixed precision (ApplyAmp before the backward): bfloat16, or
  // float16 with dynamic loss scaling (programs without sparse tables; an
  // initial scale of 2^4, 2^16 or 2^24 with growth every 1, 3 or 2000
  // steps: skipped steps, backoffs and growth within a trajectory).
  double amp_probability = 0.2;
};

// One fed variable and how its values are drawn.
struct FeedSpec {
  std::string name;
  DataType dtype = DataType::kFloat32;
  Shape shape;
  int64_t id_range = 0;  // int64 feeds: ids in [0, id_range)
};

struct GeneratedProgram {
  uint64_t seed = 0;
  // Not movable: ProgramBuilder is neither copyable nor movable.
  std::unique_ptr<ProgramBuilder> builder;
  Place default_place;
  std::string optimizer;  // "adam(lr=0.001)"
  std::vector<FeedSpec> feeds;
  std::vector<std::string> feed_names;
  std::vector<std::string> fetches;  // the loss first
  std::string loss;
  // One line per forward step as generated: "tanh@sim:1 (t3) -> t5 [4, 8]";
  // parameters: "param w2 [6, 8] init@cpu".
  std::vector<std::string> log;
  // Feature flags of the program, for the test's statistics.
  bool has_sparse_table = false, has_dense_table = false;
  bool clips_gradients = false;  // gradient clipping by global norm
  bool has_layer_ops = false;    // layer_norm, dropout or self_attention
  // kFloat32 without AMP, else the 16-bit type ApplyAmp used (float16:
  // with dynamic loss scaling).
  DataType amp = DataType::kFloat32;
  // With AMP: whether the updates write the weights' 16-bit working copies
  // (Optimizer::set_working_copies; else the forward casts them).
  bool amp_working_copies = false;
  // float16: the loss scale's variable and its first value (a run that
  // skipped a step or grew the scale ends with another).
  std::string loss_scale_var;
  double initial_loss_scale = 0;
  // A parameter initialised on the host (guard "cpu", or none with a cpu
  // default place) whose first forward reader runs on a device; one whose
  // first reader runs anywhere but where it was initialised.
  bool has_host_parameter_used_on_device = false;
  bool has_parameter_used_elsewhere = false;

  // Fresh host tensors for step `step` (a deterministic function of the seed
  // and the step): floats uniform in [-1, 1), ids uniform in their range.
  FeedMap Feeds(int step) const;
};

// Builds the program of `seed`. Errors: the builder's or the optimizer's
// (a generator bug: the programs are valid by construction).
absl::Status BuildRandomTrainingProgram(uint64_t seed, const RandomProgramOptions& options,
                                        GeneratedProgram* out);

// "seed N: default sim:0, adam(lr=0.001), feeds ..., then one line per
// generated step and the main program's ops with their guard".
std::string ProgramSummary(const GeneratedProgram& program);

enum class ExecMode {
  kInOrder,                 // ExecutorOptions::in_order (the reference)
  kConcurrent1,             // Run, host_workers 1
  kConcurrent2,             // Run, host_workers 2
  kConcurrent4,             // Run, host_workers 4
  kPipelined1,              // RunAsync of step n + 1 before Wait of step n, 1 worker
  kPipelined2,              // ditto, 2 workers
  kPipelined4,              // ditto, 4 workers
  kPipelined3InFlight,      // 3 RunAsync before the first Wait, 2 workers
  kPipelinedReverseWait,    // RunAsync steps n, n + 1; Wait n + 1, then n; 2 workers
  kMixedRunAndRunAsync,     // RunAsync step n, Run step n + 1, Wait n; 2 workers
  kConcurrentDelayed,       // kConcurrent2 with a 200 us sim stream delay
  kPipelinedDelayed,        // kPipelined2 with a 200 us sim stream delay
  kCaptureGraphs,           // capture_graphs (eager on sim), Run
  kPipelinedScheduleTrial,  // kPipelined2, the schedule trial switching in order <-> concurrent
  kPipelinedEagerUpdates,   // kPipelined2 with ExecutorOptions::atomic_updates off
};

// Every mode but kInOrder, in declaration order.
const std::vector<ExecMode>& ComparedModes();
// "pipelined2", "concurrent_delayed", ...
std::string ExecModeName(ExecMode mode);
// The integer in environment variable `name` (the tests' knobs, e.g.
// TANDEM_DIFFERENTIAL_PROGRAMS), or `fallback` when it is unset or not one.
int64_t EnvInt(const char* name, int64_t fallback);
// The mode named `name` (ExecModeName); false if none is.
bool ParseExecMode(const std::string& name, ExecMode* mode);

// What a run of a program left: every fetch of every step and every scope
// variable at the end, as host bytes, with "dtype[shape]@place".
struct Trajectory {
  struct Value {
    std::string meta;  // "float32[4, 6]@sim:0"
    DataType dtype = DataType::kFloat32;
    std::string bytes;  // the host copy's bytes
  };
  std::vector<std::vector<Value>> fetches;  // [step][fetch]
  std::map<std::string, Value> variables;   // scope variables at the end
  std::vector<std::string> fetch_names;
  int steps_done = 0;
  // Whether the fetched tensors changed after their run returned them (they
  // are kept and read again after the last step): "" if none did, else the
  // first, e.g. "step 0 fetch 'w0' (float32[6, 4]@cpu) changed after later
  // runs: ...". A returned tensor sharing a variable's buffer does.
  std::string changed_after_run;
};

// Runs the startup program and `steps` steps of `program` in `mode` on a
// fresh Executor and Scope. On failure returns what was recorded so far and
// sets `*error` ("step 2: <status>"; "startup: ..."; "prepare: ..."); else
// clears it. Each step's fetches are recorded when its Run or Wait returns
// (pipelined: after later runs started). The stream delay of the delayed
// modes is reset to zero before returning.
// `planner`: the executor's placement planner (ExecutorOptions::
// placement_planner; null: the rules alone).
Trajectory RunTrajectory(const GeneratedProgram& program, ExecMode mode, int steps,
                         std::string* error, std::shared_ptr<PlacementPlanner> planner = nullptr);

// "" when `got` is bitwise `expected`; else what differs first: "step 2
// fetch 'tanh_3.tmp_0' (float32[4, 8]@cpu) differs in 3 of 32 elements;
// first 5: 0.123456791 (0x3dfcd6ea) vs expected 0.123456784 (0x3dfcd6e9)",
// "variable 'w0' at the end ...", a missing variable, a different count of
// steps or fetches, a different dtype, shape or place.
// `compare_places` false: values may live elsewhere (a planner moved them),
// their dtypes, shapes and bytes must still match.
std::string CompareTrajectories(const Trajectory& expected, const Trajectory& got,
                                bool compare_places = true);

// "" when every float32 value of `t` is finite; else the first that is not.
std::string FirstNonFinite(const Trajectory& t);

}  // namespace differential
}  // namespace tandem

#endif  // TANDEM_TESTS_RUNTIME_RANDOM_PROGRAM_H_
