// Pieces shared by the files of Tandem's benchmark binary (tandem_benchmark).
//
//   // my_benchmark.cc, listed in srcs of //benchmarks:tandem_benchmark
//   void BM_Thing(benchmark::State& state, Place place) { ... }
//   void RegisterThing() {
//     for (const Place& place : bench::BenchPlaces()) {
//       benchmark::RegisterBenchmark("thing/...", BM_Thing, place);
//     }
//   }
//   TANDEM_BENCHMARK_REGISTRAR(RegisterThing);
//
// Registrars run from main() once flags are parsed and the backends are
// registered, so they may query the DeviceRegistry. Not thread-safe; the
// binary registers everything before it runs anything.
#ifndef TANDEM_BENCHMARKS_BENCH_UTIL_H_
#define TANDEM_BENCHMARKS_BENCH_UTIL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "benchmark/benchmark.h"
#include "framework/program/program_builder.h"
#include "framework/runtime/executor.h"
#include "framework/tensor/scope.h"
#include "models/embedding/embedding_model.h"

namespace tandem {
namespace bench {

// The integer in environment variable `name`, or `fallback` when unset.
int64_t EnvInt(const char* name, int64_t fallback);

// TANDEM_BENCH_PLACES (default "gpu:0,sim:0,cpu"), keeping the places whose
// device exists on this machine.
std::vector<Place> BenchPlaces();

// Marks the benchmark as failed with the status text.
void Fail(benchmark::State& state, const absl::Status& s);

// Copies per iteration as counters (h2d_per_iter, d2h_per_iter, sync_copies_per_iter).
void ReportCopies(benchmark::State& state, const RunStats& stats);

// `options` with the binary's executor flags applied, the one place they are
// read (every Prepared goes through it): capture_graphs set with --cuda_graph
// (every row then captures its steady-state step where it can; rows whose
// plan cannot be captured log why once and run eagerly) and in_order set
// with --in_order (every row runs its steps one at a time in program order;
// without it rows run concurrently unless they ask for in_order themselves).
ExecutorOptions WithFlags(ExecutorOptions options);

// Records the flags' executor mode in the output's context ("executor":
// "concurrent" or "in-order", "cuda_graph": "true" or "false"; the JSON
// output's "context" too).
void AddExecutorContext();

// Runs `step` (one iteration as the row times it: Run, or RunAsync and the
// wait for the run before) until `plan`'s schedule trial has chosen
// (ExecutorOptions::schedule_trial), so that the timed iterations are the
// steady state a long training run reaches; at most the trial's longest
// length (a plan it does not time runs that many). Nothing with --in_order
// or --cuda_graph. Returns the first failed step's error.
absl::Status SettleSchedule(const Plan& plan, const std::function<absl::Status()>& step);

// With --profile: a profiler session over every row that runs (give one
// row with --benchmark_filter), its report printed at the end (sorted by
// total time) and, with --trace_out=FILE, its Chrome trace written there.
// Profiling adds a span per op and copy, so the rows' times are not the
// unprofiled ones. Both return the profiler's error, if any.
absl::Status StartProfilingIfAsked();
absl::Status StopProfilingIfAsked();

// A program builder, an executor on `place` and a scope: the usual setup of
// one benchmark. Owns all three. The executor's options are WithFlags(options).
struct Prepared {
  ProgramBuilder builder;
  Executor exe;
  Scope scope;
  explicit Prepared(Place p, ExecutorOptions options = {}) : exe(p, WithFlags(options)) {}
};

// Builds the embedding workload (models/embedding) of `config`
// into p->builder, runs its startup program and prepares its main program
// with the ids as the only feed and no fetches; *model gets its variables.
absl::StatusOr<std::unique_ptr<Plan>> PrepareEmbeddingWorkload(const EmbeddingConfig& config,
                                                               Prepared* p, EmbeddingModel* model);

using Registrar = void (*)();
// Adds `registrar` to the list RegisterAll() runs; returns true (for the macro).
bool AddRegistrar(Registrar registrar);
// Runs every registrar once, in file link order.
void RegisterAll();

}  // namespace bench
}  // namespace tandem

#define TANDEM_BENCHMARK_REGISTRAR(fn) \
  static const bool tandem_bench_registered_##fn = ::tandem::bench::AddRegistrar(fn)

#endif  // TANDEM_BENCHMARKS_BENCH_UTIL_H_
