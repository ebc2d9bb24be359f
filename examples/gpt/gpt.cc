// Trains a GPT-style byte-level language model (models/gpt) on a text
// corpus, by default Debian's fortunes (/usr/share/games/fortunes), on the
// GPU when there is one (else the CPU). Prints the training loss as it goes
// and, every --eval_every steps and at the end, the validation loss, its
// perplexity and bits per byte.
//
//   bazel run //examples/gpt                                   # tiny: 2 x 64, seq 64
//   bazel run //examples/gpt -- --size=small --amp=bf16 --steps=5000
//   bazel run //examples/gpt -- --size=gpt2 --batch_size=8 --amp=bf16   # GPT-2 small's shape
//   bazel run //examples/gpt -- --checkpoint_dir=/tmp/gpt       # then add --resume
//   bazel run //examples/gpt -- --profile_steps=20 --metrics_out=/tmp/gpt.jsonl
//   bazel run //examples/gpt -- --amp=bf16 --offload=optimizer  # Adam and fp32 weights on the CPU
//   bazel run //examples/gpt -- --amp=bf16 --offload=auto --memory_budget_mb=2000  # as few as fit
//
// Training windows are drawn from (--seed, step) alone, so a run resumed
// from a checkpoint continues the loss curve the uninterrupted run draws.
// Checkpoints (parameters, Adam's moments and the step) are written at
// every evaluation and at the end.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "examples/common/example_util.h"
#include "examples/common/metrics_log.h"
#include "examples/common/progress.h"
#include "examples/common/step_pipeline.h"
#include "examples/common/trainer_checkpoint.h"
#include "examples/gpt/corpus.h"
#include "framework/amp/amp.h"
#include "framework/autoplace/optimizer_offload.h"
#include "framework/backward/recompute.h"
#include "framework/base/status_macros.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/runtime/executor.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "models/gpt/gpt_model.h"
#include "profiler/profiler.h"

DEFINE_string(corpus, "/usr/share/games/fortunes",
              "a text file, or a directory whose text files are read in name order");
DEFINE_double(validation_fraction, 0.1, "the corpus' last part kept for validation");
DEFINE_string(size, "tiny",
              "tiny (2 x 64, seq 64), small (6 x 384, seq 256) or gpt2 (12 x 768, "
              "12 heads, seq 512)");
DEFINE_int64(layers, 0, "transformer blocks (0: the --size's)");
DEFINE_int64(width, 0, "model dim (0: the --size's)");
DEFINE_int64(heads, 0, "attention heads (0: the --size's)");
DEFINE_int64(seq, 0, "context length in bytes (0: the --size's)");
DEFINE_int64(batch_size, 16, "sequences per step");
DEFINE_int64(steps, 2000, "training steps (a resumed run counts the steps already taken)");
DEFINE_double(lr, 1e-3, "Adam's learning rate");
DEFINE_double(clip_norm, 1.0,
              "clip the gradients by their global norm at this value (0: no clipping)");
DEFINE_string(place, "", "gpu:0, cpu or sim:0 (default: gpu:0 when there is a GPU, else cpu)");
DEFINE_string(amp, "none", "mixed precision: none, bf16 or fp16 (fp16 scales the loss)");
DEFINE_string(offload, "none",
              "none; optimizer: the float32 weights and Adam's state stay in host memory and the "
              "updates run on the CPU, the device holds 16-bit copies (needs --amp); auto: only as "
              "many parameters as the device's --memory_budget_mb needs, last read first");
DEFINE_string(recompute, "none",
              "activation recomputation: none; cheap (the layer norms' and gelus' outputs made "
              "again in the backward instead of kept from the forward: less device memory, the "
              "same losses); cheap+weights (also the 16-bit copies of the weights: less memory "
              "still, for a second cast per step, and with --offload a second upload)");
DEFINE_bool(working_copies, true,
            "with --amp: Adam writes each weight's 16-bit copy as it updates the weight (false: "
            "every forward casts the weights; the same losses, bit for bit)");
DEFINE_bool(atomic_updates, true,
            "apply a step's updates only once the rest of the step succeeded or was queued on "
            "the GPU (a failed step leaves every weight as it was; offloaded updates still "
            "overlap the backward); false: each update starts as soon as its gradient is "
            "ready, and a failed step may leave some weights updated");
DEFINE_double(offload_fraction, 1.0,
              "with --offload=optimizer: offload only this fraction of the parameters' bytes, "
              "last read first (a hand-chosen partial offload)");
DEFINE_int64(eval_every, 500, "steps between validation runs");
DEFINE_int64(eval_batches, 8, "validation batches of --batch_size windows each");
DEFINE_int32(log_every, 50, "print a progress line every N steps");
DEFINE_int64(seed, 1, "seed of the initial parameters and of the training windows");
DEFINE_string(checkpoint_dir, "", "save a checkpoint here at every evaluation and at the end");
DEFINE_bool(resume, false, "continue from the checkpoint in --checkpoint_dir");
DEFINE_int32(profile_steps, 0,
             "profile this many training steps after the first one, print the profiler's "
             "report, then train on");
DEFINE_string(trace_out, "", "with --profile_steps: also write a Chrome trace to this file");
DEFINE_string(metrics_out, "",
              "append a JSON line per logged step and evaluation to this file "
              "(tools/plot_metrics.py draws them)");

namespace tandem {
namespace {

absl::StatusOr<GptConfig> ConfigFromFlags() {
  ASSIGN_OR_RETURN(GptConfig c, GptConfig::Preset(FLAGS_size));
  for (auto [flag, field] : {std::pair{FLAGS_layers, &c.layers}, std::pair{FLAGS_width, &c.width},
                             std::pair{FLAGS_heads, &c.heads}, std::pair{FLAGS_seq, &c.seq}}) {
    if (flag != 0) *field = flag;
  }
  c.seed = FLAGS_seed;
  ASSIGN_OR_RETURN(c.amp, ParseAmpFlag(FLAGS_amp));
  ASSIGN_OR_RETURN(c.recompute, ParseRecomputeFlag(FLAGS_recompute));
  if (FLAGS_offload != "none" && FLAGS_offload != "optimizer" && FLAGS_offload != "auto") {
    return absl::InvalidArgumentError(
        absl::StrCat("--offload must be none, optimizer or auto, got '", FLAGS_offload, "'"));
  }
  c.offload_optimizer = FLAGS_offload != "none";
  if (c.offload_optimizer && !c.amp.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--offload=", FLAGS_offload,
        " needs --amp=bf16 or --amp=fp16: the device holds 16-bit copies of the host's float32 "
        "weights"));
  }
  return c;
}

absl::Status CheckFlags() {
  if (FLAGS_batch_size < 1 || FLAGS_steps < 1 || FLAGS_eval_every < 1 || FLAGS_eval_batches < 1 ||
      FLAGS_log_every < 1 || FLAGS_profile_steps < 0 || !(FLAGS_lr > 0) ||
      !(FLAGS_clip_norm >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--batch_size, --steps, --eval_every, --eval_batches and --log_every must be >= 1, "
        "--profile_steps and --clip_norm >= 0 and --lr > 0; got ",
        FLAGS_batch_size, ", ", FLAGS_steps, ", ", FLAGS_eval_every, ", ", FLAGS_eval_batches, ", ",
        FLAGS_log_every, ", ", FLAGS_profile_steps, ", ", FLAGS_clip_norm, ", ", FLAGS_lr));
  }
  if (FLAGS_resume && FLAGS_checkpoint_dir.empty()) {
    return absl::InvalidArgumentError("--resume needs --checkpoint_dir");
  }
  if (!FLAGS_trace_out.empty() && FLAGS_profile_steps == 0) {
    return absl::InvalidArgumentError("--trace_out needs --profile_steps");
  }
  if (!(FLAGS_offload_fraction >= 0 && FLAGS_offload_fraction <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--offload_fraction must be in [0, 1], got ", FLAGS_offload_fraction));
  }
  if (FLAGS_offload_fraction != 1 && FLAGS_offload != "optimizer") {
    return absl::InvalidArgumentError("--offload_fraction needs --offload=optimizer");
  }
  if (MemoryBudgetBytesFlag() != 0 && FLAGS_offload != "auto" && !AutoPlaceRequested()) {
    return absl::InvalidArgumentError("--memory_budget_mb needs --offload=auto (or --auto_place)");
  }
  if (FLAGS_offload != "none" && AutoPlaceRequested()) {
    return absl::InvalidArgumentError(
        "--auto_place places ops, --offload places parameters: give one of them");
  }
  return absl::OkStatus();
}

// The feeds of one batch: tokens [batch, seq] and targets [batch, seq, 1].
FeedMap Feeds(const std::vector<int64_t>& tokens, const std::vector<int64_t>& targets,
              int64_t seq) {
  const int64_t batch = static_cast<int64_t>(tokens.size()) / seq;
  Tensor t = *Tensor::Allocate(CpuAllocator::Default(), DataType::kInt64, Shape({batch, seq}));
  Tensor y = *Tensor::Allocate(CpuAllocator::Default(), DataType::kInt64, Shape({batch, seq, 1}));
  std::copy(tokens.begin(), tokens.end(), t.data<int64_t>());
  std::copy(targets.begin(), targets.end(), y.data<int64_t>());
  return {{"tokens", t}, {"targets", y}};
}

// The mean validation loss (nats per byte) over --eval_batches batches.
absl::StatusOr<double> ValidationLoss(Executor* exe, Plan* plan, Scope* scope, const Corpus& corpus,
                                      int64_t seq) {
  std::vector<int64_t> tokens, targets;
  double sum = 0;
  for (int64_t i = 0; i < FLAGS_eval_batches; ++i) {
    corpus.ValidationWindows(seq, FLAGS_batch_size, i, FLAGS_eval_batches, &tokens, &targets);
    ASSIGN_OR_RETURN(std::vector<Tensor> out, exe->Run(plan, scope, Feeds(tokens, targets, seq)));
    sum += out[0].data<float>()[0];
  }
  return sum / FLAGS_eval_batches;
}

// Prints and logs one evaluation, then saves the checkpoint (if any).
absl::Status Evaluate(int64_t step, double loss, const Program& program, Scope* scope,
                      MetricsLog* metrics) {
  std::printf("step %lld  validation loss %.4f  perplexity %.3f  %.3f bits/byte\n",
              static_cast<long long>(step), loss, std::exp(loss), loss / std::log(2.0));
  if (metrics != nullptr) {
    RETURN_IF_ERROR(metrics->Write(MetricsRecord("eval")
                                       .Add("step", step)
                                       .Add("validation_loss", loss)
                                       .Add("perplexity", std::exp(loss))));
  }
  if (!FLAGS_checkpoint_dir.empty()) {
    RETURN_IF_ERROR(SaveTrainerCheckpoint(program, step, FLAGS_checkpoint_dir, scope));
    std::printf("saved %s (step %lld)\n", TrainerCheckpointPath(FLAGS_checkpoint_dir).c_str(),
                static_cast<long long>(step));
  }
  std::fflush(stdout);
  return absl::OkStatus();
}

// Starts the profiler before the first step after `first_step` is timed;
// stops it and prints the report after --profile_steps more.
class StepProfiler {
 public:
  StepProfiler(int64_t first_step, const Plan& plan) : first_step_(first_step), plan_(plan) {}

  absl::Status BeforeStep(int64_t step) {
    if (FLAGS_profile_steps > 0 && step == first_step_ + 1) {
      RETURN_IF_ERROR(profiler::StartProfiler("All", /*warmup_runs=*/1));
      RETURN_IF_ERROR(profiler::AttachPlan(plan_));
      running_ = true;
    }
    return absl::OkStatus();
  }
  absl::Status AfterStep(int64_t step, bool last) {
    if (!running_ || (step - first_step_ < FLAGS_profile_steps + 1 && !last)) {
      return absl::OkStatus();
    }
    std::printf("profile of training steps %lld-%lld (step %lld was warm-up):\n",
                static_cast<long long>(first_step_ + 2), static_cast<long long>(step),
                static_cast<long long>(first_step_ + 1));
    running_ = false;
    return profiler::StopProfiler("total", FLAGS_trace_out);
  }

 private:
  const int64_t first_step_;
  const Plan& plan_;
  bool running_ = false;
};

absl::Status Train() {
  RETURN_IF_ERROR(CheckFlags());
  ASSIGN_OR_RETURN(Place place, ChooseDefaultPlace(FLAGS_place));
  ASSIGN_OR_RETURN(GptConfig config, ConfigFromFlags());
  ASSIGN_OR_RETURN(Corpus corpus, Corpus::Load(FLAGS_corpus, FLAGS_validation_fraction));
  RETURN_IF_ERROR(corpus.CheckFits(config.seq));
  Adam adam(FLAGS_lr);
  if (FLAGS_clip_norm > 0) adam.EnableGradientClipping(FLAGS_clip_norm);
  adam.set_working_copies(FLAGS_working_copies);
  ProgramBuilder builder;
  ASSIGN_OR_RETURN(GptModel model, BuildGptModel(config, &adam, &builder));
  std::printf(
      "gpt: %lld layers x %lld, %lld heads, seq %lld, %.2f M parameters on %s%s%s, batch %lld"
      "%s, corpus %s (%lld files, %lld train / %lld validation bytes), executor: %s\n",
      static_cast<long long>(config.layers), static_cast<long long>(config.width),
      static_cast<long long>(config.heads), static_cast<long long>(config.seq),
      config.NumParameters() / 1e6, place.ToString().c_str(),
      config.amp.has_value() ? absl::StrCat(", amp ", DataTypeName(*config.amp)).c_str() : "",
      FLAGS_offload == "none"   ? ""
      : FLAGS_offload == "auto" ? ", optimizer offload within the memory budget"
      : FLAGS_offload_fraction == 1
          ? ", optimizer offloaded to the cpu"
          : absl::StrFormat(", %.0f%% of the optimizer offloaded to the cpu",
                            100 * FLAGS_offload_fraction)
                .c_str(),
      static_cast<long long>(FLAGS_batch_size),
      !config.recompute.has_value()       ? ""
      : config.recompute->parameter_casts ? ", recomputing cheap activations and 16-bit weights"
                                          : ", recomputing cheap activations",
      FLAGS_corpus.c_str(), static_cast<long long>(corpus.files()),
      static_cast<long long>(corpus.train_bytes()),
      static_cast<long long>(corpus.validation_bytes()),
      ExecutorMode(ExampleExecutorOptions()).c_str());

  if (config.recompute.has_value()) {
    std::printf("recompute: %zu forward values made again in the backward by %d ops\n",
                model.recompute.values.size(), model.recompute.ops);
  }
  ExecutorOptions options = ExampleExecutorOptions();
  options.atomic_updates = FLAGS_atomic_updates;
  if (FLAGS_offload == "optimizer") {
    options.placement_planner = MakeOffloadPlanner({.fraction = FLAGS_offload_fraction});
  } else if (FLAGS_offload == "auto") {
    options.placement_planner = MakeOffloadPlanner({.budget_bytes = MemoryBudgetBytesFlag()});
  }
  options.feed_shapes = {{"tokens", Shape({FLAGS_batch_size, config.seq})},
                         {"targets", Shape({FLAGS_batch_size, config.seq, 1})}};
  Executor exe(place, options);
  Scope scope;
  RETURN_IF_ERROR(exe.Run(builder.startup_program(), &scope).status());
  int64_t step = 0;
  if (FLAGS_resume) {
    ASSIGN_OR_RETURN(step,
                     ResumeTrainerCheckpoint(builder.main_program(), FLAGS_checkpoint_dir, &scope));
    std::printf("resumed from %s after step %lld\n",
                TrainerCheckpointPath(FLAGS_checkpoint_dir).c_str(), static_cast<long long>(step));
  }
  std::vector<std::string> fetches = {model.loss.name};
  if (FLAGS_clip_norm > 0) fetches.push_back(adam.global_norm_var());
  ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan,
                   exe.Prepare(builder.main_program(), scope, {"tokens", "targets"}, fetches));
  RETURN_IF_ERROR(ReportPlacement(*plan));
  if (!plan->placed().auto_summary.empty())
    std::printf("%s\n", plan->placed().auto_summary.c_str());
  // The parameters go where the training plan keeps them before the
  // evaluation plan is placed around them.
  RETURN_IF_ERROR(MovePersistablesHome(plan->placed(), &scope));
  ASSIGN_OR_RETURN(std::unique_ptr<Plan> eval_plan,
                   exe.Prepare(model.eval, scope, {"tokens", "targets"}, {model.loss.name}));
  std::unique_ptr<MetricsLog> metrics;
  if (!FLAGS_metrics_out.empty()) {
    ASSIGN_OR_RETURN(metrics, MetricsLog::Open(FLAGS_metrics_out, /*append=*/FLAGS_resume));
  }
  if (step >= FLAGS_steps) {
    std::printf("nothing to do: the checkpoint is at step %lld of %lld\n",
                static_cast<long long>(step), static_cast<long long>(FLAGS_steps));
    return absl::OkStatus();
  }
  const int64_t first_step = step;
  TrainingProgress progress(FLAGS_steps - step);
  StepProfiler profile(first_step, *plan);
  std::vector<int64_t> tokens, targets;
  double loss_sum = 0, grad_norm_sum = 0;
  int64_t loss_count = 0, nonfinite = 0;
  RunStats stats;
  // Wall time between consecutive steps' results, from the third step on
  // (the first two pay for warm-up): the step time as a trainer sees it.
  std::vector<double> step_ms;
  Stopwatch since_last;
  // Steps run pipelined (StepPipeline): the next step starts before this
  // one's loss is read, so its forward overlaps this step's last updates
  // (each layer waits only for its own weights). Evaluations, checkpoints,
  // the profiled steps and the last step are waited for before going on.
  StepPipeline steps(&exe, plan.get(), &scope);
  auto start = [&](int64_t s) -> absl::Status {
    RETURN_IF_ERROR(profile.BeforeStep(s));
    corpus.TrainWindows(config.seq, FLAGS_batch_size, s, FLAGS_seed, &tokens, &targets);
    return steps.Start(Feeds(tokens, targets, config.seq));
  };
  RETURN_IF_ERROR(start(step));
  while (step < FLAGS_steps) {
    const int64_t next = step + 1;
    const bool profiled = FLAGS_profile_steps > 0 && next <= first_step + FLAGS_profile_steps + 1;
    const bool sync = next == FLAGS_steps || next % FLAGS_eval_every == 0 || profiled;
    if (!sync) RETURN_IF_ERROR(start(next));
    ASSIGN_OR_RETURN(std::vector<Tensor> out, steps.Next(&stats));
    if (step >= first_step + 2) step_ms.push_back(since_last.Seconds() * 1e3);
    since_last = Stopwatch();
    const double loss = out[0].data<float>()[0];
    if (out.size() > 1) grad_norm_sum += out[1].data<float>()[0];
    if (std::isfinite(loss)) {
      loss_sum += loss;
      ++loss_count;
    } else {
      ++nonfinite;  // float16: a step the loss scaling skipped
    }
    progress.Step(FLAGS_batch_size * config.seq);
    if (step == first_step) ResetPeakMemory(place);
    ++step;
    RETURN_IF_ERROR(profile.AfterStep(step, step == FLAGS_steps));
    if (step % FLAGS_log_every == 0) {
      const double mean = loss_sum / std::max<int64_t>(loss_count, 1);
      const std::string norm =
          FLAGS_clip_norm > 0 ? absl::StrFormat("  grad norm %.3f", grad_norm_sum / FLAGS_log_every)
                              : "";
      std::printf("step %lld/%lld  loss %.4f  %.0f tokens/s  ETA %s%s%s\n",
                  static_cast<long long>(step), static_cast<long long>(FLAGS_steps), mean,
                  progress.ExamplesPerSecond(), FormatDuration(progress.SecondsLeft()).c_str(),
                  norm.c_str(),
                  nonfinite > 0 ? absl::StrCat("  ", nonfinite, " steps skipped").c_str() : "");
      std::fflush(stdout);
      if (metrics != nullptr) {
        RETURN_IF_ERROR(metrics->Write(MetricsRecord("train")
                                           .Add("step", step)
                                           .Add("loss", mean)
                                           .Add("tokens_per_s", progress.ExamplesPerSecond())
                                           .AddCopies(stats)));
      }
      loss_sum = 0;
      grad_norm_sum = 0;
      loss_count = 0;
    }
    if (step % FLAGS_eval_every == 0 || step == FLAGS_steps) {
      ASSIGN_OR_RETURN(double validation,
                       ValidationLoss(&exe, eval_plan.get(), &scope, corpus, config.seq));
      RETURN_IF_ERROR(Evaluate(step, validation, builder.main_program(), &scope, metrics.get()));
    }
    if (sync && step < FLAGS_steps) RETURN_IF_ERROR(start(step));
  }
  if (!step_ms.empty()) {
    std::printf("step time: median %.2f ms over %zu steps (%lld tokens a step)\n", Median(step_ms),
                step_ms.size(), static_cast<long long>(FLAGS_batch_size * config.seq));
  }
  std::printf("%s (training steps)\n",
              EstimatedVersusMeasured(*plan, place, 0, /*pipelined=*/true).c_str());
  return absl::OkStatus();
}

}  // namespace
}  // namespace tandem

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "trains a GPT-style byte-level language model on a text corpus (Debian's fortunes by\n"
      "  default) on the GPU when there is one (else the CPU), printing the training loss\n"
      "  and, every --eval_every steps, the validation loss and perplexity\n"
      "usage: gpt [--size=tiny|small|gpt2] [--steps=2000] [--batch_size=16] [--amp=bf16]\n"
      "  [--corpus=FILE_OR_DIR] [--place=gpu:0|cpu|sim:0] [--checkpoint_dir=DIR [--resume]]\n"
      "  [--profile_steps=N [--trace_out=FILE.json]] [--metrics_out=FILE.jsonl]\n"
      "  [--offload=optimizer [--offload_fraction=F]] (with --amp: weights and Adam on the CPU)\n"
      "  [--offload=auto [--memory_budget_mb=N]] (with --amp: as few as fit the budget)\n"
      "--helpmatch=gpt lists this program's flags, --helpfull every flag");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  absl::Status s = tandem::Train();
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
