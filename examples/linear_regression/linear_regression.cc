// Trains a linear model y = X w + b on synthetic data with full-batch
// gradient descent, on the GPU when there is one (else the CPU), and prints
// the loss falling. The forward and backward passes run the framework's
// kernels (matmul, elementwise_add, scale and their gradient ops) on the
// chosen place; only the loss is copied back to the host for printing.
//
//   bazel run //examples/linear_regression -- --steps=200 --place=sim:0
//   bazel run //examples/linear_regression -- --amp=bf16   # the products in bfloat16
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <string>

#include "absl/strings/str_format.h"
#include "examples/common/example_util.h"
#include "framework/amp/amp.h"
#include "framework/base/status_macros.h"
#include "framework/device/device.h"
#include "framework/device/device_registry.h"
#include "framework/kernel/eager.h"
#include "gflags/gflags.h"
#include "glog/logging.h"

DEFINE_string(place, "",
              "where to train: cpu, gpu, gpu:N, sim:N (default: gpu:0 if present, else cpu)");
DEFINE_int32(steps, 200, "gradient-descent steps");
DEFINE_int32(samples, 4096, "training examples");
DEFINE_int32(features, 16, "input features");
DEFINE_double(lr, 0.1, "learning rate");
DEFINE_int32(log_every, 20, "print the loss every N steps");
DEFINE_uint64(seed, 1, "data seed");
DEFINE_string(amp, "none",
              "mixed precision: none, bf16 or fp16 (the two matmuls and their gradient in 16 "
              "bits, float32 sums; w and b stay float32 master values)");

namespace tandem {
namespace {

// Runs `type` on `place` with the given inputs and attributes; returns the
// tensor bound to output `out`.
absl::StatusOr<Tensor> Run(const std::string& type, const Place& place,
                           std::vector<std::pair<std::string, Tensor>> inputs, AttrMap attrs = {},
                           const std::string& out = "Out") {
  OpDesc op;
  op.type = type;
  op.attrs = std::move(attrs);
  op.outputs[out] = {out};
  EagerInputs in;
  for (auto& [arg, t] : inputs) in[arg].push_back(Variable(std::move(t)));
  ASSIGN_OR_RETURN(EagerOutputs result, RunOpEager(std::move(op), place, in));
  return result.at(out)[0].tensor();
}

// `t` cast to `dtype` on `place` (itself when it has that dtype already).
absl::StatusOr<Tensor> CastTo(const Tensor& t, DataType dtype, const Place& place) {
  if (t.dtype() == dtype) return t;
  return Run("cast", place, {{"X", t}}, {{"out_dtype", dtype}});
}

absl::Status Train() {
  ASSIGN_OR_RETURN(Place place, ChooseDefaultPlace(FLAGS_place));
  ASSIGN_OR_RETURN(Device * device, DeviceRegistry::Global().GetDevice(place));
  ASSIGN_OR_RETURN(const std::optional<DataType> amp, ParseAmpFlag(FLAGS_amp));
  const DataType compute = amp.value_or(DataType::kFloat32);  // of the products
  if (FLAGS_samples <= 0 || FLAGS_features <= 0 || FLAGS_steps < 0) {
    return absl::InvalidArgumentError("--samples and --features must be > 0, --steps >= 0");
  }
  // No Executor here: each op runs eagerly and waits for its device, so
  // --in_order (accepted, as by every example) changes nothing.
  std::printf(
      "training a linear model on %s (%s): %d samples x %d features, products in %s, executor: "
      "none (eager ops, one at a time)\n",
      place.ToString().c_str(), device->Description().c_str(), FLAGS_samples, FLAGS_features,
      std::string(DataTypeName(compute)).c_str());

  // Synthetic data: y = X w_true + 0.5 + noise.
  const int64_t n = FLAGS_samples, f = FLAGS_features;
  std::mt19937_64 rng(FLAGS_seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> x(n * f), w_true(f), y(n);
  for (float& v : w_true) v = normal(rng);
  for (int64_t i = 0; i < n; ++i) {
    float acc = 0.5f;
    for (int64_t j = 0; j < f; ++j) {
      x[i * f + j] = normal(rng);
      acc += x[i * f + j] * w_true[j];
    }
    y[i] = acc + 0.01f * normal(rng);
  }
  ASSIGN_OR_RETURN(Tensor X, CopyTensorTo(Tensor::FromVector<float>({n, f}, x), place));
  ASSIGN_OR_RETURN(const Tensor X_low, CastTo(X, compute, place));  // cast once
  ASSIGN_OR_RETURN(Tensor Y, CopyTensorTo(Tensor::FromVector<float>({n, 1}, y), place));
  ASSIGN_OR_RETURN(Tensor neg_y, Run("scale", place, {{"X", Y}}, {{"scale", -1.0}}));
  const AttrMap zeros_f = {{"shape", std::vector<int64_t>{f, 1}}, {"value", 0.0}};
  ASSIGN_OR_RETURN(Tensor W, Run("fill_constant", place, {}, zeros_f));
  ASSIGN_OR_RETURN(Tensor b, Run("fill_constant", place, {},
                                 {{"shape", std::vector<int64_t>{1, 1}}, {"value", 0.0}}));

  const auto start = std::chrono::steady_clock::now();
  double first_loss = -1, loss = 0;
  for (int step = 0; step <= FLAGS_steps; ++step) {
    // Forward: diff = X W + b - y; loss = diff^T diff / n.
    // With --amp the product reads 16-bit copies (W's made each step from
    // its float32 master value) and its result is widened back.
    ASSIGN_OR_RETURN(const Tensor W_low, CastTo(W, compute, place));
    ASSIGN_OR_RETURN(Tensor z_low, Run("matmul", place, {{"X", X_low}, {"Y", W_low}}));
    ASSIGN_OR_RETURN(Tensor z, CastTo(z_low, DataType::kFloat32, place));
    ASSIGN_OR_RETURN(Tensor pred, Run("elementwise_add", place, {{"X", z}, {"Y", b}}));
    ASSIGN_OR_RETURN(Tensor diff, Run("elementwise_add", place, {{"X", pred}, {"Y", neg_y}}));
    if (step % FLAGS_log_every == 0 || step == FLAGS_steps) {
      ASSIGN_OR_RETURN(Tensor l, Run("matmul", place, {{"X", diff}, {"Y", diff}},
                                     {{"transpose_X", true}, {"alpha", 1.0 / n}}));
      ASSIGN_OR_RETURN(Tensor host, CopyTensorTo(l, CPUPlace()));
      loss = host.data<float>()[0];
      if (first_loss < 0) first_loss = loss;
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("step %4d  loss %.6f  (%.1f steps/s)\n", step, loss,
                  step > 0 ? step / secs : 0.0);
      std::fflush(stdout);
    }
    if (step == FLAGS_steps) break;
    // Backward through the gradient ops, then SGD.
    ASSIGN_OR_RETURN(Tensor g_diff, Run("scale", place, {{"X", diff}}, {{"scale", 2.0 / n}}));
    ASSIGN_OR_RETURN(Tensor g_pred,
                     Run("elementwise_add_grad", place,
                         {{"X", pred}, {"Y", neg_y}, {"Out@GRAD", g_diff}}, {}, "X@GRAD"));
    ASSIGN_OR_RETURN(Tensor g_z, Run("elementwise_add_grad", place,
                                     {{"X", z}, {"Y", b}, {"Out@GRAD", g_pred}}, {}, "X@GRAD"));
    ASSIGN_OR_RETURN(Tensor g_b, Run("elementwise_add_grad", place,
                                     {{"X", z}, {"Y", b}, {"Out@GRAD", g_pred}}, {}, "Y@GRAD"));
    ASSIGN_OR_RETURN(const Tensor g_z_low, CastTo(g_z, compute, place));
    ASSIGN_OR_RETURN(Tensor g_w_low,
                     Run("matmul_grad", place, {{"X", X_low}, {"Y", W_low}, {"Out@GRAD", g_z_low}},
                         {}, "Y@GRAD"));
    ASSIGN_OR_RETURN(Tensor g_w, CastTo(g_w_low, DataType::kFloat32, place));
    ASSIGN_OR_RETURN(Tensor dw, Run("scale", place, {{"X", g_w}}, {{"scale", -FLAGS_lr}}));
    ASSIGN_OR_RETURN(Tensor db, Run("scale", place, {{"X", g_b}}, {{"scale", -FLAGS_lr}}));
    ASSIGN_OR_RETURN(W, Run("elementwise_add", place, {{"X", W}, {"Y", dw}}));
    ASSIGN_OR_RETURN(b, Run("elementwise_add", place, {{"X", b}, {"Y", db}}));
  }
  std::printf("loss %.6f -> %.6f\n", first_loss, loss);
  if (FLAGS_steps > 0 && !(loss < first_loss)) {
    return absl::InternalError("the loss did not decrease");
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace tandem

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "trains a linear model with Tandem's kernels on the GPU (or CPU / sim)\n"
      "usage: linear_regression [--place=gpu:0] [--steps=200] [--lr=0.1] ...\n"
      "--helpmatch=linear_regression lists this program's flags, --helpfull every flag (the\n"
      "  executor's and backends' too)");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  absl::Status s = tandem::Train();
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
