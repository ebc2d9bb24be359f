// Trains an MLP (or, with --model=cnn, a small CNN) on Fashion-MNIST from
// Debian's dataset-fashion-mnist package, on the GPU when there is one (else
// the CPU), and prints progress lines and the test accuracy of every epoch.
//
//   bazel run //examples/fashion_mnist                              # MLP, 15 epochs
//   bazel run //examples/fashion_mnist -- --model=cnn --place=cpu
//   bazel run //examples/fashion_mnist -- --first_layer_on_cpu      # mixed CPU + GPU
//   bazel run //examples/fashion_mnist -- --checkpoint_dir=/tmp/fm  # then add --resume
//   bazel run //examples/fashion_mnist -- --first_layer_on_cpu --profile_steps=200
//   bazel run //examples/fashion_mnist -- --data_parallel=2         # gpu:0 and gpu:1
//   bazel run //examples/fashion_mnist -- --place=sim:0 --sim_devices=4 --data_parallel=4
//   mpirun -np 2 bazel-bin/examples/fashion_mnist/fashion_mnist --mpi   # a process per GPU
//
// With --data_parallel=N the program is replicated over N devices of
// --place's type (framework/parallel/data_parallel.h): each replica trains
// on its 1/N of every batch, the gradients are averaged by all-reduces in
// buckets of --bucket_mb issued during the backward pass (NCCL on gpu), a
// first layer under --first_layer_on_cpu exists once on the host, and
// checkpoints are the one-device ones (a run on N devices saves one that any
// other number of devices, or one device, resumes). With --mpi, under
// mpirun, each process is one replica (on gpu:<its rank on the host> for
// a gpu --place, on --place otherwise); rank 0 prints, evaluates and saves
// (distributed/mpi).
//
// The learning rate starts at --lr and is multiplied by --lr_decay after
// every epoch (written into the host learning-rate variable between steps).
// Checkpoints (framework/persistence/checkpoint.h) hold the parameters, the
// optimizer's state and the trainer's position; one is written at the end
// of every epoch and when --max_steps stops the run, and --resume continues
// from it with the same next step an uninterrupted run would take.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "data/data_loader.h"
#include "examples/common/example_util.h"
#include "examples/common/metrics_log.h"
#include "examples/common/progress.h"
#include "examples/common/replicas.h"
#include "examples/common/trainer_checkpoint.h"
#include "framework/amp/amp.h"
#include "framework/base/status_macros.h"
#include "framework/device/device_registry.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/parallel/data_parallel.h"
#include "framework/runtime/executor.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "models/fashion_mnist/fashion_mnist_model.h"
#include "profiler/profiler.h"

DEFINE_string(model, "mlp", "mlp (784 -> hidden -> 10) or cnn (2 x conv + pool, then hidden)");
DEFINE_string(hidden, "",
              "hidden fc sizes, comma-separated (default: 256,128 for mlp, 128 for cnn)");
DEFINE_int32(epochs, 15, "passes over the training set");
DEFINE_int64(batch_size, 64, "training examples per step");
DEFINE_string(optimizer, "adam", "adam or momentum");
DEFINE_double(lr, 0.001, "learning rate of the first epoch");
DEFINE_double(lr_decay, 0.8, "the learning rate is multiplied by this after every epoch");
DEFINE_double(momentum, 0.9, "momentum's mu (with --optimizer=momentum)");
DEFINE_string(place, "",
              "default place: gpu:N, sim:N or cpu (default: gpu:0 if present, else cpu)");
DEFINE_bool(first_layer_on_cpu, false, "put the first layer under device_guard(\"cpu\")");
DEFINE_string(amp, "none",
              "mixed precision: none, bf16 or fp16 (fc and conv2d in 16 bits, float32 master "
              "weights; fp16 with dynamic loss scaling)");
DEFINE_string(checkpoint_dir, "",
              "save a checkpoint here every epoch (and when --max_steps stops)");
DEFINE_bool(resume, false, "continue from the checkpoint in --checkpoint_dir");
DEFINE_int64(max_steps, 0,
             "stop after this many steps in all, resumed ones included (0: no limit)");
DEFINE_int64(seed, 1, "seed of the initial parameters and of the shuffling");
DEFINE_string(data_dir, "/usr/share/datasets/fashion-mnist",
              "directory of the gzipped IDX files (apt-get install dataset-fashion-mnist)");
DEFINE_int64(train_examples, 0, "train on the first N training examples (0: all 60000)");
DEFINE_int64(test_examples, 0, "test on the first N test examples (0: all 10000)");
DEFINE_int32(log_every, 100, "print a progress line every N steps");
DEFINE_int32(profile_steps, 0,
             "profile this many training steps (after one warm-up step) and print the "
             "profiler's report, then train on");
DEFINE_string(trace_out, "", "with --profile_steps: also write a Chrome trace to this file");
DEFINE_int32(data_parallel, 1,
             "replicas: N devices of --place's type (sim:0..N-1, gpu:0..N-1; N host "
             "replicas with --place=cpu), each trains on 1/N of every batch; 1: no replicas");
DEFINE_int64(bucket_mb, 25, "with --data_parallel: MiB of gradients per all-reduce");
DEFINE_bool(mpi, false,
            "one replica per process of an mpirun job (mpirun -np N fashion_mnist --mpi): "
            "the processes' ranks replace --data_parallel");
DEFINE_string(metrics_out, "",
              "write one JSON line per progress line and per test evaluation to this file "
              "(loss, examples/s, copies per step, test accuracy); tools/plot_metrics.py "
              "draws it");

namespace tandem {
namespace {

constexpr int64_t kTestBatch = 1000;  // test examples per evaluation step

absl::StatusOr<FashionMnistConfig> ConfigFromFlags() {
  FashionMnistConfig config;
  if (FLAGS_model == "mlp") {
    config.arch = FashionMnistArch::kMlp;
  } else if (FLAGS_model == "cnn") {
    config.arch = FashionMnistArch::kCnn;
    config.hidden = {128};
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--model must be mlp or cnn, got '", FLAGS_model, "'"));
  }
  if (!FLAGS_hidden.empty()) {
    config.hidden.clear();
    for (absl::string_view s : absl::StrSplit(FLAGS_hidden, ',')) {
      int64_t size;
      if (!absl::SimpleAtoi(s, &size)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--hidden must be comma-separated sizes, got '", FLAGS_hidden, "'"));
      }
      config.hidden.push_back(size);
    }
  }
  config.first_layer_on_cpu = FLAGS_first_layer_on_cpu;
  config.seed = FLAGS_seed;
  ASSIGN_OR_RETURN(config.amp, ParseAmpFlag(FLAGS_amp));
  return config;
}

absl::StatusOr<std::unique_ptr<Optimizer>> OptimizerFromFlags() {
  if (FLAGS_optimizer == "adam") return std::make_unique<Adam>(FLAGS_lr);
  if (FLAGS_optimizer == "momentum") return std::make_unique<Momentum>(FLAGS_lr, FLAGS_momentum);
  return absl::InvalidArgumentError(
      absl::StrCat("--optimizer must be adam or momentum, got '", FLAGS_optimizer, "'"));
}

// The Fashion-MNIST split, cut to its first `limit` examples when limit > 0.
absl::StatusOr<std::vector<Column>> LoadSplit(bool train, int64_t limit) {
  absl::StatusOr<std::vector<Column>> columns = FashionMnistColumns(FLAGS_data_dir, train);
  if (absl::IsNotFound(columns.status())) {
    return absl::NotFoundError(absl::StrCat(columns.status().message(),
                                            " (install Debian's dataset-fashion-mnist, e.g. "
                                            "tools/setup.sh, or pass --data_dir)"));
  }
  RETURN_IF_ERROR(columns.status());
  for (Column& c : *columns) {
    if (limit <= 0 || limit >= c.data.num_items()) continue;
    c.data.dims[0] = limit;
    c.data.data.resize(limit * c.data.item_elements() * IdxTypeSize(c.data.type));
  }
  return columns;
}

std::string CheckpointPath() { return TrainerCheckpointPath(FLAGS_checkpoint_dir); }

// Sets the learning-rate variable `name` (a host float32 [1], read by the
// update kernels as a HostMemory argument) to `lr`.
absl::Status SetLearningRate(const std::string& name, double lr, Scope* scope) {
  Variable* v = scope->Find(name);
  if (v == nullptr || !v->is_tensor() || v->tensor().dtype() != DataType::kFloat32 ||
      v->tensor().NumElements() != 1 || !(v->tensor().place() == CPUPlace())) {
    return absl::InternalError(
        absl::StrCat("learning rate '", name, "' is not a float32 [1] host tensor of the scope"));
  }
  v->mutable_tensor()->data<float>()[0] = static_cast<float>(lr);
  return absl::OkStatus();
}

// The next training batch, into the next epoch (reshuffled) at the end of one.
absl::StatusOr<Batch> NextBatch(DataLoader* loader) {
  absl::StatusOr<Batch> batch = loader->Next();
  return absl::IsOutOfRange(batch.status()) ? loader->Next() : batch;
}

// Fraction of the test set classified correctly by the eval program.
absl::StatusOr<double> TestAccuracy(Executor* exe, Plan* plan, Scope* scope, DataLoader* test) {
  int64_t correct = 0, total = 0;
  while (true) {
    absl::StatusOr<Batch> batch = test->Next();
    if (absl::IsOutOfRange(batch.status())) break;
    RETURN_IF_ERROR(batch.status());
    ASSIGN_OR_RETURN(std::vector<Tensor> out, exe->Run(plan, scope,
                                                       {{"image", batch->tensors.at("image")},
                                                        {"label", batch->tensors.at("label")}}));
    correct += out[0].data<int64_t>()[0];
    total += out[1].data<int64_t>()[0];
  }
  return total > 0 ? static_cast<double>(correct) / total : 0.0;
}

// Training with --data_parallel: the loop of Train over DataParallel::Step;
// evaluation and checkpoints use rank 0's scope, which holds every
// parameter of the one-device program.
// Dynamic loss scaling's scale and whether the step was skipped
// (--amp=fp16), as the run reported them (RunStats::reports); nullopt
// without it.
struct LossScaleState {
  double scale = 0;
  bool skipped = false;
};
std::optional<LossScaleState> ReportedLossScaling(const RunStats& stats) {
  auto scale = stats.reports.find("loss_scaling");
  auto skipped = stats.reports.find("step_skipped");
  if (scale == stats.reports.end() || skipped == stats.reports.end()) return std::nullopt;
  return LossScaleState{scale->second, skipped->second != 0};
}

absl::Status TrainDataParallel(const Place& place, ProgramBuilder& builder,
                               const FashionMnistModel& model, const Optimizer& optimizer,
                               DataLoader* train, DataLoader* test) {
  if (FLAGS_resume || FLAGS_profile_steps > 0 || AutoPlaceRequested()) {
    return absl::InvalidArgumentError(
        "--data_parallel does not take --resume, --profile_steps or --auto_place");
  }
  ASSIGN_OR_RETURN(DataParallelOptions o,
                   ExampleDataParallelOptions(place, FLAGS_data_parallel, FLAGS_bucket_mb,
                                              ExampleExecutorOptions()));
  ASSIGN_OR_RETURN(std::unique_ptr<DataParallel> dp,
                   DataParallel::Create(builder.main_program(), builder.startup_program(),
                                        {"image", "label"}, {model.loss.name}, o));
  RETURN_IF_ERROR(dp->Initialize());
  std::vector<std::string> names;
  for (const Place& p : o.places) names.push_back(p.ToString());
  const std::string rank =
      ExampleMpi() != nullptr ? absl::StrCat(" (rank ", dp->first_rank(), " of the mpi job)") : "";
  std::printf(
      "data parallel: %d replicas on %s%s, %zu all-reduces of <= %lld MiB per step, %zu "
      "shared variables\n",
      dp->size(), absl::StrJoin(names, ", ").c_str(), rank.c_str(), dp->programs().buckets.size(),
      static_cast<long long>(FLAGS_bucket_mb), dp->programs().shared.size());
  ExecutorOptions eval_options = ExampleExecutorOptions(/*auto_moves_persistables=*/false);
  Executor eval_exe(o.places[0], eval_options);
  ASSIGN_OR_RETURN(std::unique_ptr<Plan> eval_plan,
                   eval_exe.Prepare(model.eval, *dp->scope(0), {"image", "label"},
                                    {model.correct.name, model.total.name}));
  const int64_t per_epoch = train->batches_per_epoch();
  int64_t last_step = FLAGS_epochs * per_epoch;
  if (FLAGS_max_steps > 0) last_step = std::min(last_step, FLAGS_max_steps);
  TrainingProgress progress(last_step);
  double loss_sum = 0, accuracy = -1;
  int64_t loss_count = 0;
  for (int64_t step = 0; step < last_step;) {
    const int64_t epoch = step / per_epoch + 1;
    if (step % per_epoch == 0) {
      for (int r = 0; r < dp->local_ranks(); ++r) {
        RETURN_IF_ERROR(SetLearningRate(optimizer.learning_rate_var(),
                                        FLAGS_lr * std::pow(FLAGS_lr_decay, epoch - 1),
                                        dp->scope(r)));
      }
    }
    ASSIGN_OR_RETURN(Batch batch, NextBatch(train));
    ASSIGN_OR_RETURN(
        std::vector<std::vector<Tensor>> out,
        dp->Step({{"image", batch.tensors.at("image")}, {"label", batch.tensors.at("label")}}));
    // The mean loss of this process's replicas' slices.
    for (const std::vector<Tensor>& rank : out) loss_sum += rank[0].data<float>()[0] / out.size();
    ++loss_count;
    progress.Step(batch.size);
    ++step;
    const int64_t in_epoch = (step - 1) % per_epoch + 1;
    if (step % FLAGS_log_every == 0 && IsMainProcess()) {
      std::printf("epoch %lld/%d  step %lld/%lld  loss %.4f  %s\n", static_cast<long long>(epoch),
                  FLAGS_epochs, static_cast<long long>(in_epoch), static_cast<long long>(per_epoch),
                  loss_sum / loss_count, progress.Summary().c_str());
      std::fflush(stdout);
    }
    if (step % FLAGS_log_every == 0) {
      loss_sum = 0;
      loss_count = 0;
    }
    if ((in_epoch < per_epoch && step < last_step) || !IsMainProcess()) continue;
    ASSIGN_OR_RETURN(accuracy, TestAccuracy(&eval_exe, eval_plan.get(), dp->scope(0), test));
    std::printf("epoch %lld/%d  test accuracy %.4f\n", static_cast<long long>(epoch), FLAGS_epochs,
                accuracy);
    if (!FLAGS_checkpoint_dir.empty()) {
      RETURN_IF_ERROR(
          SaveTrainerCheckpoint(builder.main_program(), step, FLAGS_checkpoint_dir, dp->scope(0)));
      std::printf("saved %s (step %lld)\n", CheckpointPath().c_str(), static_cast<long long>(step));
    }
  }
  if (IsMainProcess()) {
    std::printf("final test accuracy %.4f after %lld steps\n", accuracy,
                static_cast<long long>(last_step));
  }
  return absl::OkStatus();
}

absl::Status Train() {
  ASSIGN_OR_RETURN(Place place, ChooseDefaultPlace(FLAGS_place));
  RETURN_IF_ERROR(CheckPlacementFlags());
  if (FLAGS_data_parallel < 1 || FLAGS_bucket_mb < 1 ||
      FLAGS_batch_size % Replicas(FLAGS_data_parallel) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--data_parallel and --bucket_mb must be >= 1 and --batch_size a multiple of the "
        "replicas (--data_parallel, or the processes with --mpi), got ",
        FLAGS_data_parallel, ", ", FLAGS_bucket_mb, ", ", FLAGS_batch_size, " for ",
        Replicas(FLAGS_data_parallel), " replicas"));
  }
  if (ExampleMpi() != nullptr && FLAGS_data_parallel != 1) {
    return absl::InvalidArgumentError(
        "--mpi makes each process one replica: leave --data_parallel out (mpirun -np N sets N)");
  }
  if (FLAGS_epochs < 1 || FLAGS_batch_size < 1 || FLAGS_log_every < 1 || FLAGS_max_steps < 0 ||
      FLAGS_profile_steps < 0 || !(FLAGS_lr_decay > 0 && FLAGS_lr_decay <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--epochs, --batch_size and --log_every must be >= 1, --max_steps and --profile_steps "
        ">= 0 and --lr_decay in (0, 1], got ",
        FLAGS_epochs, ", ", FLAGS_batch_size, ", ", FLAGS_log_every, ", ", FLAGS_max_steps, ", ",
        FLAGS_profile_steps, ", ", FLAGS_lr_decay));
  }
  if (!FLAGS_trace_out.empty() && FLAGS_profile_steps == 0) {
    return absl::InvalidArgumentError("--trace_out needs --profile_steps");
  }
  if (FLAGS_resume && FLAGS_checkpoint_dir.empty()) {
    return absl::InvalidArgumentError("--resume needs --checkpoint_dir");
  }
  ASSIGN_OR_RETURN(FashionMnistConfig config, ConfigFromFlags());
  ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> optimizer, OptimizerFromFlags());
  ProgramBuilder builder;
  ASSIGN_OR_RETURN(FashionMnistModel model,
                   BuildFashionMnistModel(config, optimizer.get(), &builder));

  ASSIGN_OR_RETURN(std::vector<Column> train_columns, LoadSplit(true, FLAGS_train_examples));
  ASSIGN_OR_RETURN(std::vector<Column> test_columns, LoadSplit(false, FLAGS_test_examples));
  DataLoaderOptions train_options;
  train_options.batch_size = FLAGS_batch_size;
  train_options.seed = static_cast<uint64_t>(FLAGS_seed);
  train_options.drop_last = Replicas(FLAGS_data_parallel) > 1;
  ASSIGN_OR_RETURN(std::unique_ptr<DataLoader> train,
                   DataLoader::Create(std::move(train_columns), train_options));
  DataLoaderOptions test_options;
  test_options.batch_size = kTestBatch;
  test_options.shuffle = false;
  ASSIGN_OR_RETURN(std::unique_ptr<DataLoader> test,
                   DataLoader::Create(std::move(test_columns), test_options));

  if (IsMainProcess())
    std::printf(
        "fashion_mnist: %s [%s] on %s%s%s, %s lr %g, batch %lld, %lld train / %lld test "
        "examples, executor: %s\n",
        FLAGS_model.c_str(), absl::StrJoin(config.hidden, ", ").c_str(), place.ToString().c_str(),
        FLAGS_first_layer_on_cpu ? " (first layer on cpu)" : "",
        config.amp.has_value() ? absl::StrCat(", amp ", DataTypeName(*config.amp)).c_str() : "",
        FLAGS_optimizer.c_str(), FLAGS_lr, static_cast<long long>(FLAGS_batch_size),
        static_cast<long long>(train->num_examples()), static_cast<long long>(test->num_examples()),
        ExecutorMode(ExampleExecutorOptions()).c_str());

  if (Replicas(FLAGS_data_parallel) > 1 || ExampleMpi() != nullptr) {
    // Every batch splits evenly over the replicas: the last one of an epoch is dropped.
    return TrainDataParallel(place, builder, model, *optimizer, train.get(), test.get());
  }
  ExecutorOptions options = ExampleExecutorOptions();
  options.feed_shapes = {{"image", Shape({FLAGS_batch_size, 28, 28})},
                         {"label", Shape({FLAGS_batch_size})}};
  Executor exe(place, options);
  // Evaluation: its own batch size, and (under --auto_place) the parameters
  // stay where the training plan keeps them.
  ExecutorOptions eval_options = ExampleExecutorOptions(/*auto_moves_persistables=*/false);
  eval_options.feed_shapes = {{"image", Shape({kTestBatch, 28, 28})},
                              {"label", Shape({kTestBatch})}};
  Executor eval_exe(place, eval_options);
  Scope scope;
  RETURN_IF_ERROR(exe.Run(builder.startup_program(), &scope).status());
  const int64_t per_epoch = train->batches_per_epoch();
  int64_t step = 0;
  if (FLAGS_resume) {
    ASSIGN_OR_RETURN(step,
                     ResumeTrainerCheckpoint(builder.main_program(), FLAGS_checkpoint_dir, &scope));
    std::printf("resumed from %s after step %lld (epoch %lld, batch %lld)\n",
                CheckpointPath().c_str(), static_cast<long long>(step),
                static_cast<long long>(step / per_epoch + 1),
                static_cast<long long>(step % per_epoch));
    // Replay the loader: its shuffles depend on (seed, epoch) only.
    for (int64_t i = 0; i < step; ++i) RETURN_IF_ERROR(NextBatch(train.get()).status());
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan, exe.Prepare(builder.main_program(), scope,
                                                           {"image", "label"}, {model.loss.name}));
  RETURN_IF_ERROR(ReportPlacement(*plan));
  // The parameters go where the training plan keeps them (auto placement);
  // the evaluation plan then leaves them there.
  RETURN_IF_ERROR(MovePersistablesHome(plan->placed(), &scope));
  ASSIGN_OR_RETURN(std::unique_ptr<Plan> eval_plan,
                   eval_exe.Prepare(model.eval, scope, {"image", "label"},
                                    {model.correct.name, model.total.name}));

  std::unique_ptr<MetricsLog> metrics;
  if (!FLAGS_metrics_out.empty()) {
    ASSIGN_OR_RETURN(metrics, MetricsLog::Open(FLAGS_metrics_out, /*append=*/FLAGS_resume));
  }
  int64_t last_step = FLAGS_epochs * per_epoch;
  if (FLAGS_max_steps > 0) last_step = std::min(last_step, FLAGS_max_steps);
  const int64_t first_step = step;
  TrainingProgress progress(last_step - step);
  double loss_sum = 0, accuracy = -1;
  std::string memory_line;  // estimated vs measured, of the last epoch's training steps
  int64_t loss_count = 0, skipped_steps = 0;
  Stopwatch epoch_clock;
  RunStats stats;
  bool profiling = FLAGS_profile_steps > 0;
  if (profiling) {
    RETURN_IF_ERROR(profiler::StartProfiler("All", /*warmup_runs=*/1));
    RETURN_IF_ERROR(profiler::AttachPlan(*plan));
  }
  while (step < last_step) {
    const int64_t epoch = step / per_epoch + 1;
    if (step % per_epoch == 0 || step == first_step) {
      RETURN_IF_ERROR(SetLearningRate(optimizer->learning_rate_var(),
                                      FLAGS_lr * std::pow(FLAGS_lr_decay, epoch - 1), &scope));
    }
    ASSIGN_OR_RETURN(Batch batch, NextBatch(train.get()));
    ASSIGN_OR_RETURN(std::vector<Tensor> out, exe.Run(plan.get(), &scope,
                                                      {{"image", batch.tensors.at("image")},
                                                       {"label", batch.tensors.at("label")}},
                                                      &stats));
    const std::optional<LossScaleState> scaling = ReportedLossScaling(stats);
    if (scaling.has_value() && scaling->skipped) {
      ++skipped_steps;  // its loss overflowed: not averaged
    } else {
      loss_sum += out[0].data<float>()[0];
      ++loss_count;
    }
    progress.Step(batch.size);
    if (step == first_step) ResetPeakMemory(place);  // measured peaks: steady steps
    ++step;
    const int64_t in_epoch = (step - 1) % per_epoch + 1;
    if (profiling && (step - first_step == FLAGS_profile_steps + 1 || in_epoch == per_epoch ||
                      step == last_step)) {
      std::printf("profile of training steps %lld-%lld (step %lld was warm-up):\n",
                  static_cast<long long>(first_step + 2), static_cast<long long>(step),
                  static_cast<long long>(first_step + 1));
      RETURN_IF_ERROR(profiler::StopProfiler("total", FLAGS_trace_out));
      profiling = false;
    }
    if (step % FLAGS_log_every == 0) {
      const std::string scale_note =
          scaling.has_value()
              ? absl::StrCat("  loss scale ", scaling->scale, ", ", skipped_steps, " steps skipped")
              : "";
      std::printf("epoch %lld/%d  step %lld/%lld  loss %.4f  %s%s\n", static_cast<long long>(epoch),
                  FLAGS_epochs, static_cast<long long>(in_epoch), static_cast<long long>(per_epoch),
                  loss_sum / std::max<int64_t>(loss_count, 1), progress.Summary().c_str(),
                  scale_note.c_str());
      std::fflush(stdout);
      if (metrics != nullptr) {
        RETURN_IF_ERROR(metrics->Write(MetricsRecord("train")
                                           .Add("step", step)
                                           .Add("epoch", epoch)
                                           .Add("loss", loss_sum / loss_count)
                                           .Add("examples_per_s", progress.ExamplesPerSecond())
                                           .AddCopies(stats)));
      }
      loss_sum = 0;
      loss_count = 0;
    }
    if (in_epoch < per_epoch && step < last_step) continue;
    // The end of an epoch, or of the run.
    const double train_seconds = epoch_clock.Seconds();
    const double examples_per_s = progress.ExamplesPerSecond();
    memory_line = EstimatedVersusMeasured(
        *plan, place, examples_per_s > 0 ? FLAGS_batch_size / examples_per_s * 1e6 : 0,
        /*pipelined=*/false,
        // (The evaluation plan keeps no staging here: the loaders' batches are pinned already.)
        {{"data loaders", train->MaxBytesHeld() + test->MaxBytesHeld()}});
    Stopwatch test_clock;
    ASSIGN_OR_RETURN(accuracy, TestAccuracy(&eval_exe, eval_plan.get(), &scope, test.get()));
    ResetPeakMemory(place);  // the next epoch's training steps
    std::printf(
        "epoch %lld/%d  %s  test accuracy %.4f  (train %.2f s, test %.2f s)\n",
        static_cast<long long>(epoch), FLAGS_epochs,
        in_epoch == per_epoch ? "done" : absl::StrCat("stopped at batch ", in_epoch).c_str(),
        accuracy, train_seconds, test_clock.Seconds());
    if (metrics != nullptr) {
      RETURN_IF_ERROR(metrics->Write(
          MetricsRecord("eval").Add("step", step).Add("epoch", epoch).Add("accuracy", accuracy)));
    }
    if (!FLAGS_checkpoint_dir.empty()) {
      RETURN_IF_ERROR(
          SaveTrainerCheckpoint(builder.main_program(), step, FLAGS_checkpoint_dir, &scope));
      std::printf("saved %s (step %lld)\n", CheckpointPath().c_str(), static_cast<long long>(step));
    }
    std::fflush(stdout);
    epoch_clock = Stopwatch();
  }
  if (accuracy < 0) {
    std::printf("nothing to do: the checkpoint is at step %lld of %lld\n",
                static_cast<long long>(step), static_cast<long long>(last_step));
    return absl::OkStatus();
  }
  std::printf("final test accuracy %.4f after %lld steps\n", accuracy,
              static_cast<long long>(step));
  std::printf("%s (training steps)\n", memory_line.c_str());
  return absl::OkStatus();
}

}  // namespace
}  // namespace tandem

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "trains an image classifier (an MLP, or a small CNN) on the Fashion-MNIST clothing\n"
      "  pictures on the GPU when there is one (else the CPU), printing the loss as it trains\n"
      "  and the test accuracy after every epoch\n"
      "usage: fashion_mnist [--model=mlp|cnn] [--epochs=15] [--batch_size=64]\n"
      "  [--place=gpu:0|cpu|sim:0] [--first_layer_on_cpu] [--checkpoint_dir=DIR [--resume]]\n"
      "  [--profile_steps=N [--trace_out=FILE.json]] [--metrics_out=FILE.jsonl]\n"
      "  [--data_parallel=N [--bucket_mb=25]] ...\n"
      "  under mpirun: mpirun -np N fashion_mnist --mpi (one replica per process)\n"
      "--helpmatch=fashion_mnist lists this program's flags, --helpfull every flag (the\n"
      "  executor's and backends' too: --cuda_graph, --in_order, --cpu_threads, memory limits)");
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
