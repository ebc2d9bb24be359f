// Trains a click-through-rate model on synthetic clicks (ctr_data.h): one
// embedding table per sparse id field kept on the CPU with sparse updates
// (device_guard("cpu"), is_sparse), the dense MLP on the default place (GPU 0
// when present, else the CPU). Prints the training loss and, on a held-out
// set, the logloss and AUC (computed on the host from the predicted click
// probabilities) as they improve, next to the AUC of the generator's own
// hidden weights (the best a model can do).
//
//   bazel run //examples/ctr                      # 10000 steps of 512 examples
//   bazel run //examples/ctr -- --place=sim:0 --vocab_sizes=1000,1000,1000,1000 --steps=300
//   bazel run //examples/ctr -- --no_guard        # the tables on the default place too
//   bazel run //examples/ctr -- --checkpoint_dir=/tmp/ctr --steps=4000   # then --resume
//   bazel run //examples/ctr -- --profile_steps=100 --trace_out=/tmp/ctr.json
//   bazel run //examples/ctr -- --data_parallel=2   # the MLP on gpu:0 and gpu:1, tables shared
//   mpirun -np 2 bazel-bin/examples/ctr/ctr --mpi   # a process per GPU, tables per process
//
// With --data_parallel=N (framework/parallel/data_parallel.h) the MLP is
// replicated over N devices of --place's type, each replica taking 1/N of
// every batch, its gradients averaged by all-reduces; the tables exist
// once on the host, their sparse gradients gathered from every replica and
// applied in one update. With --mpi each process of an mpirun job is one
// replica and keeps its own copy of the tables, which stay identical (every
// process applies the same gathered update); rank 0 prints and evaluates.
//
// Checkpoints (examples/common/trainer_checkpoint.h) hold the tables, the
// MLP, Adam's state and the step; one is written every --checkpoint_every
// steps and at the end, and --resume continues from it with the step an
// uninterrupted run would take next (the data stream is indexed by step).
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "examples/common/example_util.h"
#include "examples/common/metrics_log.h"
#include "examples/common/prefetcher.h"
#include "examples/common/progress.h"
#include "examples/common/replicas.h"
#include "examples/common/step_pipeline.h"
#include "examples/common/trainer_checkpoint.h"
#include "examples/ctr/ctr_data.h"
#include "examples/ctr/metrics.h"
#include "framework/amp/amp.h"
#include "framework/base/status_macros.h"
#include "framework/parallel/data_parallel.h"
#include "framework/runtime/executor.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "models/ctr/ctr_model.h"
#include "profiler/profiler.h"

DEFINE_string(vocab_sizes, "100000,200000,500000,1000000",
              "ids per sparse field (one embedding table each), comma-separated");
DEFINE_int64(embedding_dim, 16, "embedding width");
DEFINE_string(hidden, "64,32", "hidden fc sizes of the dense MLP, comma-separated");
DEFINE_int64(steps, 10000, "training steps in all, resumed ones included");
DEFINE_int64(batch_size, 512, "examples per step");
DEFINE_double(lr, 0.002, "Adam learning rate");
DEFINE_string(place, "",
              "default place: gpu:N, sim:N or cpu (default: gpu:0 if present, else cpu)");
DEFINE_bool(no_guard, false, "no device_guard: the tables also live on the default place");
DEFINE_string(amp, "none",
              "mixed precision: none, bf16 or fp16 (the MLP's fc layers in 16 bits, float32 master "
              "weights)");
DEFINE_bool(is_sparse, true,
            "sparse (SelectedRows) table gradients: update only looked-up rows; "
            "--is_sparse=false: dense gradients, slow for big tables");
DEFINE_int64(eval_examples, 20000, "held-out examples for logloss and AUC");
DEFINE_int64(eval_every, 1000, "evaluate on the held-out set every N steps");
DEFINE_int32(log_every, 500, "print the training loss every N steps");
DEFINE_int64(seed, 1, "seed of the data (hidden weights, draws) and of the initial parameters");
DEFINE_double(weight_std, 0.8, "standard deviation of the ids' hidden weights");
DEFINE_double(noise_std, 0.5, "standard deviation of the per-example logit noise");
DEFINE_string(checkpoint_dir, "",
              "save a checkpoint here every --checkpoint_every steps and at the end");
DEFINE_int64(checkpoint_every, 1000, "with --checkpoint_dir: steps between checkpoints");
DEFINE_bool(resume, false, "continue from the checkpoint in --checkpoint_dir");
DEFINE_int32(profile_steps, 0,
             "profile this many training steps (after one warm-up step) and print the "
             "profiler's report, then train on");
DEFINE_string(trace_out, "", "with --profile_steps: also write a Chrome trace to this file");
DEFINE_int32(data_parallel, 1,
             "replicas of the MLP: N devices of --place's type (gpu:0..N-1, sim:0..N-1), each "
             "on 1/N of every batch, the tables shared on the host; 1: no replicas");
DEFINE_int64(bucket_mb, 25, "with --data_parallel or --mpi: MiB of gradients per all-reduce");
DEFINE_bool(mpi, false,
            "one replica per process of an mpirun job (mpirun -np N ctr --mpi), the tables kept "
            "in every process; replaces --data_parallel");
DEFINE_string(metrics_out, "",
              "write one JSON line per progress line and per held-out evaluation to this file "
              "(loss, examples/s, copies per step, logloss, AUC); tools/plot_metrics.py draws it");

namespace tandem {
namespace {

constexpr int64_t kEvalBatch = 4096;  // held-out examples per evaluation step

absl::StatusOr<std::vector<int64_t>> ParseSizes(const char* flag, const std::string& text) {
  std::vector<int64_t> sizes;
  for (absl::string_view s : absl::StrSplit(text, ',')) {
    int64_t v;
    if (!absl::SimpleAtoi(s, &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, " must be comma-separated integers, got '", text, "'"));
    }
    sizes.push_back(v);
  }
  return sizes;
}

// The ids and labels of `ex` as the model's feeds (host tensors).
FeedMap Feeds(const CtrModel& model, const CtrExamples& ex) {
  FeedMap feeds;
  const int64_t n = static_cast<int64_t>(ex.labels.size());
  for (size_t f = 0; f < model.ids.size(); ++f) {
    feeds[model.ids[f].name] = Tensor::FromVector<int64_t>(Shape({n}), ex.ids[f]);
  }
  feeds[model.label.name] = Tensor::FromVector<int64_t>(Shape({n}), ex.labels);
  return feeds;
}

struct HeldOutMetrics {
  double logloss = 0, auc = 0;
};

// Logloss and AUC of the model's click probabilities on the held-out set.
absl::StatusOr<HeldOutMetrics> Evaluate(const CtrModel& model, const CtrExamples& held_out,
                                        Executor* exe, Plan* plan, Scope* scope) {
  const int64_t n = static_cast<int64_t>(held_out.labels.size());
  std::vector<double> p(n);
  for (int64_t first = 0; first < n; first += kEvalBatch) {
    const int64_t count = std::min(kEvalBatch, n - first);
    CtrExamples part;
    for (const auto& ids : held_out.ids) {
      part.ids.emplace_back(ids.begin() + first, ids.begin() + first + count);
    }
    part.labels.assign(held_out.labels.begin() + first, held_out.labels.begin() + first + count);
    ASSIGN_OR_RETURN(std::vector<Tensor> out, exe->Run(plan, scope, Feeds(model, part)));
    const float* probs = out[0].data<float>();  // [count, 2]
    for (int64_t i = 0; i < count; ++i) p[first + i] = probs[2 * i + 1];
  }
  HeldOutMetrics m;
  ASSIGN_OR_RETURN(m.logloss, LogLoss(p, held_out.labels));
  ASSIGN_OR_RETURN(m.auc, Auc(p, held_out.labels));
  return m;
}

// Training with --data_parallel or --mpi: DataParallel::Step on every
// global batch; rank 0's scope, which holds every parameter of the
// one-device program, is the one evaluated (by the main process).
absl::Status TrainDataParallel(const Place& place, ProgramBuilder& builder, const CtrModel& model,
                               const CtrDataset& data) {
  if (FLAGS_resume || !FLAGS_checkpoint_dir.empty() || FLAGS_profile_steps > 0 ||
      !FLAGS_metrics_out.empty() || AutoPlaceRequested()) {
    return absl::InvalidArgumentError(
        "--data_parallel and --mpi do not take --checkpoint_dir, --resume, --profile_steps, "
        "--metrics_out or --auto_place");
  }
  ASSIGN_OR_RETURN(DataParallelOptions o,
                   ExampleDataParallelOptions(place, FLAGS_data_parallel, FLAGS_bucket_mb,
                                              ExampleExecutorOptions()));
  std::vector<std::string> feeds;
  for (const Var& ids : model.ids) feeds.push_back(ids.name);
  feeds.push_back(model.label.name);
  Stopwatch init;
  ASSIGN_OR_RETURN(std::unique_ptr<DataParallel> dp,
                   DataParallel::Create(builder.main_program(), builder.startup_program(), feeds,
                                        {model.loss.name}, o));
  RETURN_IF_ERROR(dp->Initialize());
  std::vector<std::string> names;
  for (const Place& p : o.places) names.push_back(p.ToString());
  std::printf(
      "data parallel: %d replicas on %s%s, %zu all-reduces per step, %zu shared variables\n",
      dp->size(), absl::StrJoin(names, ", ").c_str(),
      o.processes != nullptr ? absl::StrCat(" (rank ", dp->first_rank(), " of the mpi job)").c_str()
                             : "",
      dp->programs().buckets.size(), dp->programs().shared.size());
  ExecutorOptions eval_options = ExampleExecutorOptions(/*auto_moves_persistables=*/false);
  Executor eval_exe(o.places[0], eval_options);
  ASSIGN_OR_RETURN(std::unique_ptr<Plan> eval_plan,
                   eval_exe.Prepare(model.eval, *dp->scope(0), feeds, {model.probabilities.name}));
  const CtrExamples held_out = data.Examples(CtrStream::kHeldOut, 0, FLAGS_eval_examples);
  ASSIGN_OR_RETURN(double oracle_auc, Auc(held_out.oracle_logits, held_out.labels));
  HeldOutMetrics first, last;
  if (IsMainProcess()) {
    ASSIGN_OR_RETURN(first, Evaluate(model, held_out, &eval_exe, eval_plan.get(), dp->scope(0)));
    std::printf("initialised in %.2f s; AUC of the hidden weights (best possible) %.4f\n",
                init.Seconds(), oracle_auc);
    std::printf("step %6d  held-out logloss %.4f  AUC %.4f\n", 0, first.logloss, first.auc);
  }
  last = first;
  TrainingProgress progress(FLAGS_steps);
  double loss_sum = 0;
  int64_t loss_count = 0;
  for (int64_t step = 1; step <= FLAGS_steps; ++step) {
    ASSIGN_OR_RETURN(
        std::vector<std::vector<Tensor>> out,
        dp->Step(Feeds(model, data.Examples(CtrStream::kTrain, (step - 1) * FLAGS_batch_size,
                                            FLAGS_batch_size))));
    for (const std::vector<Tensor>& rank : out) loss_sum += rank[0].data<float>()[0] / out.size();
    ++loss_count;
    progress.Step(FLAGS_batch_size);
    if (!IsMainProcess()) continue;
    if (step % FLAGS_log_every == 0 || step == FLAGS_steps) {
      std::printf("step %6lld  loss %.4f  %s\n", static_cast<long long>(step),
                  loss_sum / loss_count, progress.Summary().c_str());
      loss_sum = 0;
      loss_count = 0;
    }
    if (step % FLAGS_eval_every == 0 || step == FLAGS_steps) {
      ASSIGN_OR_RETURN(last, Evaluate(model, held_out, &eval_exe, eval_plan.get(), dp->scope(0)));
      std::printf("step %6lld  held-out logloss %.4f  AUC %.4f\n", static_cast<long long>(step),
                  last.logloss, last.auc);
    }
    std::fflush(stdout);
  }
  if (!IsMainProcess()) return absl::OkStatus();
  std::printf("held-out AUC %.4f -> %.4f (best possible %.4f), logloss %.4f -> %.4f\n", first.auc,
              last.auc, oracle_auc, first.logloss, last.logloss);
  if (!(last.auc > first.auc && last.logloss < first.logloss)) {
    return absl::InternalError("the held-out AUC and logloss did not improve");
  }
  return absl::OkStatus();
}

absl::Status Train() {
  ASSIGN_OR_RETURN(Place place, ChooseDefaultPlace(FLAGS_place));
  RETURN_IF_ERROR(CheckPlacementFlags());
  if (FLAGS_steps < 1 || FLAGS_batch_size < 1 || FLAGS_eval_examples < 2 || FLAGS_eval_every < 1 ||
      FLAGS_log_every < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--steps, --batch_size, --eval_every and --log_every must be >= 1 and --eval_examples "
        ">= 2, got ",
        FLAGS_steps, ", ", FLAGS_batch_size, ", ", FLAGS_eval_every, ", ", FLAGS_log_every, ", ",
        FLAGS_eval_examples));
  }
  if (FLAGS_checkpoint_every < 1 || FLAGS_profile_steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--checkpoint_every must be >= 1 and --profile_steps >= 0, got ",
                     FLAGS_checkpoint_every, " and ", FLAGS_profile_steps));
  }
  if (!FLAGS_trace_out.empty() && FLAGS_profile_steps == 0) {
    return absl::InvalidArgumentError("--trace_out needs --profile_steps");
  }
  if (FLAGS_resume && FLAGS_checkpoint_dir.empty()) {
    return absl::InvalidArgumentError("--resume needs --checkpoint_dir");
  }
  const int replicas = Replicas(FLAGS_data_parallel);
  if (FLAGS_data_parallel < 1 || FLAGS_bucket_mb < 1 || FLAGS_batch_size % replicas != 0 ||
      (ExampleMpi() != nullptr && FLAGS_data_parallel != 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--data_parallel and --bucket_mb must be >= 1, --batch_size a multiple of the replicas "
        "and --mpi without --data_parallel (mpirun -np N sets N), got ",
        FLAGS_data_parallel, ", ", FLAGS_bucket_mb, ", ", FLAGS_batch_size, " for ", replicas,
        " replicas"));
  }
  CtrDataConfig data_config;
  ASSIGN_OR_RETURN(data_config.vocab_sizes, ParseSizes("vocab_sizes", FLAGS_vocab_sizes));
  data_config.weight_std = FLAGS_weight_std;
  data_config.noise_std = FLAGS_noise_std;
  data_config.seed = static_cast<uint64_t>(FLAGS_seed);
  ASSIGN_OR_RETURN(CtrDataset data, CtrDataset::Create(data_config));

  CtrModelConfig config;
  config.vocab_sizes = data_config.vocab_sizes;
  config.embedding_dim = FLAGS_embedding_dim;
  ASSIGN_OR_RETURN(config.hidden, ParseSizes("hidden", FLAGS_hidden));
  config.tables_on_cpu = !FLAGS_no_guard && !AutoPlaceRequested();  // --auto_place decides itself
  config.is_sparse = FLAGS_is_sparse;
  config.seed = FLAGS_seed;
  ASSIGN_OR_RETURN(config.amp, ParseAmpFlag(FLAGS_amp));
  Adam adam(FLAGS_lr);
  ProgramBuilder builder;
  ASSIGN_OR_RETURN(CtrModel model, BuildCtrModel(config, &adam, &builder));

  int64_t table_rows = 0;
  for (int64_t v : config.vocab_sizes) table_rows += v;
  if (IsMainProcess())
    std::printf(
        "ctr: %zu fields [%s] x dim %lld (%.1f MiB of tables, %s gradients) on %s, MLP "
        "[%s] on %s%s, batch %lld, Adam lr %g, executor: %s\n",
        config.vocab_sizes.size(), absl::StrJoin(config.vocab_sizes, ", ").c_str(),
        static_cast<long long>(config.embedding_dim),
        table_rows * config.embedding_dim * 4.0 / (1 << 20), config.is_sparse ? "sparse" : "dense",
        config.tables_on_cpu ? "cpu" : place.ToString().c_str(),
        absl::StrJoin(config.hidden, ", ").c_str(), place.ToString().c_str(),
        config.amp.has_value() ? absl::StrCat(" in ", DataTypeName(*config.amp)).c_str() : "",
        static_cast<long long>(FLAGS_batch_size), FLAGS_lr,
        ExecutorMode(ExampleExecutorOptions()).c_str());
  std::fflush(stdout);
  if (replicas > 1 || ExampleMpi() != nullptr) {
    return TrainDataParallel(place, builder, model, data);
  }

  ExecutorOptions options = ExampleExecutorOptions();
  for (const Var& ids : model.ids) options.feed_shapes[ids.name] = Shape({FLAGS_batch_size});
  options.feed_shapes[model.label.name] = Shape({FLAGS_batch_size});
  Executor exe(place, options);
  // Evaluation: batches of kEvalBatch, and (under --auto_place) the
  // parameters stay where the training plan keeps them.
  ExecutorOptions eval_options = ExampleExecutorOptions(/*auto_moves_persistables=*/false);
  for (const auto& [name, shape] : options.feed_shapes)
    eval_options.feed_shapes[name] = Shape({kEvalBatch});
  Executor eval_exe(place, eval_options);
  Scope scope;
  Stopwatch init;
  RETURN_IF_ERROR(exe.Run(builder.startup_program(), &scope).status());
  int64_t first_step = 0;  // steps already taken
  if (FLAGS_resume) {
    ASSIGN_OR_RETURN(first_step,
                     ResumeTrainerCheckpoint(builder.main_program(), FLAGS_checkpoint_dir, &scope));
    std::printf("resumed from %s after step %lld\n",
                TrainerCheckpointPath(FLAGS_checkpoint_dir).c_str(),
                static_cast<long long>(first_step));
  }
  std::vector<std::string> feeds;
  for (const Var& ids : model.ids) feeds.push_back(ids.name);
  feeds.push_back(model.label.name);
  ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan,
                   exe.Prepare(builder.main_program(), scope, feeds, {model.loss.name}));
  RETURN_IF_ERROR(ReportPlacement(*plan));
  RETURN_IF_ERROR(MovePersistablesHome(plan->placed(), &scope));
  ASSIGN_OR_RETURN(std::unique_ptr<Plan> eval_plan,
                   eval_exe.Prepare(model.eval, scope, feeds, {model.probabilities.name}));

  const CtrExamples held_out = data.Examples(CtrStream::kHeldOut, 0, FLAGS_eval_examples);
  ASSIGN_OR_RETURN(double oracle_auc, Auc(held_out.oracle_logits, held_out.labels));
  double clicks = 0;
  for (int64_t l : held_out.labels) clicks += l;
  std::unique_ptr<MetricsLog> metrics;
  if (!FLAGS_metrics_out.empty()) {
    ASSIGN_OR_RETURN(metrics, MetricsLog::Open(FLAGS_metrics_out, /*append=*/FLAGS_resume));
  }
  auto log_eval = [&](int64_t step, const HeldOutMetrics& m) -> absl::Status {
    std::printf("step %6lld  held-out logloss %.4f  AUC %.4f\n", static_cast<long long>(step),
                m.logloss, m.auc);
    if (metrics == nullptr) return absl::OkStatus();
    return metrics->Write(
        MetricsRecord("eval").Add("step", step).Add("logloss", m.logloss).Add("auc", m.auc));
  };
  ASSIGN_OR_RETURN(HeldOutMetrics first,
                   Evaluate(model, held_out, &eval_exe, eval_plan.get(), &scope));
  std::printf(
      "initialised in %.2f s; held-out set: %lld examples, click rate %.3f, AUC of the "
      "hidden weights (best possible) %.4f\n",
      init.Seconds(), static_cast<long long>(FLAGS_eval_examples), clicks / FLAGS_eval_examples,
      oracle_auc);
  RETURN_IF_ERROR(log_eval(first_step, first));
  std::fflush(stdout);

  if (first_step >= FLAGS_steps) {
    std::printf("nothing to do: the checkpoint is at step %lld of %lld\n",
                static_cast<long long>(first_step), static_cast<long long>(FLAGS_steps));
    return absl::OkStatus();
  }
  TrainingProgress progress(FLAGS_steps - first_step);
  HeldOutMetrics last = first;
  double loss_sum = 0;
  int64_t loss_count = 0;
  RunStats stats;
  bool profiling = FLAGS_profile_steps > 0;
  if (profiling) {
    RETURN_IF_ERROR(profiler::StartProfiler("All", /*warmup_runs=*/1));
    RETURN_IF_ERROR(profiler::AttachPlan(*plan));
  }
  // Step n + 1 runs while the trainer reads step n's loss, except after
  // steps whose end the trainer observes (evaluation, checkpoint, profile).
  StepPipeline steps(&exe, plan.get(), &scope);
  // Each step's batch is drawn on a thread of its own, two steps ahead, so
  // that the thread dispatching the steps does not draw them.
  Prefetcher<FeedMap> batches(first_step + 1, FLAGS_steps, /*depth=*/2, [&](int64_t step) {
    return Feeds(model,
                 data.Examples(CtrStream::kTrain, (step - 1) * FLAGS_batch_size, FLAGS_batch_size));
  });
  auto feeds_for = [&](int64_t step) { return batches.Take(step); };
  RETURN_IF_ERROR(steps.Start(feeds_for(first_step + 1)));
  // The measured step time: training steps after the first, evaluations and
  // checkpoints left out (the estimate is the training plan's step).
  Stopwatch train_clock;
  std::string
      memory_line;  // estimated vs measured, of the training steps since the last evaluation
  double untimed_s = 0;
  int64_t timed_steps = 0;
  for (int64_t step = first_step + 1; step <= FLAGS_steps; ++step) {
    const bool observed = step == FLAGS_steps || step % FLAGS_eval_every == 0 ||
                          (!FLAGS_checkpoint_dir.empty() && step % FLAGS_checkpoint_every == 0) ||
                          (profiling && step - first_step == FLAGS_profile_steps + 1);
    if (!observed) RETURN_IF_ERROR(steps.Start(feeds_for(step + 1)));
    ASSIGN_OR_RETURN(std::vector<Tensor> out, steps.Next(&stats));
    if (step == first_step + 1) {
      ResetPeakMemory(place);  // measured peaks: steady steps
      train_clock = Stopwatch();
    } else {
      ++timed_steps;
    }
    loss_sum += out[0].data<float>()[0];
    ++loss_count;
    progress.Step(FLAGS_batch_size);
    if (profiling && (step - first_step == FLAGS_profile_steps + 1 || step == FLAGS_steps)) {
      std::printf("profile of training steps %lld-%lld (step %lld was warm-up):\n",
                  static_cast<long long>(first_step + 2), static_cast<long long>(step),
                  static_cast<long long>(first_step + 1));
      RETURN_IF_ERROR(profiler::StopProfiler("total", FLAGS_trace_out));
      profiling = false;
    }
    if (step % FLAGS_log_every == 0 || step == FLAGS_steps) {
      std::printf("step %6lld  loss %.4f  %s  copies/step: H2D %d (%lld B), D2H %d (%lld B)%s\n",
                  static_cast<long long>(step), loss_sum / loss_count, progress.Summary().c_str(),
                  stats.copies_h2d, static_cast<long long>(stats.bytes_h2d), stats.copies_d2h,
                  static_cast<long long>(stats.bytes_d2h), GraphLaunchesPerStep(stats).c_str());
      if (metrics != nullptr) {
        RETURN_IF_ERROR(metrics->Write(MetricsRecord("train")
                                           .Add("step", step)
                                           .Add("loss", loss_sum / loss_count)
                                           .Add("examples_per_s", progress.ExamplesPerSecond())
                                           .AddCopies(stats)));
      }
      loss_sum = 0;
      loss_count = 0;
    }
    if (step == FLAGS_steps) {  // the training steps' memory and time, the evaluations apart
      const double step_us =
          timed_steps > 0 ? (train_clock.Seconds() - untimed_s) * 1e6 / timed_steps : 0;
      memory_line =
          EstimatedVersusMeasured(*plan, place, step_us, /*pipelined=*/true,
                                  {{"evaluation plan's staging", KeptHostStaging(*eval_plan)}});
    }
    if (step % FLAGS_eval_every == 0 || step == FLAGS_steps) {
      Stopwatch eval_clock;
      ASSIGN_OR_RETURN(last, Evaluate(model, held_out, &eval_exe, eval_plan.get(), &scope));
      RETURN_IF_ERROR(log_eval(step, last));
      untimed_s += eval_clock.Seconds();
    }
    if (!FLAGS_checkpoint_dir.empty() &&
        (step % FLAGS_checkpoint_every == 0 || step == FLAGS_steps)) {
      Stopwatch save_clock;
      RETURN_IF_ERROR(
          SaveTrainerCheckpoint(builder.main_program(), step, FLAGS_checkpoint_dir, &scope));
      untimed_s += save_clock.Seconds();
      std::printf("saved %s (step %lld)\n", TrainerCheckpointPath(FLAGS_checkpoint_dir).c_str(),
                  static_cast<long long>(step));
    }
    std::fflush(stdout);
    // Measured peaks cover training steps: the evaluation plan's are not the estimate's.
    if (observed) ResetPeakMemory(place);
    if (observed && step < FLAGS_steps) RETURN_IF_ERROR(steps.Start(feeds_for(step + 1)));
  }
  std::printf("held-out AUC %.4f -> %.4f (best possible %.4f), logloss %.4f -> %.4f\n", first.auc,
              last.auc, oracle_auc, first.logloss, last.logloss);
  std::printf("%s\n", memory_line.c_str());
  if (const std::string graphs = GraphSummaryLine(*plan); !graphs.empty()) {
    std::printf("%s\n", graphs.c_str());
  }
  // (A resumed run may start on the plateau: only a run from the start must improve.)
  if (first_step == 0 && !(last.auc > first.auc && last.logloss < first.logloss)) {
    return absl::InternalError("the held-out AUC and logloss did not improve");
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace tandem

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "trains a click-through-rate model on synthetic clicks (sparse id features, one\n"
      "  embedding table each, kept in host memory with sparse updates; the MLP on the GPU,\n"
      "  or --place) and prints the training loss and the held-out logloss and AUC\n"
      "usage: ctr [--steps=10000] [--batch_size=512] [--embedding_dim=16] [--vocab_sizes=...]\n"
      "  [--place=gpu:0|cpu|sim:0] [--no_guard] [--is_sparse=false]\n"
      "  [--checkpoint_dir=DIR [--resume]] [--profile_steps=N [--trace_out=FILE.json]]\n"
      "  [--metrics_out=FILE.jsonl] [--data_parallel=N [--bucket_mb=25]] ...\n"
      "  under mpirun: mpirun -np N ctr --mpi (one replica per process)\n"
      "--helpmatch=ctr lists this program's flags, --helpfull every flag (the executor's and\n"
      "  backends' too)");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  absl::Status s = FLAGS_mpi ? tandem::InitExampleMpi(&argc, &argv) : absl::OkStatus();
  if (s.ok()) s = tandem::Train();
  tandem::FinishExampleMpi(s);  // a failure stops the job's other processes too
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
