// Workload 1: a large embedding table kept on the CPU (device_guard("cpu"))
// while l2_normalize, the loss and SGD run on the default place (GPU 0 when
// present). Prints the loss every --log_every steps, steps/s and the
// host<->device copies per step; --no_guard puts everything on the default
// place for comparison.
//
//   bazel run //examples/embedding_offload -- --rows=1000000 --steps=200
//   bazel run //examples/embedding_offload -- --place=sim:0 --is_sparse --batch_size=64
//   bazel run //examples/embedding_offload -- --profile_steps=50 --trace_out=/tmp/emb.json
//
// Memory caps: --gpu_memory_limit_mb (gpu backend) and --sim_memory_limit_mb
// (sim backend) bound each device's memory. With a cap the table cannot fit
// in, the --no_guard run fails with ResourceExhausted naming the op, the
// variable, the bytes and the device_guard("cpu") hint; the guarded run
// trains within the same cap:
//   bazel run //examples/embedding_offload -- --rows=10000000 --gpu_memory_limit_mb=1024
#include <cstdio>
#include <random>

#include "absl/strings/str_format.h"
#include "examples/common/example_util.h"
#include "examples/common/metrics_log.h"
#include "examples/common/step_pipeline.h"
#include "framework/base/status_macros.h"
#include "framework/runtime/executor.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "models/embedding/embedding_model.h"
#include "profiler/profiler.h"

DEFINE_int64(rows, 10000000, "embedding table rows");
DEFINE_int64(embedding_dim, 150, "embedding width");
DEFINE_int64(batch_size, 1,
             "ids per step (1: id 128 every step; more: random ids drawn each step)");
DEFINE_int32(steps, 100, "training steps");
DEFINE_int32(log_every, 10, "print every N steps");
DEFINE_double(lr, 0.001, "SGD learning rate");
DEFINE_string(place, "",
              "default place: gpu:N, sim:N or cpu (default: gpu:0 if present, else cpu)");
DEFINE_bool(no_guard, false, "no device_guard: the table also lives on the default place");
DEFINE_bool(is_sparse, false, "sparse (SelectedRows) table gradient: update only looked-up rows");
DEFINE_bool(print_program, false, "print the main program");
DEFINE_uint64(seed, 1, "seed for the random ids");
DEFINE_int32(profile_steps, 0,
             "profile this many training steps (after one warm-up step) and print the "
             "profiler's report, then train on");
DEFINE_string(trace_out, "", "with --profile_steps: also write a Chrome trace to this file");
DEFINE_string(metrics_out, "",
              "write one JSON line per progress line to this file (loss, steps/s, examples/s, "
              "copies per step); tools/plot_metrics.py draws it");

namespace tandem {
namespace {

absl::Status Main() {
  ASSIGN_OR_RETURN(Place place, ChooseDefaultPlace(FLAGS_place));
  if (FLAGS_steps < 0 || FLAGS_log_every <= 0 || FLAGS_profile_steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--steps and --profile_steps must be >= 0 and --log_every > 0, got %d, "
                        "%d and %d",
                        FLAGS_steps, FLAGS_profile_steps, FLAGS_log_every));
  }
  if (FLAGS_rows <= 0 || FLAGS_embedding_dim <= 0 || FLAGS_batch_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--rows, --embedding_dim and --batch_size must be > 0, got %d, %d and %d",
                        FLAGS_rows, FLAGS_embedding_dim, FLAGS_batch_size));
  }
  if (!FLAGS_trace_out.empty() && FLAGS_profile_steps == 0) {
    return absl::InvalidArgumentError("--trace_out needs --profile_steps");
  }
  RETURN_IF_ERROR(CheckPlacementFlags());
  EmbeddingConfig config;
  config.rows = FLAGS_rows;
  config.dim = FLAGS_embedding_dim;
  config.batch = FLAGS_batch_size;
  config.learning_rate = FLAGS_lr;
  config.table_on_cpu = !FLAGS_no_guard && !AutoPlaceRequested();  // --auto_place decides itself
  config.is_sparse = FLAGS_is_sparse;
  ProgramBuilder builder;
  ASSIGN_OR_RETURN(EmbeddingModel model, BuildEmbeddingModel(config, &builder));
  if (FLAGS_print_program) std::printf("%s", builder.main_program().DebugString().c_str());

  std::printf(
      "embedding %lld x %lld float32 (%.2f GiB) on %s, rest on %s, batch %lld, %s gradient, "
      "executor: %s\n",
      static_cast<long long>(FLAGS_rows), static_cast<long long>(FLAGS_embedding_dim),
      FLAGS_rows * FLAGS_embedding_dim * 4.0 / (1 << 30),
      AutoPlaceRequested() ? "auto"
      : FLAGS_no_guard     ? place.ToString().c_str()
                           : "cpu",
      place.ToString().c_str(), static_cast<long long>(FLAGS_batch_size),
      FLAGS_is_sparse ? "sparse" : "dense", ExecutorMode(ExampleExecutorOptions()).c_str());
  std::fflush(stdout);
  Executor exe(place, ExampleExecutorOptions());
  Scope scope;
  Stopwatch init;
  RETURN_IF_ERROR(exe.Run(builder.startup_program(), &scope).status());
  std::printf("initialised in %.2f s\n", init.Seconds());
  ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan,
                   exe.Prepare(builder.main_program(), scope, {model.ids.name}, {model.loss.name}));
  RETURN_IF_ERROR(ReportPlacement(*plan));

  std::unique_ptr<MetricsLog> metrics;
  if (!FLAGS_metrics_out.empty()) {
    ASSIGN_OR_RETURN(metrics, MetricsLog::Open(FLAGS_metrics_out, /*append=*/false));
  }
  std::mt19937_64 rng(FLAGS_seed);
  std::uniform_int_distribution<int64_t> pick(0, FLAGS_rows - 1);
  std::vector<double> ids(FLAGS_batch_size,
                          static_cast<double>(std::min<int64_t>(128, FLAGS_rows - 1)));
  bool profiling = FLAGS_profile_steps > 0 && FLAGS_steps > 0;
  if (profiling) {
    RETURN_IF_ERROR(profiler::StartProfiler("All", /*warmup_runs=*/1));
    RETURN_IF_ERROR(profiler::AttachPlan(*plan));
  }
  double first = -1, last = 0;
  RunStats stats;
  Stopwatch clock;
  int timed_steps = 0;
  auto next_feeds = [&]() -> FeedMap {
    if (FLAGS_batch_size > 1) {
      for (double& id : ids) id = static_cast<double>(pick(rng));
    }
    Tensor ids_t =
        Tensor::Allocate(CpuAllocator::Default(), DataType::kInt64, {FLAGS_batch_size}).value();
    for (int64_t i = 0; i < FLAGS_batch_size; ++i) {
      ids_t.data<int64_t>()[i] = static_cast<int64_t>(ids[i]);
    }
    return {{model.ids.name, ids_t}};
  };
  // Step n + 1 runs while step n's loss is read (Executor::RunAsync),
  // except after the first step (not timed) and the profile's last.
  StepPipeline steps(&exe, plan.get(), &scope);
  if (FLAGS_steps > 0) RETURN_IF_ERROR(steps.Start(next_feeds()));
  for (int step = 0; step < FLAGS_steps; ++step) {
    const bool more = step + 1 < FLAGS_steps;
    const bool observed = step == 0 || (profiling && (step == FLAGS_profile_steps || !more));
    if (!observed && more) RETURN_IF_ERROR(steps.Start(next_feeds()));
    ASSIGN_OR_RETURN(std::vector<Tensor> out, steps.Next(&stats));
    last = out[0].data<float>()[0];
    if (first < 0) {
      first = last;
      clock = Stopwatch();  // the first step (allocations, caches) is not timed
      ResetPeakMemory(place);
    } else {
      ++timed_steps;
    }
    if (profiling && (step == FLAGS_profile_steps || step + 1 == FLAGS_steps)) {
      std::printf("profile of steps 1-%d (step 0 was warm-up):\n", step);
      RETURN_IF_ERROR(profiler::StopProfiler("total", FLAGS_trace_out));
      profiling = false;
    }
    if (step % FLAGS_log_every == 0 || step + 1 == FLAGS_steps) {
      const double steps_per_s = timed_steps > 0 ? timed_steps / clock.Seconds() : 0.0;
      std::printf(
          "step %5d  loss %.6f  %8.1f steps/s  copies/step: H2D %d (%lld B), D2H %d "
          "(%lld B), fetch %d\n",
          step, last, steps_per_s, stats.copies_h2d, static_cast<long long>(stats.bytes_h2d),
          stats.copies_d2h, static_cast<long long>(stats.bytes_d2h), stats.fetch_copies);
      std::fflush(stdout);
      if (metrics != nullptr) {
        RETURN_IF_ERROR(metrics->Write(MetricsRecord("train")
                                           .Add("step", step)
                                           .Add("loss", last)
                                           .Add("steps_per_s", steps_per_s)
                                           .Add("examples_per_s", steps_per_s * FLAGS_batch_size)
                                           .AddCopies(stats)));
      }
    }
    if (observed && more) RETURN_IF_ERROR(steps.Start(next_feeds()));
  }
  // Each step draws fresh random rows: the loss can only fall once steps
  // revisit rows, i.e. when the run looks up about as many ids as the table
  // has rows. A shorter run on a large table (10M rows: 2,400 steps of 4096)
  // does not check convergence and says so.
  const bool can_learn =
      static_cast<double>(FLAGS_steps) * FLAGS_batch_size >= static_cast<double>(FLAGS_rows) ||
      FLAGS_batch_size == 1;
  std::printf("loss %.6f -> %.6f over %d steps (%s)\n", first, last, FLAGS_steps,
              last < first ? "decreasing"
              : can_learn  ? "NOT decreasing"
                           : "not checked: fewer ids looked up than the table has rows");
  std::printf("%s\n", EstimatedVersusMeasured(
                          *plan, place, timed_steps > 0 ? clock.Seconds() * 1e6 / timed_steps : 0,
                          /*pipelined=*/true)
                          .c_str());
  if (FLAGS_steps > 1 && can_learn && !(last < first)) {
    return absl::InternalError("the loss did not decrease");
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace tandem

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "trains a large embedding table kept in host memory (device_guard(\"cpu\")) with the\n"
      "  normalisation, loss and SGD on the GPU (or --place), and prints the loss, steps/s and\n"
      "  the host<->device copies per step; --no_guard puts the table on the GPU too\n"
      "usage: embedding_offload [--rows=10000000] [--embedding_dim=150] [--batch_size=1]\n"
      "  [--is_sparse] [--steps=100] [--place=gpu:0|cpu|sim:0] [--profile_steps=N\n"
      "  [--trace_out=FILE.json]] [--metrics_out=FILE.jsonl] ...\n"
      "  memory caps: --gpu_memory_limit_mb=N (gpu), --sim_memory_limit_mb=N (sim); with a cap\n"
      "  the table does not fit in, --no_guard fails with ResourceExhausted and the guarded\n"
      "  run (table under device_guard(\"cpu\")) trains within it; --auto_place\n"
      "  [--memory_budget_mb=N] builds it without device_guard and lets the auto placement\n"
      "  decide (--print_placement says why, --placement_dot=FILE draws it)\n"
      "--helpfull lists every flag (the executor's and backends' too)");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  absl::Status s = tandem::Main();
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
