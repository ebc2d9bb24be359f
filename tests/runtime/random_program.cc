#include "tests/runtime/random_program.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "backends/sim/sim_device.h"
#include "framework/amp/amp.h"
#include "framework/backward/optimizer.h"
#include "framework/device/device.h"
#include "framework/tensor/scope.h"
#include "framework/tensor/tensor.h"

namespace tandem {
namespace differential {
namespace {

// SplitMix64's finaliser: the feeds' and the generator's seeds.
uint64_t Mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A small deterministic generator (the same numbers with every standard
// library, unlike std::uniform_*_distribution).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() { return Mix(state_ += 0x9e3779b97f4a7c15ULL); }  // SplitMix64
  // Uniform in [0, n).
  int64_t Below(int64_t n) { return n <= 1 ? 0 : static_cast<int64_t>(Next() % n); }
  // Uniform in [0, 1).
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  bool Chance(double p) { return Unit() < p; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(static_cast<int64_t>(v.size()))];
  }

 private:
  uint64_t state_;
};

std::string GuardName(const std::string& guard) { return guard.empty() ? "-" : guard; }

std::string ShapeString(int64_t rows, int64_t cols) {
  return absl::StrCat("[", rows, ", ", cols, "]");
}

// A forward value of the program: a [rows, cols] float32 variable.
struct Value {
  Var var;
  int64_t rows = 0, cols = 0;
  double bound = 1;         // a crude bound on |value|
  bool uses_param = false;  // depends on a trainable parameter
  bool is_input = false;    // a fed float input
  bool consumed = false;    // read by a later forward op
};

class Generator {
 public:
  Generator(uint64_t seed, const RandomProgramOptions& options, GeneratedProgram* out)
      : rng_(Mix(seed ^ 0x5eedULL)),
        probe_rng_(Mix(seed ^ 0x9b0beULL)),
        clip_rng_(Mix(seed ^ 0xc11bULL)),
        layer_rng_(Mix(seed ^ 0x1a7e5ULL)),
        amp_rng_(Mix(seed ^ 0xa3b0ULL)),
        o_(options),
        out_(out),
        b_(*out->builder) {}

  absl::Status Build();

 private:
  const std::string& RandomGuard() { return rng_.Pick(o_.guards); }
  // The place a guard resolves to ("" is the executor's default place).
  std::string Resolve(const std::string& guard) const {
    return guard.empty() ? default_place_ : guard;
  }
  void Log(std::string line) { out_->log.push_back(std::move(line)); }
  int NextId() { return counter_++; }

  // A new dense parameter of `shape` created under a random guard (or none).
  Var NewParameter(const std::string& prefix, const Shape& shape);
  Initializer RandomInit(const Shape& shape, double scale);
  // Records the first forward reader of each parameter (for the summary and
  // the host-parameter-used-on-a-device flag).
  void ReadParameter(const std::string& param, const std::string& guard);

  // A random value to read: mostly an unconsumed one (chains), else any
  // (branches). `want` filters; null if none passes.
  template <typename Pred>
  Value* PickValue(Pred want);
  Value* PickAny() {
    return PickValue([](const Value&) { return true; });
  }
  // Adds `v` (produced by `desc` under `guard`), wrapped in tanh under the
  // same guard when its bound is large.
  void Add(Value v, const std::string& guard, const std::string& desc);

  // One random forward op; false if it found no operand that fits (the
  // caller draws again).
  bool RandomOp();
  bool Activation();
  bool ScaleOp();
  bool SoftmaxOp();
  bool Binary();
  bool MatmulParam();
  bool MulParam();
  bool FcOp();
  // An fc of `x` (size n) under a random guard, its parameters there too.
  void FcOn(Value* x, int64_t n, bool bias, const Initializer& init, const std::string& note);
  bool MatmulValues();
  bool Reduce();
  bool SliceOp();
  bool ConcatOp();
  bool ReshapeOp();
  bool SplitOp();
  bool CropOp();
  bool TransposeOp();
  bool SquareError();
  bool Lookup();
  // A transformer layer op (RandomProgramOptions::layer_op_probability).
  bool LayerOp();
  bool LayerNormOp();
  bool DropoutOp();
  bool AttentionOp();
  // Registers a parameter an op made under `guard`.
  void AddOpParameter(const std::string& name, const std::string& guard);
  // AMP (RandomProgramOptions::amp_probability): rewrites the forward
  // program; returns the loss scaling the optimizer then enables (float16).
  absl::StatusOr<std::optional<LossScalingOptions>> MaybeApplyAmp();

  // The loss: the mean of the sum of every branch end's mean.
  absl::Status Loss();
  // Sometimes (RandomProgramOptions::probe_probability) a forward op after
  // the loss that reads a dense parameter (times the loss) and whose value
  // is only fetched: nothing in the backward depends on it, so only the
  // plan's write-after-read edges keep the parameter's update (in place,
  // maybe of the placer's copy that the probe reads too) after it. Drawn
  // from a stream of its own: a program without a probe is what it was.
  void Probe();
  absl::Status Optimize();
  void ChooseFetches();

  Rng rng_;
  Rng probe_rng_;
  Rng clip_rng_;       // its own stream: programs drawn before it stay the same
  Rng layer_rng_;      // whether (and which) layer ops are drawn
  Rng amp_rng_;        // AMP and its loss scaling
  std::string probe_;  // the probe's value, fetched; empty: none
  const RandomProgramOptions& o_;
  GeneratedProgram* out_;
  ProgramBuilder& b_;
  std::string default_place_;
  std::vector<Value> values_;
  int counter_ = 0;
  // Parameters: their init guard, and the guard of their first reader.
  std::map<std::string, std::string> param_guard_;
  std::map<std::string, std::string> first_reader_;
  std::vector<std::string> params_;        // creation order
  std::vector<std::string> dense_params_;  // trainable dense parameters
  // Tables and the lookups still to make.
  struct Table {
    Var var;  // invalid until created (Embedding creates it at its lookup)
    int64_t rows = 0, dim = 0;
    bool sparse = false;
    bool via_embedding = false;  // the first lookup is Embedding(...)
    std::string guard;           // where the table is created
    int lookups_left = 1;
    int index = 0;
    int64_t padding_idx = -1;  // -1: none
  };
  std::vector<Table> tables_;
  // The id feeds made so far: ids in [0, range), [batch] or [batch, 1].
  struct IdFeed {
    Var var;
    int64_t range = 0;
    int64_t length = 0;  // ids per run
    bool column = false;
  };
  std::vector<IdFeed> id_feeds_;
};

Initializer Generator::RandomInit(const Shape& shape, double scale) {
  const int64_t seed = static_cast<int64_t>(rng_.Next() >> 2) + 1;
  switch (rng_.Below(4)) {
    case 0:
      return Initializer::Constant(scale * 0.25);
    case 1:
      return Initializer::Normal(0, scale * 0.5, seed);
    case 2:
      return shape.rank() == 2 ? Initializer::XavierUniform(seed)
                               : Initializer::Uniform(-scale, scale, seed);
    default:
      return Initializer::Uniform(-scale, scale, seed);
  }
}

Var Generator::NewParameter(const std::string& prefix, const Shape& shape) {
  const std::string name = absl::StrCat(prefix, NextId());
  const std::string& guard = RandomGuard();
  Var p;
  {
    auto g = b_.device_guard(guard);
    p = b_.CreateParameter(name, DataType::kFloat32, shape, RandomInit(shape, 0.3));
  }
  param_guard_[name] = guard;
  params_.push_back(name);
  dense_params_.push_back(name);
  Log(absl::StrCat("param ", name, " ", shape.ToString(), " init@", GuardName(guard)));
  return p;
}

void Generator::ReadParameter(const std::string& param, const std::string& guard) {
  if (first_reader_.count(param)) return;
  first_reader_[param] = guard;
  auto it = param_guard_.find(param);
  if (it == param_guard_.end()) return;
  const std::string home = Resolve(it->second), user = Resolve(guard);
  if (home == "cpu" && user != "cpu") out_->has_host_parameter_used_on_device = true;
  if (home != user) out_->has_parameter_used_elsewhere = true;
}

template <typename Pred>
Value* Generator::PickValue(Pred want) {
  std::vector<Value*> fresh, any;
  for (Value& v : values_) {
    if (!want(v)) continue;
    any.push_back(&v);
    if (!v.consumed) fresh.push_back(&v);
  }
  if (any.empty()) return nullptr;
  if (!fresh.empty() && rng_.Chance(0.7)) return rng_.Pick(fresh);
  return rng_.Pick(any);
}

void Generator::Add(Value v, const std::string& guard, const std::string& desc) {
  Log(absl::StrCat(desc, " -> ", v.var.name, " ", ShapeString(v.rows, v.cols)));
  if (v.bound > 6) {
    auto g = b_.device_guard(guard);
    Var t = b_.Tanh(v.var);
    Log(absl::StrCat("tanh@", GuardName(guard), " (", v.var.name, ") -> ", t.name, " (bound ",
                     v.bound, ")"));
    v.var = t;
    v.bound = 1;
  }
  values_.push_back(v);
}

bool Generator::Activation() {
  Value* x = PickAny();
  if (x == nullptr) return false;
  x->consumed = true;
  Value v = *x;
  const std::string& guard = RandomGuard();
  auto g = b_.device_guard(guard);
  const char* type;
  switch (rng_.Below(4)) {
    case 0:
      type = "relu";
      v.var = b_.Relu(x->var);
      break;
    case 3:  // |gelu(x)| <= |x|: the bound stays
      type = "gelu";
      v.var = b_.Gelu(x->var, /*approximate=*/rng_.Below(2) == 1);
      break;
    case 1:
      type = "sigmoid";
      v.var = b_.Sigmoid(x->var);
      v.bound = 1;
      break;
    default:
      type = "tanh";
      v.var = b_.Tanh(x->var);
      v.bound = 1;
      break;
  }
  v.is_input = false;
  v.consumed = false;
  const std::string name = x->var.name;
  Add(v, guard, absl::StrCat(type, "@", GuardName(guard), " (", name, ")"));
  return true;
}

bool Generator::ScaleOp() {
  Value* x = PickAny();
  if (x == nullptr) return false;
  x->consumed = true;
  Value v = *x;
  const std::string& guard = RandomGuard();
  const double bias = rng_.Pick(std::vector<double>{0.0, 0.125, -0.25});
  const bool after = rng_.Chance(0.7);
  auto g = b_.device_guard(guard);
  v.var = b_.Scale(x->var, 0.5, bias, after);
  v.bound = 0.5 * v.bound + std::abs(bias);
  v.is_input = false;
  v.consumed = false;
  Add(v, guard,
      absl::StrCat("scale@", GuardName(guard), " (", x->var.name, ", 0.5, ", bias, ", ",
                   after ? "after" : "before", ")"));
  return true;
}

bool Generator::SoftmaxOp() {
  Value* x = PickAny();
  if (x == nullptr) return false;
  x->consumed = true;
  Value v = *x;
  const std::string& guard = RandomGuard();
  const int64_t axis = rng_.Chance(0.75) ? -1 : 0;
  auto g = b_.device_guard(guard);
  v.var = b_.Softmax(x->var, axis);
  v.bound = 1;
  v.is_input = false;
  v.consumed = false;
  Add(v, guard,
      absl::StrCat("softmax@", GuardName(guard), " (", x->var.name, ", axis ", axis, ")"));
  return true;
}

bool Generator::Binary() {
  Value* x = PickAny();
  if (x == nullptr) return false;
  const int64_t rows = x->rows, cols = x->cols;
  const std::string& guard = RandomGuard();
  // Y: a value of X's shape, a broadcast value ([rows, 1], [1, cols] or
  // [1, 1]), a new parameter ([cols], [rows] with axis 0, or X's shape) or
  // a constant.
  Var y;
  double y_bound = 1;
  bool y_param = false;
  std::string y_desc;
  int64_t axis = -1;
  const int kind = static_cast<int>(rng_.Below(6));
  Value* other = nullptr;
  if (kind <= 1) {
    other = PickValue([&](const Value& v) { return v.rows == rows && v.cols == cols; });
  } else if (kind == 2) {
    other = PickValue([&](const Value& v) {
      return (v.rows == rows && v.cols == 1) || (v.rows == 1 && v.cols == cols) ||
             (v.rows == 1 && v.cols == 1);
    });
  }
  if (other != nullptr) {
    other->consumed = true;
    y = other->var;
    y_bound = other->bound;
    y_param = other->uses_param;
    y_desc = other->var.name;
  } else if (kind == 3 || kind == 2) {
    const int64_t shape_kind = rng_.Below(3);
    const Shape shape = shape_kind == 0   ? Shape({cols})
                        : shape_kind == 1 ? Shape({rows})
                                          : Shape({rows, cols});
    if (shape_kind == 1) axis = 0;  // Paddle's axis: Y's dims align with X's from 0
    y = NewParameter("b", shape);
    y_bound = 0.3 * std::sqrt(6.0);
    y_param = true;
    y_desc = y.name;
    ReadParameter(y.name, guard);
  } else {
    auto g = b_.device_guard(guard);
    const double c = rng_.Pick(std::vector<double>{0.5, -0.25, 1.5});
    y = b_.FillConstant({rows, cols}, DataType::kFloat32, c);
    y_bound = std::abs(c);
    y_desc = absl::StrCat("const ", c, "@", GuardName(guard), " ", y.name);
  }
  x->consumed = true;
  Value v = *x;
  auto g = b_.device_guard(guard);
  const char* type;
  switch (rng_.Below(3)) {
    case 0:
      type = "elementwise_add";
      v.var = b_.ElementwiseAdd(x->var, y, axis);
      v.bound = x->bound + y_bound;
      break;
    case 1:
      type = "elementwise_sub";
      v.var = b_.ElementwiseSub(x->var, y, axis);
      v.bound = x->bound + y_bound;
      break;
    default:
      type = "elementwise_mul";
      v.var = b_.ElementwiseMul(x->var, y, axis);
      v.bound = x->bound * y_bound;
      break;
  }
  v.uses_param = x->uses_param || y_param;
  v.is_input = false;
  v.consumed = false;
  Add(v, guard,
      absl::StrCat(type, "@", GuardName(guard), " (", x->var.name, ", ", y_desc,
                   axis == -1 ? "" : ", axis 0", ")"));
  return true;
}

bool Generator::MatmulParam() {
  Value* x = PickAny();
  if (x == nullptr) return false;
  x->consumed = true;
  const int64_t n = rng_.Pick(std::vector<int64_t>{3, 4, 6, 8});
  const bool transpose_x = rng_.Chance(0.2);
  const bool transpose_y = rng_.Chance(0.3);
  const double alpha = rng_.Chance(0.7) ? 1.0 : 0.5;
  const int64_t k = transpose_x ? x->rows : x->cols;  // the contracted dim
  Var w = NewParameter("w", transpose_y ? Shape({n, k}) : Shape({k, n}));
  const std::string& guard = RandomGuard();
  ReadParameter(w.name, guard);
  Value v = *x;
  auto g = b_.device_guard(guard);
  v.var = b_.Matmul(x->var, w, transpose_x, transpose_y, alpha);
  v.rows = transpose_x ? x->cols : x->rows;
  v.cols = n;
  v.bound = x->bound * k * 1.2 * alpha;
  v.uses_param = true;
  v.is_input = false;
  v.consumed = false;
  Add(v, guard,
      absl::StrCat("matmul@", GuardName(guard), " (", x->var.name, ", ", w.name,
                   transpose_x ? ", transpose_x" : "", transpose_y ? ", transpose_y" : "",
                   ", alpha ", alpha, ")"));
  return true;
}

bool Generator::MulParam() {
  Value* x = PickAny();
  if (x == nullptr) return false;
  x->consumed = true;
  const int64_t n = rng_.Pick(std::vector<int64_t>{2, 4, 5, 8});
  Var w = NewParameter("w", Shape({x->cols, n}));
  const std::string& guard = RandomGuard();
  ReadParameter(w.name, guard);
  Value v = *x;
  auto g = b_.device_guard(guard);
  v.var = b_.Mul(x->var, w);
  v.cols = n;
  v.bound = x->bound * x->cols * 1.2;
  v.uses_param = true;
  v.is_input = false;
  v.consumed = false;
  Add(v, guard, absl::StrCat("mul@", GuardName(guard), " (", x->var.name, ", ", w.name, ")"));
  return true;
}

bool Generator::FcOp() {
  Value* x = PickAny();
  if (x == nullptr) return false;
  const int64_t n = rng_.Pick(std::vector<int64_t>{3, 4, 6, 8});
  const bool bias = rng_.Chance(0.7);
  FcOn(x, n, bias, RandomInit(Shape({x->cols, n}), 0.3), "");
  return true;
}

void Generator::FcOn(Value* x, int64_t n, bool bias, const Initializer& init,
                     const std::string& note) {
  x->consumed = true;
  const std::string& guard = RandomGuard();
  const std::string name = absl::StrCat("fc", NextId());
  Value v = *x;
  {
    auto g = b_.device_guard(guard);
    v.var = b_.Fc(x->var, n, 1, bias, name, init);
  }
  std::vector<std::string> params = {absl::StrCat(name, ".w_0")};
  if (bias) params.push_back(absl::StrCat(name, ".b_0"));
  for (const std::string& p : params) {
    param_guard_[p] = guard;
    params_.push_back(p);
    dense_params_.push_back(p);
    ReadParameter(p, guard);
  }
  v.cols = n;
  v.bound = x->bound * x->cols * 1.2;
  v.uses_param = true;
  v.is_input = false;
  v.consumed = false;
  Add(v, guard,
      absl::StrCat("fc@", GuardName(guard), " (", x->var.name, ", size ", n, bias ? ", bias" : "",
                   ") params ", name, ".*", note));
}

bool Generator::MatmulValues() {
  Value* x = PickAny();
  if (x == nullptr) return false;
  const int64_t cols = x->cols;
  Value* y = PickValue([&](const Value& v) { return v.cols == cols && v.rows <= 16; });
  if (y == nullptr) return false;
  x->consumed = true;
  y->consumed = true;
  const std::string& guard = RandomGuard();
  Value v = *x;
  auto g = b_.device_guard(guard);
  v.var = b_.Matmul(x->var, y->var, false, true, 0.5);
  v.cols = y->rows;
  v.bound = 0.5 * x->bound * y->bound * cols;
  v.uses_param = x->uses_param || y->uses_param;
  v.is_input = false;
  v.consumed = false;
  Add(v, guard,
      absl::StrCat("matmul@", GuardName(guard), " (", x->var.name, ", ", y->var.name,
                   ", transpose_y, alpha 0.5)"));
  return true;
}

bool Generator::Reduce() {
  Value* x = PickAny();
  if (x == nullptr) return false;
  x->consumed = true;
  const bool mean = rng_.Chance(0.5);
  const std::string& guard = RandomGuard();
  Value v = *x;
  v.is_input = false;
  v.consumed = false;
  std::string desc;
  auto g = b_.device_guard(guard);
  const char* type = mean ? "reduce_mean" : "reduce_sum";
  switch (rng_.Below(4)) {
    case 3:  // over everything, kept: [1, 1]
      v.var = mean ? b_.ReduceMean(x->var, {0, 1}, true) : b_.ReduceSum(x->var, {0, 1}, true);
      v.rows = v.cols = 1;
      if (!mean) v.bound *= x->rows * x->cols;
      desc = absl::StrCat(type, "@", GuardName(guard), " (", x->var.name, ", dims 0 1, keep)");
      break;
    case 0:  // over the columns, kept: [rows, 1]
      v.var = mean ? b_.ReduceMean(x->var, {1}, true) : b_.ReduceSum(x->var, {1}, true);
      v.cols = 1;
      if (!mean) v.bound *= x->cols;
      desc = absl::StrCat(type, "@", GuardName(guard), " (", x->var.name, ", dim 1, keep)");
      break;
    case 1:  // over the rows, kept: [1, cols]
      v.var = mean ? b_.ReduceMean(x->var, {0}, true) : b_.ReduceSum(x->var, {0}, true);
      v.rows = 1;
      if (!mean) v.bound *= x->rows;
      desc = absl::StrCat(type, "@", GuardName(guard), " (", x->var.name, ", dim 0, keep)");
      break;
    default: {  // over the columns, dropped, then reshaped to [rows, 1]
      Var r = mean ? b_.ReduceMean(x->var, {-1}, false) : b_.ReduceSum(x->var, {-1}, false);
      const std::string& guard2 = RandomGuard();
      auto g2 = b_.device_guard(guard2);
      v.var = b_.Reshape(r, {x->rows, 1});
      v.cols = 1;
      if (!mean) v.bound *= x->cols;
      desc = absl::StrCat(type, "@", GuardName(guard), " (", x->var.name, ", dim -1) -> ", r.name,
                          " [", x->rows, "]; reshape@", GuardName(guard2), " (", r.name, ", [",
                          x->rows, ", 1])");
      break;
    }
  }
  Add(v, guard, desc);
  return true;
}

bool Generator::SliceOp() {
  Value* x = PickValue([](const Value& v) { return v.cols >= 2 || v.rows >= 2; });
  if (x == nullptr) return false;
  x->consumed = true;
  const int64_t axis = x->cols >= 2 && (x->rows < 2 || rng_.Chance(0.7)) ? 1 : 0;
  const int64_t dim = axis == 1 ? x->cols : x->rows;
  const int64_t start = rng_.Below(dim - 1);
  const int64_t end = start + 1 + rng_.Below(dim - start);  // in (start, dim]
  // Sometimes the numpy forms: a negative end, or an end past the dim.
  int64_t end_attr = end;
  if (end == dim && rng_.Chance(0.3))
    end_attr = dim + 5;
  else if (end < dim && rng_.Chance(0.3))
    end_attr = end - dim;
  const std::string& guard = RandomGuard();
  Value v = *x;
  auto g = b_.device_guard(guard);
  v.var = b_.Slice(x->var, {axis}, {start}, {end_attr});
  (axis == 1 ? v.cols : v.rows) = end - start;
  v.is_input = false;
  v.consumed = false;
  Add(v, guard,
      absl::StrCat("slice@", GuardName(guard), " (", x->var.name, ", axis ", axis, ", ", start, ":",
                   end_attr, ")"));
  return true;
}

bool Generator::ConcatOp() {
  Value* x = PickAny();
  if (x == nullptr) return false;
  const bool along_cols = rng_.Chance(0.7);
  const int64_t rows = x->rows, cols = x->cols;
  Value* y = PickValue([&](const Value& v) {
    return along_cols ? v.rows == rows && v.cols + cols <= 16
                      : v.cols == cols && v.rows + rows <= 16;
  });
  if (y == nullptr) return false;
  x->consumed = true;
  y->consumed = true;
  std::vector<Value*> parts = {x, y};
  int64_t extent = along_cols ? cols + y->cols : rows + y->rows;
  if (rng_.Chance(0.3)) {  // a third piece
    Value* z = PickValue([&](const Value& v) {
      return along_cols ? v.rows == rows && v.cols + extent <= 16
                        : v.cols == cols && v.rows + extent <= 16;
    });
    if (z != nullptr) {
      z->consumed = true;
      parts.push_back(z);
      extent += along_cols ? z->cols : z->rows;
    }
  }
  const std::string& guard = RandomGuard();
  Value v = *x;
  std::vector<Var> vars;
  std::vector<std::string> names;
  for (Value* p : parts) {
    vars.push_back(p->var);
    names.push_back(p->var.name);
    v.bound = std::max(v.bound, p->bound);
    v.uses_param = v.uses_param || p->uses_param;
  }
  auto g = b_.device_guard(guard);
  v.var = b_.Concat(vars, along_cols ? 1 : 0);
  (along_cols ? v.cols : v.rows) = extent;
  v.is_input = false;
  v.consumed = false;
  Add(v, guard,
      absl::StrCat("concat@", GuardName(guard), " (", absl::StrJoin(names, ", "), ", axis ",
                   along_cols ? 1 : 0, ")"));
  return true;
}

bool Generator::SplitOp() {
  Value* x = PickValue([](const Value& v) { return v.cols >= 2 || v.rows >= 2; });
  if (x == nullptr) return false;
  x->consumed = true;
  const int64_t axis = x->cols >= 2 && (x->rows < 2 || rng_.Chance(0.7)) ? 1 : 0;
  const int64_t dim = axis == 1 ? x->cols : x->rows;
  const int64_t first = 1 + rng_.Below(dim - 1);  // pieces [first, dim - first]
  const bool equal = dim % 2 == 0 && rng_.Chance(0.3);
  const std::string& guard = RandomGuard();
  const Value base = *x;
  std::vector<Var> pieces;
  {
    auto g = b_.device_guard(guard);
    pieces = equal ? b_.Split(x->var, 2, axis)
                   : b_.SplitSections(x->var, {first, rng_.Chance(0.5) ? -1 : dim - first}, axis);
  }
  if (pieces.size() != 2) {
    b_.RecordError(absl::InternalError("generator: split did not give 2 pieces"));
    return true;
  }
  const std::string desc =
      absl::StrCat("split@", GuardName(guard), " (", base.var.name, ", axis ", axis,
                   equal ? ", 2 equal" : absl::StrCat(", first ", first), ")");
  for (int i = 0; i < 2; ++i) {
    Value v = base;
    v.var = pieces[i];
    const int64_t size = equal ? dim / 2 : (i == 0 ? first : dim - first);
    (axis == 1 ? v.cols : v.rows) = size;
    v.is_input = false;
    v.consumed = false;
    Add(v, guard, absl::StrCat(desc, " piece ", i));
  }
  return true;
}

bool Generator::CropOp() {
  // X cropped to the shape of a value no larger (shape, maybe an identity
  // slice of it, then crop_tensor reading it on the host as the crop model
  // does), reshaped to its known dims.
  Value* x = PickAny();
  if (x == nullptr) return false;
  const int64_t rows = x->rows, cols = x->cols;
  Value* y = PickValue([&](const Value& v) { return v.rows <= rows && v.cols <= cols; });
  if (y == nullptr) return false;
  x->consumed = true;
  const std::vector<int64_t> offsets = {rng_.Below(rows - y->rows + 1),
                                        rng_.Below(cols - y->cols + 1)};
  const std::string& shape_guard = RandomGuard();
  const std::string& guard = RandomGuard();
  Value v = *x;
  std::string desc;
  Var shape;
  {
    auto g = b_.device_guard(shape_guard);
    shape = b_.ShapeOf(y->var);
    // An int32 value: no gradient flows through it (ShapeOf leaves it
    // trainable, and AppendBackward then asks the shape op for a gradient).
    if (VarDesc* d = b_.main_program().block().FindVar(shape.name)) d->stop_gradient = true;
    desc = absl::StrCat("shape@", GuardName(shape_guard), " (", y->var.name, ") -> ", shape.name);
    if (rng_.Chance(0.3)) {
      shape = b_.Slice(shape, {0}, {0}, {2});
      absl::StrAppend(&desc, "; slice@", GuardName(shape_guard), " [0:2] -> ", shape.name);
    }
  }
  {
    auto g = b_.device_guard(guard);
    Var cropped = b_.CropTensor(x->var, shape, offsets);
    v.var = b_.Reshape(cropped, {y->rows, y->cols});
    absl::StrAppend(&desc, "; crop_tensor@", GuardName(guard), " (", x->var.name, ", ", shape.name,
                    ", offsets ", offsets[0], " ", offsets[1], ") -> ", cropped.name, "; reshape@",
                    GuardName(guard));
  }
  v.rows = y->rows;
  v.cols = y->cols;
  v.is_input = false;
  v.consumed = false;
  Add(v, guard, desc);
  return true;
}

bool Generator::ReshapeOp() {
  Value* x = PickAny();
  if (x == nullptr) return false;
  const int64_t n = x->rows * x->cols;
  std::vector<int64_t> widths;
  for (int64_t k = 1; k <= 16; ++k) {
    if (n % k == 0 && n / k <= 16 && k != x->cols) widths.push_back(k);
  }
  if (widths.empty()) return false;
  x->consumed = true;
  const int64_t k = rng_.Pick(widths);
  const std::vector<int64_t> shape =
      rng_.Chance(0.5) ? std::vector<int64_t>{-1, k} : std::vector<int64_t>{n / k, k};
  const std::string& guard = RandomGuard();
  Value v = *x;
  auto g = b_.device_guard(guard);
  v.var = b_.Reshape(x->var, shape);
  v.rows = n / k;
  v.cols = k;
  v.is_input = false;
  v.consumed = false;
  Add(v, guard,
      absl::StrCat("reshape@", GuardName(guard), " (", x->var.name, ", [",
                   absl::StrJoin(shape, ", "), "])"));
  return true;
}

bool Generator::TransposeOp() {
  Value* x = PickAny();
  if (x == nullptr) return false;
  x->consumed = true;
  const std::string& guard = RandomGuard();
  Value v = *x;
  auto g = b_.device_guard(guard);
  v.var = b_.Transpose(x->var, {1, 0});
  std::swap(v.rows, v.cols);
  v.is_input = false;
  v.consumed = false;
  Add(v, guard, absl::StrCat("transpose@", GuardName(guard), " (", x->var.name, ")"));
  return true;
}

bool Generator::SquareError() {
  Value* x = PickAny();
  if (x == nullptr) return false;
  const int64_t rows = x->rows, cols = x->cols;
  Value* y = PickValue([&](const Value& v) { return v.rows == rows && v.cols == cols; });
  if (y == nullptr) return false;
  x->consumed = true;
  y->consumed = true;
  const std::string& guard = RandomGuard();
  Value v = *x;
  auto g = b_.device_guard(guard);
  v.var = b_.SquareErrorCost(x->var, y->var);
  v.bound = (x->bound + y->bound) * (x->bound + y->bound);
  v.uses_param = x->uses_param || y->uses_param;
  v.is_input = false;
  v.consumed = false;
  Add(v, guard,
      absl::StrCat("square_error_cost@", GuardName(guard), " (", x->var.name, ", ", y->var.name,
                   ")"));
  return true;
}

bool Generator::Lookup() {
  std::vector<Table*> pending;
  for (Table& t : tables_) {
    if (t.lookups_left > 0) pending.push_back(&t);
  }
  if (pending.empty()) return false;
  Table& t = *rng_.Pick(pending);
  // The ids: an id feed made before whose range fits the table (shared by
  // two lookups), or a new one, [batch] or [batch, 1].
  std::vector<const IdFeed*> reusable;
  for (const IdFeed& f : id_feeds_) {
    if (f.range <= t.rows) reusable.push_back(&f);
  }
  IdFeed ids;
  if (!reusable.empty() && rng_.Chance(0.3)) {
    ids = *rng_.Pick(reusable);
  } else {
    ids.column = rng_.Chance(0.25);
    ids.range = t.rows;
    ids.length = rng_.Chance(0.3) ? 2 * o_.batch : o_.batch;
    const std::string name = absl::StrCat("ids", id_feeds_.size());
    const Shape shape = ids.column ? Shape({ids.length, 1}) : Shape({ids.length});
    ids.var = b_.Data(name, DataType::kInt64, shape);
    out_->feeds.push_back({name, DataType::kInt64, shape, t.rows});
    out_->feed_names.push_back(name);
    id_feeds_.push_back(ids);
  }
  const std::string ids_desc = absl::StrCat(
      ids.var.name,
      ids.column ? absl::StrCat("[", ids.length, ", 1]") : absl::StrCat("[", ids.length, "]"),
      " < ", ids.range);
  // Embedding makes the table and its first lookup under the table's guard;
  // every other lookup draws its own.
  const std::string& guard = t.var.valid() ? RandomGuard() : t.guard;
  const std::string padding =
      t.padding_idx == -1 ? "" : absl::StrCat(", padding_idx ", t.padding_idx);
  Value v;
  std::string desc;
  if (!t.var.valid()) {  // Embedding: the table and the lookup under one guard
    const std::string name = absl::StrCat("table", t.index);
    {
      auto g = b_.device_guard(guard);
      v.var = b_.Embedding(
          ids.var, {t.rows, t.dim}, t.sparse, t.padding_idx,
          Initializer::Uniform(-0.5, 0.5, static_cast<int64_t>(rng_.Below(1000)) + 1), name);
    }
    t.var = Var{name};
    param_guard_[name] = guard;
    params_.push_back(name);
    if (!t.sparse) dense_params_.push_back(name);
    Log(absl::StrCat("param ", name, " [", t.rows, ", ", t.dim, "] ", t.sparse ? "sparse" : "dense",
                     " table init@", GuardName(guard)));
    desc = absl::StrCat("embedding@", GuardName(guard), " (", ids_desc, ", ", name,
                        t.sparse ? ", is_sparse" : "", padding, ")");
  } else {
    auto g = b_.device_guard(guard);
    v.var = b_.LookupTable(ids.var, t.var, t.sparse, t.padding_idx);
    desc = absl::StrCat("lookup_table@", GuardName(guard), " (", ids_desc, ", ", t.var.name,
                        t.sparse ? ", is_sparse" : "", padding, ")");
  }
  ReadParameter(t.var.name, guard);
  --t.lookups_left;
  if (ids.column) {  // [length, 1, dim] -> [length, dim]
    const std::string& guard2 = RandomGuard();
    auto g = b_.device_guard(guard2);
    const std::string looked_up = v.var.name;
    v.var = b_.Reshape(v.var, {ids.length, t.dim});
    absl::StrAppend(&desc, " -> ", looked_up, " [", ids.length, ", 1, ", t.dim, "]; reshape@",
                    GuardName(guard2));
  }
  v.rows = ids.length;
  v.cols = t.dim;
  v.bound = 0.6;
  v.uses_param = true;
  Add(v, guard, desc);
  return true;
}

void Generator::AddOpParameter(const std::string& name, const std::string& guard) {
  param_guard_[name] = guard;
  params_.push_back(name);
  dense_params_.push_back(name);
  ReadParameter(name, guard);
}

bool Generator::LayerOp() {
  switch (layer_rng_.Below(3)) {
    case 0:
      return LayerNormOp();
    case 1:
      return DropoutOp();
    default:
      return AttentionOp();
  }
}

bool Generator::LayerNormOp() {
  Value* x = PickValue([](const Value& v) { return v.cols >= 2; });
  if (x == nullptr) return false;
  x->consumed = true;
  const std::string& guard = RandomGuard();
  const std::string name = absl::StrCat("ln", NextId());
  const bool scale = layer_rng_.Chance(0.7), shift = layer_rng_.Chance(0.7);
  const double epsilon = layer_rng_.Chance(0.5) ? 1e-5 : 1e-3;
  Value v = *x;
  {
    auto g = b_.device_guard(guard);
    v.var = b_.LayerNorm(x->var, 1, epsilon, scale, shift, name);
  }
  if (scale) AddOpParameter(absl::StrCat(name, ".scale_0"), guard);
  if (shift) AddOpParameter(absl::StrCat(name, ".b_0"), guard);
  v.bound = 1.5 * std::sqrt(static_cast<double>(x->cols)) + 0.5;  // |x_hat| <= sqrt(cols)
  v.uses_param = x->uses_param || scale || shift;
  v.is_input = false;
  v.consumed = false;
  Add(v, guard,
      absl::StrCat("layer_norm@", GuardName(guard), " (", x->var.name, ", epsilon ", epsilon,
                   scale ? ", scale" : "", shift ? ", shift" : "", ") params ", name, ".*"));
  return true;
}

bool Generator::DropoutOp() {
  Value* x = PickAny();
  if (x == nullptr) return false;
  x->consumed = true;
  const std::string& guard = RandomGuard();
  const double prob = layer_rng_.Chance(0.5) ? 0.25 : 0.5;
  const int64_t seed = 1 + static_cast<int64_t>(layer_rng_.Below(1000));
  Value v = *x;
  {
    auto g = b_.device_guard(guard);
    v.var = b_.Dropout(x->var, prob, /*is_test=*/false, seed);
  }
  v.bound = x->bound / (1 - prob);  // upscale_in_train
  v.is_input = false;
  v.consumed = false;
  Add(v, guard,
      absl::StrCat("dropout@", GuardName(guard), " (", x->var.name, ", p ", prob, ", seed ", seed,
                   ")"));
  return true;
}

bool Generator::AttentionOp() {
  Value* x = PickValue([](const Value& v) { return v.cols >= 3 && v.cols % 3 == 0; });
  if (x == nullptr) return false;
  x->consumed = true;
  const std::string& guard = RandomGuard();
  const int64_t width = x->cols / 3;
  const int64_t heads = width % 2 == 0 && layer_rng_.Chance(0.5) ? 2 : 1;
  const int64_t batch = x->rows % 2 == 0 && layer_rng_.Chance(0.5) ? 2 : 1;
  const bool causal = layer_rng_.Chance(0.7);
  Value v = *x;
  {
    auto g = b_.device_guard(guard);
    const Var qkv = b_.Reshape(x->var, {batch, x->rows / batch, x->cols});
    v.var = b_.Reshape(b_.SelfAttention(qkv, heads, causal), {x->rows, width});
  }
  v.cols = width;  // each output row is a convex combination of value rows: the bound stays
  v.is_input = false;
  v.consumed = false;
  Add(v, guard,
      absl::StrCat("reshape; self_attention@", GuardName(guard), " (", x->var.name, " as [", batch,
                   ", ", x->rows / batch, ", ", x->cols, "], ", heads, " heads",
                   causal ? ", causal" : "", "); reshape"));
  return true;
}

bool Generator::RandomOp() {
  if (layer_rng_.Chance(o_.layer_op_probability)) {
    out_->has_layer_ops = true;
    return LayerOp();
  }
  // Weights: activations 3, scale 2, softmax 1, binary 4, matmul with a
  // parameter 2, mul 1, fc 2, matmul of two values 1, reduce 2, slice 1,
  // concat 1, reshape 1, transpose 1, square_error_cost 1, lookup 3, split 1,
  // crop 1.
  static const int kWeights[] = {3, 2, 1, 4, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 3, 1, 1};
  int total = 0;
  for (int w : kWeights) total += w;
  int r = static_cast<int>(rng_.Below(total));
  int kind = 0;
  while (r >= kWeights[kind]) r -= kWeights[kind++];
  switch (kind) {
    case 0:
      return Activation();
    case 1:
      return ScaleOp();
    case 2:
      return SoftmaxOp();
    case 3:
      return Binary();
    case 4:
      return MatmulParam();
    case 5:
      return MulParam();
    case 6:
      return FcOp();
    case 7:
      return MatmulValues();
    case 8:
      return Reduce();
    case 9:
      return SliceOp();
    case 10:
      return ConcatOp();
    case 11:
      return ReshapeOp();
    case 12:
      return TransposeOp();
    case 13:
      return SquareError();
    case 14:
      return Lookup();
    case 15:
      return SplitOp();
    default:
      return CropOp();
  }
}

absl::Status Generator::Loss() {
  std::vector<Value*> ends;
  for (Value& v : values_) {
    if (!v.consumed && !v.is_input) ends.push_back(&v);
  }
  bool any_param = false;
  for (Value* v : ends) any_param |= v->uses_param;
  if (!any_param) {  // a parameter must reach the loss: an fc on one end
    FcOn(ends.empty() ? &values_.back() : ends[0], 4, true, Initializer::XavierUniform(7),
         " (so that a parameter reaches the loss)");
    ends.clear();
    for (Value& v : values_) {
      if (!v.consumed && !v.is_input) ends.push_back(&v);
    }
  }
  std::vector<Var> inputs;
  for (const Value& v : values_) {
    if (v.is_input) inputs.push_back(v.var);
  }
  Var total;
  std::vector<std::string> parts;
  for (Value* end : ends) {
    const std::string& guard = RandomGuard();
    auto g = b_.device_guard(guard);
    Var m;
    std::string part;
    switch (rng_.Below(4)) {
      case 0: {  // square_error_cost against a fed input or a constant of its shape
        Var target;
        std::string target_desc;
        if (end->rows == o_.batch && end->cols == o_.input_width && !inputs.empty() &&
            rng_.Chance(0.7)) {
          target = rng_.Pick(inputs);
          target_desc = target.name;
        } else {
          target = b_.FillConstant({end->rows, end->cols}, DataType::kFloat32, 0.25);
          target_desc = absl::StrCat("const 0.25 ", target.name);
        }
        m = b_.Mean(b_.SquareErrorCost(end->var, target));
        part = absl::StrCat("mean(square_error_cost(", end->var.name, ", ", target_desc, "))");
        break;
      }
      case 1:
        m = b_.ReduceMean(end->var, {}, false);
        part = absl::StrCat("reduce_mean(", end->var.name, ")");
        break;
      case 2:
        m = b_.Scale(b_.ReduceSum(end->var, {}, false), 0.5);
        part = absl::StrCat("0.5 * reduce_sum(", end->var.name, ")");
        break;
      default:
        m = b_.Mean(end->var);
        part = absl::StrCat("mean(", end->var.name, ")");
        break;
    }
    if (!total.valid()) {
      total = m;
      parts.push_back(absl::StrCat(part, "@", GuardName(guard)));
    } else {
      total = b_.ElementwiseAdd(total, m);
      parts.push_back(absl::StrCat("+ ", part, "@", GuardName(guard)));
    }
  }
  const std::string& guard = RandomGuard();
  {
    auto g = b_.device_guard(guard);
    Var loss = b_.Mean(total);
    out_->loss = loss.name;
  }
  Log(absl::StrCat("loss@", GuardName(guard), " = mean(", absl::StrJoin(parts, " "), ") -> ",
                   out_->loss));
  return b_.status();
}

void Generator::Probe() {
  if (dense_params_.empty() || !probe_rng_.Chance(o_.probe_probability)) return;
  const std::string& param = probe_rng_.Pick(dense_params_);
  // Half the time where the parameter's first reader runs, whose place its
  // update takes (so the probe shares the copy the update writes).
  auto first = first_reader_.find(param);
  const std::string guard = first != first_reader_.end() && probe_rng_.Chance(0.5)
                                ? first->second
                                : probe_rng_.Pick(o_.guards);
  {
    auto g = b_.device_guard(guard);
    // Times the loss: it starts with the backward, not before it.
    probe_ = b_.ElementwiseMul(Var{param}, Var{out_->loss}).name;
  }
  Log(absl::StrCat("probe elementwise_mul@", GuardName(guard), " (", param, ", ", out_->loss,
                   ") -> ", probe_, ", fetched only"));
}

absl::StatusOr<std::optional<LossScalingOptions>> Generator::MaybeApplyAmp() {
  if (!amp_rng_.Chance(o_.amp_probability)) return std::nullopt;
  const bool fp16 = !out_->has_sparse_table && amp_rng_.Chance(0.5);
  out_->amp = fp16 ? DataType::kFloat16 : DataType::kBFloat16;
  absl::StatusOr<AmpReport> report = ApplyAmp(AmpOptions{out_->amp}, &b_.main_program());
  if (!report.ok()) return report.status();
  out_->amp_working_copies = amp_rng_.Chance(0.5);
  const char* copies = out_->amp_working_copies ? ", working copies" : "";
  if (!fp16) {
    Log(absl::StrCat("amp bfloat16", copies));
    return std::nullopt;
  }
  LossScalingOptions scaling;
  scaling.initial_scale = amp_rng_.Pick(std::vector<double>{16.0, 65536.0, 16777216.0});
  scaling.growth_interval = amp_rng_.Pick(std::vector<int64_t>{1, 3, 2000});
  Log(absl::StrCat("amp float16", copies, ", dynamic loss scaling from ", scaling.initial_scale,
                   ", growth every ", scaling.growth_interval, " good steps"));
  return scaling;
}

absl::Status Generator::Optimize() {
  absl::Status s;
  const bool clip = !out_->has_sparse_table && clip_rng_.Chance(o_.clip_probability);
  const double max_norm = clip_rng_.Pick(std::vector<double>{0.05, 1.0, 100.0});
  absl::StatusOr<std::optional<LossScalingOptions>> scaling = MaybeApplyAmp();
  if (!scaling.ok()) return scaling.status();
  auto minimize = [&](Optimizer& optimizer) {
    if (clip) optimizer.EnableGradientClipping(max_norm);
    if (scaling->has_value()) optimizer.EnableDynamicLossScaling(**scaling);
    optimizer.set_working_copies(out_->amp_working_copies);
    absl::Status minimized = optimizer.Minimize(&b_, Var{out_->loss});
    if (scaling->has_value()) {
      out_->loss_scale_var = optimizer.loss_scaling_vars().scale;
      out_->initial_loss_scale = (*scaling)->initial_scale;
    }
    return minimized;
  };
  switch (rng_.Below(3)) {
    case 0: {
      const double lr = rng_.Chance(0.5) ? 0.01 : 0.1;
      SGD sgd(lr);
      out_->optimizer = absl::StrCat("sgd(lr=", lr, ")");
      s = minimize(sgd);
      break;
    }
    case 1: {
      const double lr = rng_.Chance(0.5) ? 0.01 : 0.05;
      const bool nesterov = rng_.Chance(0.5);
      Momentum momentum(lr, 0.9, nesterov);
      out_->optimizer =
          absl::StrCat("momentum(lr=", lr, ", mu=0.9", nesterov ? ", nesterov" : "", ")");
      s = minimize(momentum);
      break;
    }
    default: {
      const double lr = rng_.Chance(0.5) ? 1e-3 : 1e-2;
      AdamOptions options;
      if (rng_.Chance(0.3)) {
        options.weight_decay = 0.01;
        options.decoupled_weight_decay = rng_.Chance(0.5);
      }
      Adam adam(lr, options);
      out_->optimizer =
          absl::StrCat("adam(lr=", lr,
                       options.weight_decay > 0
                           ? absl::StrCat(", weight_decay=0.01",
                                          options.decoupled_weight_decay ? " decoupled" : " l2")
                           : "",
                       ")");
      s = minimize(adam);
      break;
    }
  }
  if (clip) absl::StrAppend(&out_->optimizer, ", clipped at global norm ", max_norm);
  out_->clips_gradients = clip;
  if (!s.ok()) return s;
  return b_.status();
}

void Generator::ChooseFetches() {
  out_->fetches = {out_->loss};
  // Candidates by kind: forward values, dense gradients, parameters
  // (persistables the run updates), feeds.
  std::vector<std::string> values, grads, params, feeds;
  const Block& block = b_.main_program().block();
  // AMP leaves out the float32 twin of a value only 16-bit ops read, and
  // a weight's float32 gradient when its update reads the 16-bit one.
  std::set<std::string> written;
  for (const OpDesc& op : block.ops()) {
    for (const auto& [arg, vars] : op.outputs) written.insert(vars.begin(), vars.end());
  }
  for (const Value& v : values_) {
    if (v.is_input) {
      feeds.push_back(v.var.name);
    } else if (written.count(v.var.name)) {
      values.push_back(v.var.name);
    }
  }
  for (const IdFeed& f : id_feeds_) feeds.push_back(f.var.name);
  // A float16 step that overflows leaves inf in its gradients (and skips
  // the update): gradients are not fetched then.
  for (const std::string& p :
       out_->amp == DataType::kFloat16 ? std::vector<std::string>{} : dense_params_) {
    const std::string grad = p + "@GRAD";
    const VarDesc* d = block.FindVar(grad);
    if (d != nullptr && d->kind == VarKind::kDense && written.count(grad)) grads.push_back(grad);
  }
  for (const std::string& p : params_) {
    if (block.HasVar(p)) params.push_back(p);
  }
  const int extra = static_cast<int>(rng_.Below(o_.max_extra_fetches + 1));
  for (int i = 0; i < extra; ++i) {
    const double r = rng_.Unit();
    const std::vector<std::string>& from = r < 0.5   ? values
                                           : r < 0.7 ? grads
                                           : r < 0.9 ? (o_.fetch_parameters ? params : values)
                                                     : feeds;
    if (from.empty()) continue;
    const std::string name = rng_.Pick(from);
    if (std::find(out_->fetches.begin(), out_->fetches.end(), name) == out_->fetches.end()) {
      out_->fetches.push_back(name);
    }
  }
}

absl::Status Generator::Build() {
  default_place_ = rng_.Pick(o_.default_places);
  absl::StatusOr<Place> place = ParsePlace(default_place_);
  if (!place.ok()) return place.status();
  out_->default_place = *place;
  // Fed float inputs.
  const int inputs = o_.min_float_inputs +
                     static_cast<int>(rng_.Below(o_.max_float_inputs - o_.min_float_inputs + 1));
  for (int i = 0; i < inputs; ++i) {
    const std::string name = absl::StrCat("x", i);
    Value v;
    v.var = b_.Data(name, DataType::kFloat32, Shape({o_.batch, o_.input_width}));
    v.rows = o_.batch;
    v.cols = o_.input_width;
    v.bound = 1;
    v.is_input = true;
    values_.push_back(v);
    out_->feeds.push_back({name, DataType::kFloat32, Shape({o_.batch, o_.input_width}), 0});
    out_->feed_names.push_back(name);
    Log(absl::StrCat("feed ", name, " float32 ", ShapeString(o_.batch, o_.input_width)));
  }
  // Tables: created now (CreateParameter under a random guard) or at their
  // first lookup (Embedding).
  for (int i = 0; i < o_.max_tables; ++i) {
    if (!rng_.Chance(o_.table_probability)) continue;
    Table t;
    t.index = i;
    t.rows = rng_.Pick(std::vector<int64_t>{8, 16, 50});
    t.dim = rng_.Pick(std::vector<int64_t>{4, 6, 8});
    t.sparse = rng_.Chance(o_.sparse_probability);
    t.lookups_left = t.sparse ? 1 : 1 + static_cast<int>(rng_.Below(2));
    t.guard = RandomGuard();
    t.via_embedding = rng_.Chance(0.5);
    if (rng_.Chance(0.2)) t.padding_idx = rng_.Pick(std::vector<int64_t>{0, 1, -2});
    if (t.sparse) {
      out_->has_sparse_table = true;
    } else {
      out_->has_dense_table = true;
    }
    if (!t.via_embedding) {
      const std::string name = absl::StrCat("table", i);
      {
        auto g = b_.device_guard(t.guard);
        t.var = b_.CreateParameter(name, DataType::kFloat32, Shape({t.rows, t.dim}),
                                   Initializer::Uniform(-0.5, 0.5, 100 + i));
      }
      param_guard_[name] = t.guard;
      params_.push_back(name);
      if (!t.sparse) dense_params_.push_back(name);
      Log(absl::StrCat("param ", name, " [", t.rows, ", ", t.dim, "] ",
                       t.sparse ? "sparse" : "dense", " table init@", GuardName(t.guard)));
    }
    tables_.push_back(t);
  }
  const int ops = o_.min_ops + static_cast<int>(rng_.Below(o_.max_ops - o_.min_ops + 1));
  for (int made = 0, attempts = 0; made < ops && attempts < 20 * ops; ++attempts) {
    if (RandomOp()) ++made;
    if (!b_.status().ok()) return b_.status();
  }
  while (Lookup()) {
    if (!b_.status().ok()) return b_.status();
  }
  if (!b_.status().ok()) return b_.status();
  absl::Status s = Loss();
  if (!s.ok()) return s;
  Probe();
  s = Optimize();
  if (!s.ok()) return s;
  ChooseFetches();
  if (!probe_.empty()) out_->fetches.push_back(probe_);
  // Who reads each parameter first, for the summary.
  for (const std::string& p : params_) {
    auto it = first_reader_.find(p);
    Log(absl::StrCat("param ", p, ": init@", GuardName(param_guard_[p]), ", first read@",
                     it == first_reader_.end() ? "(never)" : GuardName(it->second)));
  }
  return b_.status();
}

// The host copy of `t` as a Trajectory::Value.
absl::StatusOr<Trajectory::Value> HostValue(const Tensor& t) {
  Trajectory::Value v;
  v.dtype = t.dtype();
  v.meta = absl::StrCat(DataTypeName(t.dtype()), t.shape().ToString(), "@", t.place().ToString());
  if (!t.initialized()) {
    v.meta += " (uninitialized)";
    return v;
  }
  absl::StatusOr<Tensor> host = CopyTensorTo(t, CPUPlace());
  if (!host.ok()) return host.status();
  v.bytes.assign(static_cast<const char*>(host->raw_data()), host->NumBytes());
  return v;
}

// How a mode starts and waits for its runs.
enum class Pattern {
  kRun,          // Run, one at a time
  kPipelined,    // RunAsync; the oldest waited for once `in_flight` are started
  kReverseWait,  // RunAsync two steps, Wait the later one first
  kMixed,        // RunAsync an even step, Run the odd one, then Wait the even one
};

struct ModeConfig {
  bool in_order = false;
  int workers = 1;
  Pattern pattern = Pattern::kRun;
  int in_flight = 1;  // kPipelined: runs started before the oldest is waited for
  bool delay = false;
  bool capture = false;
  bool schedule_trial = false;  // ExecutorOptions::schedule_trial, switching every run
  bool atomic_updates = true;   // ExecutorOptions::atomic_updates
};

ModeConfig ConfigOf(ExecMode mode) {
  ModeConfig c;
  switch (mode) {
    case ExecMode::kInOrder:
      c.in_order = true;
      break;
    case ExecMode::kConcurrent1:
      break;
    case ExecMode::kConcurrent2:
      c.workers = 2;
      break;
    case ExecMode::kConcurrent4:
      c.workers = 4;
      break;
    case ExecMode::kPipelined1:
      c.pattern = Pattern::kPipelined;
      c.in_flight = 2;
      break;
    case ExecMode::kPipelined2:
      c.pattern = Pattern::kPipelined;
      c.in_flight = 2;
      c.workers = 2;
      break;
    case ExecMode::kPipelined4:
      c.pattern = Pattern::kPipelined;
      c.in_flight = 2;
      c.workers = 4;
      break;
    case ExecMode::kPipelined3InFlight:
      c.pattern = Pattern::kPipelined;
      c.in_flight = 3;
      c.workers = 2;
      break;
    case ExecMode::kPipelinedReverseWait:
      c.pattern = Pattern::kReverseWait;
      c.workers = 2;
      break;
    case ExecMode::kMixedRunAndRunAsync:
      c.pattern = Pattern::kMixed;
      c.workers = 2;
      break;
    case ExecMode::kConcurrentDelayed:
      c.workers = 2;
      c.delay = true;
      break;
    case ExecMode::kPipelinedDelayed:
      c.pattern = Pattern::kPipelined;
      c.in_flight = 2;
      c.workers = 2;
      c.delay = true;
      break;
    case ExecMode::kCaptureGraphs:
      c.capture = true;
      break;
    case ExecMode::kPipelinedScheduleTrial:
      c.pattern = Pattern::kPipelined;
      c.in_flight = 2;
      c.workers = 2;
      c.schedule_trial = true;
      break;
    case ExecMode::kPipelinedEagerUpdates:
      c.pattern = Pattern::kPipelined;
      c.in_flight = 2;
      c.workers = 2;
      c.atomic_updates = false;
      break;
  }
  return c;
}

constexpr absl::Duration kStreamDelay = absl::Microseconds(200);

// Sets the stream delay of sim:0 and sim:1 while it lives.
class StreamDelay {
 public:
  explicit StreamDelay(bool on) : on_(on) {
    if (!on_) return;
    for (int i = 0; i < 2; ++i) {
      absl::Status s = SetSimStreamDelay(SimPlace(i), kStreamDelay);
      if (!s.ok() && status_.ok()) status_ = s;
    }
  }
  ~StreamDelay() {
    if (!on_) return;
    for (int i = 0; i < 2; ++i) SetSimStreamDelay(SimPlace(i), absl::ZeroDuration()).IgnoreError();
  }
  const absl::Status& status() const { return status_; }

 private:
  bool on_;
  absl::Status status_;
};

std::string ElementString(DataType dtype, const std::string& bytes, size_t index) {
  switch (dtype) {
    case DataType::kFloat32: {
      float f;
      uint32_t bits;
      std::memcpy(&f, bytes.data() + 4 * index, 4);
      std::memcpy(&bits, bytes.data() + 4 * index, 4);
      return absl::StrFormat("%.9g (0x%08x)", f, bits);
    }
    case DataType::kFloat64: {
      double d;
      std::memcpy(&d, bytes.data() + 8 * index, 8);
      return absl::StrFormat("%.17g", d);
    }
    case DataType::kInt64: {
      int64_t v;
      std::memcpy(&v, bytes.data() + 8 * index, 8);
      return absl::StrCat(v);
    }
    case DataType::kInt32: {
      int32_t v;
      std::memcpy(&v, bytes.data() + 4 * index, 4);
      return absl::StrCat(v);
    }
    default:
      return absl::StrCat(static_cast<int>(static_cast<unsigned char>(bytes[index])));
  }
}

// "" if equal; else "<what> (meta) element i: a vs b" for the first difference.
// "float32[4, 6]@sim:0" -> "float32[4, 6]".
absl::string_view WithoutPlace(absl::string_view meta) { return meta.substr(0, meta.rfind('@')); }

std::string CompareValues(const std::string& what, const Trajectory::Value& a,
                          const Trajectory::Value& b, bool compare_places = true) {
  if (compare_places ? a.meta != b.meta : WithoutPlace(a.meta) != WithoutPlace(b.meta)) {
    return absl::StrCat(what, " is ", b.meta, ", expected ", a.meta);
  }
  if (a.bytes == b.bytes) return "";
  if (a.bytes.size() != b.bytes.size()) {
    return absl::StrCat(what, " (", a.meta, ") has ", b.bytes.size(), " bytes, expected ",
                        a.bytes.size());
  }
  const size_t width = a.dtype == DataType::kBool ? 1 : SizeOf(a.dtype);
  size_t first = 0, count = 0;
  const size_t n = a.bytes.size() / width;
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(a.bytes.data() + i * width, b.bytes.data() + i * width, width) != 0) {
      if (count++ == 0) first = i;
    }
  }
  return absl::StrCat(what, " (", a.meta, ") differs in ", count, " of ", n, " elements; first ",
                      first, ": ", ElementString(a.dtype, b.bytes, first), " vs expected ",
                      ElementString(a.dtype, a.bytes, first));
}

}  // namespace

FeedMap GeneratedProgram::Feeds(int step) const {
  Rng rng(Mix(seed * 0x100000001b3ULL + static_cast<uint64_t>(step) + 1));
  FeedMap feeds;
  for (const FeedSpec& f : this->feeds) {
    const int64_t n = f.shape.num_elements();
    if (f.dtype == DataType::kInt64) {
      std::vector<int64_t> ids(n);
      for (int64_t& id : ids) id = rng.Below(f.id_range);
      feeds[f.name] = Tensor::FromVector<int64_t>(f.shape, ids);
    } else {
      std::vector<float> v(n);
      for (float& x : v) x = static_cast<float>(2 * rng.Unit() - 1);
      feeds[f.name] = Tensor::FromVector<float>(f.shape, v);
    }
  }
  return feeds;
}

absl::Status BuildRandomTrainingProgram(uint64_t seed, const RandomProgramOptions& options,
                                        GeneratedProgram* out) {
  out->seed = seed;
  out->builder = std::make_unique<ProgramBuilder>();
  out->feeds.clear();
  out->feed_names.clear();
  out->fetches.clear();
  out->log.clear();
  out->has_sparse_table = out->has_dense_table = false;
  out->clips_gradients = false;
  out->has_layer_ops = false;
  out->amp = DataType::kFloat32;
  out->amp_working_copies = false;
  out->loss_scale_var.clear();
  out->initial_loss_scale = 0;
  out->has_host_parameter_used_on_device = false;
  out->has_parameter_used_elsewhere = false;
  if (options.guards.empty() || options.default_places.empty() || options.min_ops < 1 ||
      options.max_ops < options.min_ops || options.min_float_inputs < 1 ||
      options.max_float_inputs < options.min_float_inputs) {
    return absl::InvalidArgumentError("RandomProgramOptions: bad ranges or empty lists");
  }
  Generator g(seed, options, out);
  absl::Status s = g.Build();
  if (!s.ok()) {
    return absl::InternalError(
        absl::StrCat("generating program of seed ", seed, ": ", s.message()));
  }
  return absl::OkStatus();
}

std::string ProgramSummary(const GeneratedProgram& p) {
  std::string s =
      absl::StrCat("seed ", p.seed, ": default place ", p.default_place.ToString(), ", ",
                   p.optimizer, ", fetches [", absl::StrJoin(p.fetches, ", "), "]\n");
  for (const std::string& line : p.log) absl::StrAppend(&s, "  ", line, "\n");
  if (p.builder == nullptr) return s;
  // The main program's backward and update ops, compactly (their places
  // come from the placer's rules).
  std::vector<std::string> later;
  for (const OpDesc& op : p.builder->main_program().block().ops()) {
    if (op.role == OpRole::kForward) continue;
    std::string what = op.type;
    if (op.type == "sgd" || op.type == "momentum" || op.type == "adam") {
      absl::StrAppend(&what, "(", op.Input("Param"), ")");
    }
    if (!op.op_device.empty()) absl::StrAppend(&what, "@", op.op_device);
    later.push_back(what);
  }
  absl::StrAppend(&s, "  then ", later.size(), " backward/update ops: ", absl::StrJoin(later, " "),
                  "\n");
  return s;
}

const std::vector<ExecMode>& ComparedModes() {
  static const std::vector<ExecMode> modes = {
      ExecMode::kConcurrent1,
      ExecMode::kConcurrent2,
      ExecMode::kConcurrent4,
      ExecMode::kPipelined1,
      ExecMode::kPipelined2,
      ExecMode::kPipelined4,
      ExecMode::kPipelined3InFlight,
      ExecMode::kPipelinedReverseWait,
      ExecMode::kMixedRunAndRunAsync,
      ExecMode::kConcurrentDelayed,
      ExecMode::kPipelinedDelayed,
      ExecMode::kCaptureGraphs,
      ExecMode::kPipelinedScheduleTrial,
      ExecMode::kPipelinedEagerUpdates,
  };
  return modes;
}

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  return end != nullptr && *end == '\0' ? n : fallback;
}

std::string ExecModeName(ExecMode mode) {
  switch (mode) {
    case ExecMode::kInOrder:
      return "in_order";
    case ExecMode::kConcurrent1:
      return "concurrent1";
    case ExecMode::kConcurrent2:
      return "concurrent2";
    case ExecMode::kConcurrent4:
      return "concurrent4";
    case ExecMode::kPipelined1:
      return "pipelined1";
    case ExecMode::kPipelined2:
      return "pipelined2";
    case ExecMode::kPipelined4:
      return "pipelined4";
    case ExecMode::kPipelined3InFlight:
      return "pipelined_3_in_flight";
    case ExecMode::kPipelinedReverseWait:
      return "pipelined_reverse_wait";
    case ExecMode::kMixedRunAndRunAsync:
      return "mixed_run_and_run_async";
    case ExecMode::kConcurrentDelayed:
      return "concurrent_delayed";
    case ExecMode::kPipelinedDelayed:
      return "pipelined_delayed";
    case ExecMode::kCaptureGraphs:
      return "capture_graphs";
    case ExecMode::kPipelinedScheduleTrial:
      return "pipelined_schedule_trial";
    case ExecMode::kPipelinedEagerUpdates:
      return "pipelined_eager_updates";
  }
  return "unknown";
}

bool ParseExecMode(const std::string& name, ExecMode* mode) {
  for (ExecMode m : ComparedModes()) {
    if (ExecModeName(m) == name) {
      *mode = m;
      return true;
    }
  }
  if (name == ExecModeName(ExecMode::kInOrder)) {
    *mode = ExecMode::kInOrder;
    return true;
  }
  return false;
}

Trajectory RunTrajectory(const GeneratedProgram& program, ExecMode mode, int steps,
                         std::string* error, std::shared_ptr<PlacementPlanner> planner) {
  error->clear();
  Trajectory t;
  t.fetch_names = program.fetches;
  const ModeConfig c = ConfigOf(mode);
  StreamDelay delay(c.delay);
  if (!delay.status().ok()) {
    *error = absl::StrCat("setting the sim stream delay: ", delay.status().ToString());
    return t;
  }
  ExecutorOptions options;
  options.in_order = c.in_order;
  options.host_workers = c.workers;
  options.capture_graphs = c.capture;
  options.atomic_updates = c.atomic_updates;
  // Every other mode keeps its schedule; the trial's mode switches between
  // concurrent and in-order runs from the first (phases of one run: C I I C).
  options.schedule_trial = c.schedule_trial ? ScheduleTrialOptions{.enabled = true,
                                                                   .warmup_runs = 0,
                                                                   .runs_per_phase = 1,
                                                                   .rounds = 2,
                                                                   .early_margin = 0}
                                            : ScheduleTrialOptions{.enabled = false};
  options.placement_planner = std::move(planner);
  Executor exe(program.default_place, options);
  Scope scope;
  absl::Status s = exe.Run(program.builder->startup_program(), &scope).status();
  if (!s.ok()) {
    *error = absl::StrCat("startup: ", s.ToString());
    return t;
  }
  absl::StatusOr<std::unique_ptr<Plan>> plan =
      exe.Prepare(program.builder->main_program(), scope, program.feed_names, program.fetches);
  if (!plan.ok()) {
    *error = absl::StrCat("prepare: ", plan.status().ToString());
    return t;
  }
  // Every step's fetches as returned (read again at the end) and as bytes,
  // by step: a mode may wait for a later step first.
  std::vector<std::vector<Tensor>> kept(steps);
  std::vector<std::vector<Trajectory::Value>> fetched(steps);
  std::vector<bool> done(steps, false);
  auto record = [&](int step, absl::StatusOr<std::vector<Tensor>> out) {
    if (!out.ok()) {
      if (error->empty()) *error = absl::StrCat("step ", step, ": ", out.status().ToString());
      return false;
    }
    for (const Tensor& f : *out) {
      absl::StatusOr<Trajectory::Value> v = HostValue(f);
      if (!v.ok()) {
        if (error->empty()) {
          *error =
              absl::StrCat("step ", step, ": copying a fetch to the host: ", v.status().ToString());
        }
        return false;
      }
      fetched[step].push_back(*std::move(v));
    }
    kept[step] = *std::move(out);
    done[step] = true;
    return true;
  };
  {
    // Handles (oldest first) with their step; destroyed before the plan.
    std::deque<std::pair<int, RunHandle>> in_flight;
    bool ok = true;
    auto start = [&](int step) {
      // A fresh feed map (and fresh tensors) per step.
      absl::StatusOr<RunHandle> started = exe.RunAsync(plan->get(), &scope, program.Feeds(step));
      if (!started.ok()) {
        *error = absl::StrCat("step ", step, ": RunAsync: ", started.status().ToString());
        return false;
      }
      in_flight.emplace_back(step, *std::move(started));
      return true;
    };
    auto wait_oldest = [&] {
      const bool r = record(in_flight.front().first, in_flight.front().second.Wait());
      in_flight.pop_front();
      return r;
    };
    auto wait_newest = [&] {
      const bool r = record(in_flight.back().first, in_flight.back().second.Wait());
      in_flight.pop_back();
      return r;
    };
    for (int step = 0; step < steps && ok; ++step) {
      switch (c.pattern) {
        case Pattern::kRun:
          ok = record(step, exe.Run(plan->get(), &scope, program.Feeds(step)));
          break;
        case Pattern::kPipelined:
          ok = start(step);
          if (ok && static_cast<int>(in_flight.size()) >= c.in_flight) ok = wait_oldest();
          break;
        case Pattern::kReverseWait:  // two started, the later waited for first
          ok = start(step);
          if (ok && static_cast<int>(in_flight.size()) == 2) ok = wait_newest() && wait_oldest();
          break;
        case Pattern::kMixed:  // even steps RunAsync (kept), odd steps Run, then the kept one
          if (step % 2 == 0) {
            ok = start(step);
          } else {
            ok = record(step, exe.Run(plan->get(), &scope, program.Feeds(step)));
            if (ok && !in_flight.empty()) ok = wait_oldest();
          }
          break;
      }
    }
    // Wait for the rest (after an error too: nothing is left running).
    while (!in_flight.empty()) {
      absl::StatusOr<std::vector<Tensor>> out = in_flight.front().second.Wait();
      if (ok) ok = record(in_flight.front().first, std::move(out));
      in_flight.pop_front();
    }
    for (int step = 0; step < steps && done[step]; ++step) {
      t.fetches.push_back(fetched[step]);
      t.steps_done = step + 1;
    }
    if (!ok) return t;
  }
  for (const std::string& name : scope.Names()) {
    const Variable* var = scope.Find(name);
    const Tensor* v = var == nullptr ? nullptr : var->data_tensor();
    if (v == nullptr || !v->initialized()) continue;
    absl::StatusOr<Trajectory::Value> value = HostValue(*v);
    if (!value.ok()) {
      *error =
          absl::StrCat("copying variable '", name, "' to the host: ", value.status().ToString());
      return t;
    }
    if (var->is_selected_rows()) value->meta += " (selected rows)";
    t.variables[name] = *std::move(value);
  }
  for (size_t step = 0; step < kept.size() && t.changed_after_run.empty(); ++step) {
    if (!done[step]) continue;
    for (size_t i = 0; i < kept[step].size(); ++i) {
      absl::StatusOr<Trajectory::Value> now = HostValue(kept[step][i]);
      if (!now.ok()) continue;
      const std::string diff =
          CompareValues(absl::StrCat("step ", step, " fetch '", program.fetches[i], "'"),
                        t.fetches[step][i], *now);
      if (!diff.empty()) {
        t.changed_after_run = absl::StrCat(
            diff, " (read again after the last step; it was ", kept[step][i].place().ToString(),
            " memory: the run returned a tensor that later runs wrote)");
        break;
      }
    }
  }
  return t;
}

std::string FirstNonFinite(const Trajectory& t) {
  auto check = [](const std::string& what, const Trajectory::Value& v) -> std::string {
    if (v.dtype != DataType::kFloat32) return "";
    for (size_t i = 0; i + 4 <= v.bytes.size(); i += 4) {
      float f;
      std::memcpy(&f, v.bytes.data() + i, 4);
      if (!std::isfinite(f)) return absl::StrCat(what, " element ", i / 4, " is ", f);
    }
    return "";
  };
  for (size_t step = 0; step < t.fetches.size(); ++step) {
    for (size_t i = 0; i < t.fetches[step].size(); ++i) {
      std::string bad = check(absl::StrCat("step ", step, " fetch #", i), t.fetches[step][i]);
      if (!bad.empty()) return bad;
    }
  }
  for (const auto& [name, value] : t.variables) {
    std::string bad = check(absl::StrCat("variable '", name, "'"), value);
    if (!bad.empty()) return bad;
  }
  return "";
}

std::string CompareTrajectories(const Trajectory& expected, const Trajectory& got,
                                bool compare_places) {
  if (got.fetches.size() != expected.fetches.size()) {
    return absl::StrCat("ran ", got.fetches.size(), " steps, expected ", expected.fetches.size());
  }
  for (size_t step = 0; step < expected.fetches.size(); ++step) {
    const auto& a = expected.fetches[step];
    const auto& b = got.fetches[step];
    if (a.size() != b.size()) {
      return absl::StrCat("step ", step, " returned ", b.size(), " fetches, expected ", a.size());
    }
    for (size_t i = 0; i < a.size(); ++i) {
      const std::string name =
          i < expected.fetch_names.size() ? expected.fetch_names[i] : absl::StrCat("#", i);
      std::string diff = CompareValues(absl::StrCat("step ", step, " fetch '", name, "'"), a[i],
                                       b[i], compare_places);
      if (!diff.empty()) return diff;
    }
  }
  for (const auto& [name, value] : expected.variables) {
    auto it = got.variables.find(name);
    if (it == got.variables.end())
      return absl::StrCat("variable '", name, "' is missing at the end");
    std::string diff = CompareValues(absl::StrCat("variable '", name, "' at the end"), value,
                                     it->second, compare_places);
    if (!diff.empty()) return diff;
  }
  for (const auto& [name, value] : got.variables) {
    if (!expected.variables.count(name)) {
      return absl::StrCat("variable '", name, "' (", value.meta,
                          ") is in the scope at the end, "
                          "but not in the reference's");
    }
  }
  return "";
}

}  // namespace differential
}  // namespace tandem
