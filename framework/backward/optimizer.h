// Optimizers: append backward and update ops for a loss.
//
//   SGD sgd(/*learning_rate=*/0.001);
//   RETURN_IF_ERROR(sgd.Minimize(&builder, loss));
//
//   Momentum momentum(/*learning_rate=*/0.01, /*mu=*/0.9, /*use_nesterov=*/true);
//   AdamOptions options;
//   options.weight_decay = 0.01;             // AdamW (decoupled) by default
//   Adam adam(/*learning_rate=*/1e-3, options);
//   RETURN_IF_ERROR(adam.Minimize(&builder, loss));
//   adam.state_vars("fc_w").at("moment1");   // the state variable's name
//
// Minimize appends the backward ops of the loss (AppendBackward), a
// learning-rate variable and one update op per trainable parameter: `sgd`,
// `momentum` or `adam` (ops/optimizer documents their math; for Adam the
// bias correction and the weight decay, decoupled AdamW-style or as an L2
// term, are both options). Sparse (SelectedRows) gradients, e.g. of an
// Embedding with is_sparse, update only the rows present (lazy Momentum and
// Adam: the state of other rows is left as it is).
//
// Placement (docs/design.md, "Placement rules"): the ops and initialisers
// made here carry no op_device but an OpDesc::origin, and the placer's rules
// place them: each update op runs where its parameter is first read, so a
// table kept on the CPU by device_guard("cpu") is updated on the CPU; the
// optimizer's state (Momentum's velocity, Adam's moment1 and moment2),
// persistable variables initialised to zero by the startup program, is
// initialised where its parameter is. Host scalars live on the host and the
// update kernels read them as HostMemory arguments, so no step copies them:
// the learning rate, and Adam's beta1_pow and beta2_pow (beta^t, starting at
// beta), which the adam kernel itself advances each step. Hyper-parameters are
// checked by Minimize (InvalidArgument naming the op and the value, through
// the op's schema). Not thread-safe.
#ifndef TANDEM_FRAMEWORK_BACKWARD_OPTIMIZER_H_
#define TANDEM_FRAMEWORK_BACKWARD_OPTIMIZER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/backward/backward.h"
#include "framework/program/program_builder.h"

namespace tandem {

// Dynamic loss scaling (float16 training, PyTorch GradScaler's defaults):
// the loss is multiplied by a scale before the backward, every gradient is
// divided by it and checked for inf / NaN after; a step with one is skipped
// (no parameter or optimizer state changes) and the scale multiplied by
// backoff_factor; growth_interval good steps in a row multiply it by
// growth_factor. bfloat16 needs none (float32's range).
struct LossScalingOptions {
  double initial_scale = 65536;  // 2^16; scales stay powers of two with the defaults
  double growth_factor = 2;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

// The host variables of dynamic loss scaling after Minimize: the scale
// (float32 [1]), the good steps in a row (int32 [1]) and whether the last
// step was skipped (bool [1]); persistable, so checkpoints keep them.
struct LossScalingVars {
  std::string scale, good_steps, step_skipped;
};

// The base of the optimizers (see the header comment).
class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // Minimize then scales the loss (see LossScalingOptions): it appends
  // elementwise_mul(loss, scale) before the backward, one
  // check_finite_and_unscale per gradient (in place, placed with the update
  // of its parameter) and update_loss_scaling after, and gives every update
  // op the skip flag as SkipUpdate. A skipped step costs one device-to-host
  // copy of each gradient's flag, as PyTorch's GradScaler's does.
  void EnableDynamicLossScaling(LossScalingOptions options = {}) { loss_scaling_ = options; }
  // Empty names unless dynamic loss scaling was enabled before Minimize.
  const LossScalingVars& loss_scaling_vars() const { return loss_scaling_vars_; }

  // Minimize then clips the gradients by their global norm (PyTorch's
  // clip_grad_norm_): one squared_l2_norm per gradient (origin
  // kGradNormOf: placed where the gradient is produced, so an offloaded
  // update's norm runs on the device and not the gradient's pass),
  // global_norm_clip on the default place (on a device it reads the norms
  // and writes the factor in device memory: no host sync), and every
  // update op multiplies its gradient by the factor min(1, max_norm /
  // (norm + 1e-6)) (its GradScale input) as it reads it (after the
  // unscaling, with loss scaling). Exact; every update then waits for
  // every gradient.
  // Minimize refuses sparse gradients (Unimplemented), parameters of mixed
  // dtypes and 16-bit gradients of 16-bit parameters (InvalidArgument).
  void EnableGradientClipping(double max_norm) { max_grad_norm_ = max_norm; }
  // The float32 (float64 for float64 parameters) [1] variable the global
  // norm of the step's gradients is written to (fetch it); empty unless
  // clipping was enabled before Minimize.
  const std::string& global_norm_var() const { return global_norm_var_; }

  // Mixed precision (on by default): a parameter read in 16 bits gets its
  // gradient through the backward of its cast, a widening cast of the
  // 16-bit gradient. Minimize lets the update (and the clip norm) read the
  // 16-bit gradient instead, widening it inside the kernel (exact: widening
  // is), and drops the cast: an offloaded parameter's host update then
  // reads 2 bytes per element where the cast read 2, wrote 4 and the
  // update read 4. Only where nothing else reads the float32 gradient, and
  // not with dynamic loss scaling (its unscale reads float32). Off: the
  // float32 gradient variables stay (to fetch them).
  void set_fold_gradient_casts(bool on) { fold_gradient_casts_ = on; }

  // Mixed precision's working copies (on by default; Adam only): a float32
  // parameter that the forward reads through a narrowing cast the AMP pass
  // inserted keeps that cast's 16-bit output as a persistable variable (its
  // working copy, "<param>.cast_bfloat16"), which the update writes as it
  // writes the parameter (adam's ParamCastOut) instead of a cast at the
  // start of the next step; the startup program casts it once. Each step's
  // forward reads the values the cast gave: training is bit for bit the
  // same. An offloaded parameter's host update then makes its 16-bit copy
  // from the block it just wrote (2 bytes written per element, where the
  // cast read 4 and wrote 2), and the copy goes up as soon as the update is
  // done. Only with a dense gradient, and where no op derives from the
  // cast (its gradient cast stays with dynamic loss scaling or with
  // set_fold_gradient_casts(false); a recomputed cast). Off: the casts stay
  // in the forward.
  void set_working_copies(bool on) { working_copies_ = on; }

  // Appends backward ops and one update op per trainable parameter.
  // InvalidArgument for a learning rate that is not finite and positive,
  // or for bad hyper-parameters; the builder's error if it has one.
  absl::Status Minimize(ProgramBuilder* builder, Var loss);
  // Name of the learning-rate variable after Minimize.
  const std::string& learning_rate_var() const { return lr_var_; }
  // The state variables of `param` after Minimize, by slot ("velocity";
  // "moment1", "moment2", "beta1_pow", "beta2_pow"); empty for SGD or an
  // unknown parameter.
  const std::map<std::string, std::string>& state_vars(const std::string& param) const;

 protected:
  Optimizer(std::string op_type, double learning_rate)
      : op_type_(std::move(op_type)), learning_rate_(learning_rate) {}

  // Adds the optimizer's state inputs, outputs and attributes to `op`, the
  // update op of parameter `param` (Param, Grad, LearningRate and ParamOut
  // are set), creating state with AddState.
  virtual void AddUpdateArgs(ProgramBuilder* builder, const VarDesc& param, OpDesc* op) = 0;
  // Whether the update op writes a 16-bit working copy (ParamCastOut).
  virtual bool WritesWorkingCopies() const { return false; }

  // Creates a persistable variable for slot `slot` of `param`, of `dtype`
  // and `shape`, set to `value` by the startup program on the host or with
  // the parameter; binds it to input `arg` and output `arg + "Out"`
  // of `op`, and records it in state_vars.
  void AddState(ProgramBuilder* builder, const VarDesc& param, OpDesc* op, const std::string& arg,
                const std::string& slot, DataType dtype, const Shape& shape, double value,
                bool on_host);

 private:
  std::string op_type_;
  double learning_rate_;
  std::string lr_var_;
  // Dynamic loss scaling: the scaled loss, and the unscale and skip ops
  // after the backward; returns the skip flag's name.
  absl::StatusOr<Var> ScaleLoss(ProgramBuilder* builder, Var loss);
  absl::StatusOr<std::string> AppendUnscale(ProgramBuilder* builder, const GradMap& grads);
  // Gradient clipping: the norms and the clip factor (clip_scale_var_).
  absl::Status AppendGradientClip(ProgramBuilder* builder, const GradMap& grads);

  std::map<std::string, std::map<std::string, std::string>> state_;  // param -> slot -> var
  std::optional<LossScalingOptions> loss_scaling_;
  LossScalingVars loss_scaling_vars_;
  std::optional<double> max_grad_norm_;
  std::string clip_scale_var_;  // the updates' GradScale
  std::string global_norm_var_;
  bool fold_gradient_casts_ = true;
  bool working_copies_ = true;
};

// param -= lr * grad.
class SGD final : public Optimizer {
 public:
  explicit SGD(double learning_rate) : Optimizer("sgd", learning_rate) {}

 private:
  void AddUpdateArgs(ProgramBuilder*, const VarDesc&, OpDesc*) override {}
};

// velocity = mu * velocity + grad; param -= lr * velocity, or with Nesterov
// param -= lr * (grad + mu * velocity). mu must be finite and >= 0.
class Momentum final : public Optimizer {
 public:
  Momentum(double learning_rate, double mu, bool use_nesterov = false)
      : Optimizer("momentum", learning_rate), mu_(mu), use_nesterov_(use_nesterov) {}

 private:
  void AddUpdateArgs(ProgramBuilder* builder, const VarDesc& param, OpDesc* op) override;
  double mu_;
  bool use_nesterov_;
};

struct AdamOptions {
  double beta1 = 0.9;    // in [0, 1)
  double beta2 = 0.999;  // in [0, 1)
  double epsilon = 1e-8;
  double weight_decay = 0;
  // true: AdamW, param *= 1 - lr * weight_decay before the Adam step;
  // false: L2, weight_decay * param is added to the gradient.
  bool decoupled_weight_decay = true;
};

// Adam with bias correction (the adam op).
class Adam final : public Optimizer {
 public:
  explicit Adam(double learning_rate, AdamOptions options = {})
      : Optimizer("adam", learning_rate), options_(options) {}

 private:
  void AddUpdateArgs(ProgramBuilder* builder, const VarDesc& param, OpDesc* op) override;
  bool WritesWorkingCopies() const override { return true; }
  AdamOptions options_;
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_BACKWARD_OPTIMIZER_H_
