// ProgramBuilder: builds a main program (the training step) and a startup
// program (parameter initialisation), one method per op, with device_guard
// scopes that place the ops built inside them.
//
//   ProgramBuilder b;
//   Var ids = b.FillConstant({1}, DataType::kInt64, 128);
//   Var label = b.FillConstant({1, 150}, DataType::kFloat32, 0.5);
//   Var emb;
//   {
//     auto guard = b.device_guard("cpu");        // ops built here run on the CPU
//     emb = b.Embedding(ids, {10000000, 150});
//   }                                            // previous device restored
//   Var out = b.L2Normalize(emb, /*axis=*/-1);
//   Var loss = b.Mean(b.SquareErrorCost(out, label));
//   RETURN_IF_ERROR(b.status());                 // first error, if any
//
// Errors are sticky (like tensorflow::Scope): the first invalid call records
// an InvalidArgument naming the op and argument, later calls do nothing and
// return an invalid Var, and status() reports it. Not thread-safe.
#ifndef TANDEM_FRAMEWORK_PROGRAM_PROGRAM_BUILDER_H_
#define TANDEM_FRAMEWORK_PROGRAM_PROGRAM_BUILDER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "framework/program/program.h"

namespace tandem {

// A handle to a program variable.
struct Var {
  std::string name;
  bool valid() const { return !name.empty(); }
};

// The seed a random initializer or a dropout op gets when given seed 0:
// the 64-bit FNV-1a hash of the bytes of `name` (offset basis
// 0xcbf29ce484222325, prime 0x100000001b3) shifted right by one bit, a
// non-negative int64. A fixed function rather than std::hash, which differs
// between standard libraries, so default initial weights are the same with
// every toolchain: DefaultSeed("a") == 0xaf63dc4c8601ec8c >> 1.
int64_t DefaultSeed(absl::string_view name);

// How the startup program initialises a parameter: a constant, or values
// from the counter-based uniform_random / gaussian_random ops (the same bits
// on every backend for a given seed; seed 0 takes DefaultSeed(parameter
// name)). Xavier (Glorot) initializers take fan_in and fan_out from the
// shape: rank 0: 1, 1; rank 1: dim 0 for both; rank 2 ([in, out], as
// matmul(x, w) uses w): dim 0, dim 1; rank >= 3 ([out_c, in_c, k...], a
// convolution filter): in_c * receptive field, out_c * receptive field.
//   XavierUniform: uniform in [-a, a), a = sqrt(6 / (fan_in + fan_out)).
//   XavierNormal: normal with mean 0 and std sqrt(2 / (fan_in + fan_out)).
struct Initializer {
  enum class Kind { kConstant, kUniform, kNormal, kXavierUniform, kXavierNormal };
  Kind kind = Kind::kUniform;
  double value = 0;                 // kConstant
  double low = -0.05, high = 0.05;  // kUniform
  double mean = 0, std = 1;         // kNormal
  int64_t seed = 0;                 // 0: DefaultSeed(parameter name)

  static Initializer Constant(double v) { return {Kind::kConstant, v}; }
  static Initializer Uniform(double low, double high, int64_t seed = 0) {
    return {Kind::kUniform, 0, low, high, 0, 1, seed};
  }
  static Initializer Normal(double mean, double std, int64_t seed = 0) {
    return {Kind::kNormal, 0, 0, 0, mean, std, seed};
  }
  static Initializer XavierUniform(int64_t seed = 0) {
    return {Kind::kXavierUniform, 0, 0, 0, 0, 1, seed};
  }
  static Initializer XavierNormal(int64_t seed = 0) {
    return {Kind::kXavierNormal, 0, 0, 0, 0, 1, seed};
  }
};

class ProgramBuilder {
 public:
  ProgramBuilder() = default;
  ProgramBuilder(const ProgramBuilder&) = delete;
  ProgramBuilder& operator=(const ProgramBuilder&) = delete;

  const absl::Status& status() const { return status_; }
  Program& main_program() { return main_; }
  Program& startup_program() { return startup_; }

  // Places every op built while it lives (device_guard), or every parameter
  // created while it lives (parameters_on); scopes nest, the innermost wins,
  // and destruction restores the enclosing device. Move-only.
  class DeviceGuardScope {
   public:
    DeviceGuardScope(DeviceGuardScope&& other) noexcept;
    DeviceGuardScope& operator=(DeviceGuardScope&&) = delete;
    ~DeviceGuardScope();

   private:
    friend class ProgramBuilder;
    DeviceGuardScope(std::string* slot, std::string previous)
        : slot_(slot), previous_(std::move(previous)) {}
    std::string* slot_;  // the builder's device_ or parameter_device_
    std::string previous_;
  };
  // `device`: a place string as place.h states it ("cpu", "gpu", "gpu:N",
  // "<backend>:N": lower-case, no whitespace, no leading zeros), or "" for
  // the executor's default place. Anything else ("GPU", " cpu") makes status()
  // InvalidArgument naming the string and the accepted form.
  DeviceGuardScope device_guard(absl::string_view device);
  const std::string& current_device() const { return device_; }
  // Parameters created while it lives are initialised on `device` (a place
  // string as device_guard takes; "" restores the default: the device of
  // the op that creates them), whatever device_guard the ops are built
  // under. The placer then keeps them there: their updates run where they
  // live (rule `param`) and the 16-bit casts ApplyAmp puts before their
  // readers run there too (rule `cast-at-source`), so with
  // parameters_on("cpu") and the ops on a GPU, the float32 master weights
  // and the optimizer's state stay in host memory, 16-bit weights go up and
  // 16-bit gradients come down (optimizer offload).
  DeviceGuardScope parameters_on(absl::string_view device);

  // Sets the transfer policy of ops built while it lives. Move-only.
  class TransferPolicyScope {
   public:
    TransferPolicyScope(TransferPolicyScope&& other) noexcept;
    TransferPolicyScope& operator=(TransferPolicyScope&&) = delete;
    ~TransferPolicyScope();

   private:
    friend class ProgramBuilder;
    TransferPolicyScope(ProgramBuilder* b, TransferPolicy previous)
        : builder_(b), previous_(previous) {}
    ProgramBuilder* builder_;
    TransferPolicy previous_;
  };
  TransferPolicyScope transfer_policy(TransferPolicy policy);

  // A variable fed by the caller on every run (dims may be -1).
  Var Data(const std::string& name, DataType dtype, const Shape& shape);
  // A trainable, persistable parameter, initialised by the startup program
  // on the current device.
  Var CreateParameter(const std::string& name, DataType dtype, const Shape& shape,
                      Initializer init = Initializer::Uniform(-0.05, 0.05));
  // A persistable, non-trainable variable holding `value` (set by the
  // startup program), e.g. a learning rate. InvalidArgument if the main
  // program has a variable `name` already.
  Var CreatePersistableConstant(const std::string& name, DataType dtype, const Shape& shape,
                                double value);

  // Generic op: validates against the schema, creates outputs named
  // "<type>_<n>.tmp_<i>" (or `output_names` for the given args), runs shape
  // inference and appends the op. An output listed in `output_counts` is
  // bound to that many variables (a duplicable output such as split's Out);
  // the others to one. Returns the output vars by argument.
  std::map<std::string, std::vector<Var>> AppendOp(
      const std::string& type, const std::map<std::string, std::vector<Var>>& inputs, AttrMap attrs,
      const std::vector<std::string>& outputs,
      const std::map<std::string, std::string>& output_names = {},
      const std::map<std::string, int>& output_counts = {});

  // One method per op (see ops/ for their semantics).
  Var FillConstant(const std::vector<int64_t>& shape, DataType dtype, double value);
  Var ElementwiseAdd(Var x, Var y, int64_t axis = -1);
  Var Matmul(Var x, Var y, bool transpose_x = false, bool transpose_y = false, double alpha = 1.0);
  Var Scale(Var x, double scale, double bias = 0.0, bool bias_after_scale = true);
  Var Cast(Var x, DataType out_dtype);
  Var LookupTable(Var ids, Var table, bool is_sparse = false, int64_t padding_idx = -1);
  // Creates the table parameter (on the current device) and looks `ids` up.
  Var Embedding(Var ids, const std::vector<int64_t>& size, bool is_sparse = false,
                int64_t padding_idx = -1, Initializer init = Initializer::Uniform(-0.05, 0.05),
                const std::string& param_name = "");
  Var L2Normalize(Var x, int64_t axis = -1, double epsilon = 1e-10);
  Var SquareErrorCost(Var input, Var label);
  Var Mean(Var x);
  Var ElementwiseSub(Var x, Var y, int64_t axis = -1);
  Var ElementwiseMul(Var x, Var y, int64_t axis = -1);
  Var ElementwiseDiv(Var x, Var y, int64_t axis = -1);
  Var Relu(Var x);
  Var Sigmoid(Var x);
  Var Tanh(Var x);
  // x * Phi(x); approximate: the tanh form (GPT-2's).
  Var Gelu(Var x, bool approximate = false);
  Var Softmax(Var x, int64_t axis = -1);
  // The sum / mean over `dims` (negative count from the end; empty: all),
  // the reduced dims kept as 1 when keep_dim.
  Var ReduceSum(Var x, const std::vector<int64_t>& dims = {}, bool keep_dim = false);
  Var ReduceMean(Var x, const std::vector<int64_t>& dims = {}, bool keep_dim = false);
  // Paddle's mul: X and Y flattened to matrices at x/y_num_col_dims.
  Var Mul(Var x, Var y, int64_t x_num_col_dims = 1, int64_t y_num_col_dims = 1);
  // A fully connected layer: x's dims from in_num_col_dims on (known, K in
  // all) are flattened and multiplied by a new parameter "<name>.w_0" [K,
  // size] (`w_init`, Xavier-uniform by default), plus "<name>.b_0" [size]
  // (zeros) when with_bias; both are created on the current device with
  // x's dtype. Out is x.dims[:in_num_col_dims] + [size], named
  // "<name>.tmp_0"; `name` defaults to a fresh "fc_<n>".
  Var Fc(Var x, int64_t size, int64_t in_num_col_dims = 1, bool with_bias = true,
         const std::string& name = "", Initializer w_init = Initializer::XavierUniform());
  // The per-row loss [..., 1] of softmax_with_cross_entropy on the last dim
  // of `logits` with int64 class labels; rows labelled ignore_index add 0.
  // `softmax`, if not null, receives the softmax output (which is
  // stop_gradient: gradients flow through the loss only).
  Var SoftmaxWithCrossEntropy(Var logits, Var label, int64_t ignore_index = -100,
                              Var* softmax = nullptr);
  // The float32 [1] fraction of rows whose label is among the top-k
  // scores; `correct` and `total`, if not null, receive the int64 [1]
  // counts. Metrics are stop_gradient.
  Var Accuracy(Var scores, Var label, int64_t k = 1, Var* correct = nullptr, Var* total = nullptr);
  Var ShapeOf(Var x);
  Var Slice(Var x, const std::vector<int64_t>& axes, const std::vector<int64_t>& starts,
            const std::vector<int64_t>& ends);
  Var CropTensor(Var x, Var shape, const std::vector<int64_t>& offsets = {});
  // x with dims `shape` (0 copies x's dim, one -1 is inferred); shares x's
  // buffer at run time.
  Var Reshape(Var x, const std::vector<int64_t>& shape);
  Var Transpose(Var x, const std::vector<int64_t>& axis);
  Var Concat(const std::vector<Var>& xs, int64_t axis = 0);
  // x cut along `axis` into `num` equal pieces, or into pieces of the given
  // `sections` sizes (one may be -1: the rest).
  std::vector<Var> Split(Var x, int64_t num, int64_t axis = 0);
  std::vector<Var> SplitSections(Var x, const std::vector<int64_t>& sections, int64_t axis = 0);
  // Seeded dropout (upscale_in_train; is_test: identity). Seed 0 takes
  // DefaultSeed(output's name), so two dropout ops draw different masks;
  // the kernel adds its run count, so every step draws a new one. The bool
  // Mask output is stop_gradient.
  Var Dropout(Var x, double dropout_prob = 0.5, bool is_test = false, int64_t seed = 0);
  // A 2-D convolution of NCHW `input` (channels C = input dim 1, known)
  // with a new filter parameter "<name>.w_0" [num_filters, C / groups,
  // filter_size, filter_size] (`w_init`, Xavier-uniform by default) and,
  // when with_bias, "<name>.b_0" [num_filters] (zeros) added per output
  // channel; both are created on the current device with input's dtype.
  // `name` defaults to a fresh "conv2d_<n>".
  Var Conv2D(Var input, int64_t num_filters, int64_t filter_size, int64_t stride = 1,
             int64_t padding = 0, int64_t groups = 1, bool with_bias = true,
             const std::string& name = "", Initializer w_init = Initializer::XavierUniform());
  // Max or average ("max" / "avg") pooling of NCHW x over square windows.
  Var Pool2D(Var x, int64_t pool_size, const std::string& pool_type = "max",
             int64_t pool_stride = 1, int64_t pool_padding = 0, bool global_pooling = false,
             bool exclusive = true);
  // layer_norm of x over dims [begin_norm_axis, rank) (known, D elements in
  // all) with parameters "<name>.scale_0" [D] (ones) when `scale` and
  // "<name>.b_0" [D] (zeros) when `shift`, created on the current device
  // with x's dtype. Returns Y; Mean and Variance are stop_gradient. `name`
  // defaults to a fresh "layer_norm_<n>".
  Var LayerNorm(Var x, int64_t begin_norm_axis = 1, double epsilon = 1e-5, bool scale = true,
                bool shift = true, const std::string& name = "");
  // Multi-head self-attention of qkv [batch, seq, 3 * width] (the query,
  // key and value projections side by side, e.g. one Fc of width 3 * width)
  // with `num_heads` heads: returns Out [batch, seq, width]; the saved
  // log-sum-exp (self_attention's Lse) is stop_gradient. scale 0: 1 /
  // sqrt(width / num_heads).
  Var SelfAttention(Var qkv, int64_t num_heads, bool causal = true, double scale = 0);

  // Records `error` as the sticky status if none is recorded yet.
  void RecordError(absl::Status error);
  // A fresh unique variable name "<prefix>_<n>.tmp_0".
  std::string UniqueName(const std::string& prefix);

 private:
  Var AppendSingle(const std::string& type, const std::map<std::string, std::vector<Var>>& inputs,
                   AttrMap attrs, const std::string& output = "Out");
  // Sets `*slot` (device_ or parameter_device_) to `device` while the scope
  // lives; an invalid place string is recorded as `what`'s error.
  DeviceGuardScope SetDevice(absl::string_view what, absl::string_view device, std::string* slot);
  // The startup op that sets `var` by `init`, placed on `device`.
  void AppendInitOp(const std::string& var, DataType dtype, const Shape& shape,
                    const Initializer& init, const std::string& device);
  // Declares the persistable `v` in the startup and the main program; false
  // (the error recorded, naming `what` and both declarations) if the startup
  // program declares it differently.
  bool DeclarePersistable(const VarDesc& v, absl::string_view what);

  Program main_;
  Program startup_;
  absl::Status status_;
  std::string device_;
  std::string parameter_device_;  // parameters_on's device; "" follows device_
  TransferPolicy policy_ = TransferPolicy::kInherit;
  std::map<std::string, int> name_counters_;
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_PROGRAM_PROGRAM_BUILDER_H_
