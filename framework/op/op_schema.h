// OpSchema: what an op is (arguments, attributes, shape inference, gradient),
// independent of any device. Schemas live in ops/; kernels in backends/.
//
//   REGISTER_OP("scale")
//       .Doc("Out = scale * X + bias")
//       .Input("X")
//       .Output("Out")
//       .Attr<double>("scale", 1.0)
//       .Attr<double>("bias", 0.0)
//       .SetInferShape([](InferShapeContext* ctx) -> absl::Status {
//         ASSIGN_OR_RETURN(TensorMeta x, ctx->Input("X"));
//         ctx->SetOutput("Out", x);
//         return absl::OkStatus();
//       })
//       .SetGradMaker(...);
//
//   ASSIGN_OR_RETURN(const OpSchema* s, OpRegistry::Global().Find("scale"));
//   RETURN_IF_ERROR(s->Validate(&op_desc));   // fills attribute defaults
//
// Registration happens in static initialisers; a duplicate op name is a
// start-up crash. Lookups afterwards are thread-safe.
#ifndef TANDEM_FRAMEWORK_OP_OP_SCHEMA_H_
#define TANDEM_FRAMEWORK_OP_OP_SCHEMA_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "framework/op/attr.h"
#include "framework/op/op_desc.h"
#include "framework/types/data_type.h"
#include "framework/types/shape.h"

namespace tandem {

class Tensor;

// What shape inference knows about a variable. Dims may be -1 (unknown)
// when inferring at program-build time.
struct TensorMeta {
  DataType dtype = DataType::kFloat32;
  Shape shape;
  // The variable holds SelectedRows (rows of a [shape[0], ...] tensor),
  // e.g. a sparse embedding gradient.
  bool selected_rows = false;
  friend bool operator==(const TensorMeta& a, const TensorMeta& b) {
    return a.dtype == b.dtype && a.shape == b.shape && a.selected_rows == b.selected_rows;
  }
};

// Inputs and outputs of shape inference for one op.
class InferShapeContext {
 public:
  // `inputs` maps each argument to the metas of its variables, in order.
  // `host_values` optionally maps an argument to host tensors holding its
  // values (known at run time for HostMemory arguments such as a shape).
  InferShapeContext(const OpDesc& op, std::map<std::string, std::vector<TensorMeta>> inputs,
                    std::map<std::string, std::vector<const Tensor*>> host_values = {})
      : op_(op), inputs_(std::move(inputs)), host_values_(std::move(host_values)) {}

  const OpDesc& op() const { return op_; }
  bool HasInput(absl::string_view arg) const;
  int InputCount(absl::string_view arg) const;
  // InvalidArgument naming the op if the argument is missing.
  absl::StatusOr<TensorMeta> Input(absl::string_view arg, int index = 0) const;
  // The values of a host argument if known now, else nullptr.
  const Tensor* InputValues(absl::string_view arg, int index = 0) const;

  template <typename T>
  absl::StatusOr<T> Attr(absl::string_view name) const {
    return GetAttr<T>(op_.attrs, name, op_.type);
  }

  void SetOutput(absl::string_view arg, TensorMeta meta, int index = 0);
  const std::map<std::string, std::vector<TensorMeta>>& outputs() const { return outputs_; }

  // InvalidArgument("op 'type': " + message).
  absl::Status Error(absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat("op '", op_.type, "': ", message));
  }

 private:
  const OpDesc& op_;
  std::map<std::string, std::vector<TensorMeta>> inputs_;
  std::map<std::string, std::vector<const Tensor*>> host_values_;
  std::map<std::string, std::vector<TensorMeta>> outputs_;
};

using InferShapeFn = std::function<absl::Status(InferShapeContext*)>;
// What a gradient maker may ask about the forward op's variables.
struct GradContext {
  // Input variables whose gradients are needed; others may be skipped.
  std::vector<std::string> wanted;
  // Meta of a forward variable (dtype, shape), or of the gradient of one of
  // the op's outputs when that gradient exists already (e.g. split's pieces
  // that reach the loss); nullopt if unknown.
  std::function<std::optional<TensorMeta>(const std::string& var)> meta;

  bool Wants(const std::string& var) const {
    for (const std::string& w : wanted)
      if (w == var) return true;
    return false;
  }
};

// Returns the ops computing the gradients of `forward`'s inputs from the
// gradients of its outputs (names from GradVarName). An empty result means
// the op has no gradient.
using GradMakerFn = std::function<absl::StatusOr<std::vector<OpDesc>>(const OpDesc& forward,
                                                                      const GradContext& ctx)>;

class OpSchema {
 public:
  struct ArgDef {
    std::string name;
    bool optional = false;
    bool duplicable = false;  // takes a list of variables
    std::string doc;
  };
  struct AttrDef {
    std::string name;
    AttrType type;
    std::optional<AttrValue> default_value;  // nullopt: required
    std::string doc;
  };

  explicit OpSchema(std::string type) : type_(std::move(type)) {}

  OpSchema& Doc(std::string doc);
  OpSchema& Input(std::string name, std::string doc = "");
  OpSchema& OptionalInput(std::string name, std::string doc = "");
  OpSchema& DuplicableInput(std::string name, std::string doc = "");
  OpSchema& Output(std::string name, std::string doc = "");
  OpSchema& OptionalOutput(std::string name, std::string doc = "");
  // An output bound to a list of one or more variables (e.g. split's Out).
  OpSchema& DuplicableOutput(std::string name, std::string doc = "");
  template <typename T>
  OpSchema& Attr(std::string name, T default_value, std::string doc = "") {
    attrs_.push_back({std::move(name), AttrTypeFor<T>(), AttrValue(default_value), std::move(doc)});
    return *this;
  }
  OpSchema& RequiredAttr(std::string name, AttrType type, std::string doc = "");
  OpSchema& SetInferShape(InferShapeFn fn);
  OpSchema& SetGradMaker(GradMakerFn fn);
  // The op's outputs are a function of its attributes alone (fill_constant):
  // without inputs, an executor may compute it once and keep its value
  // (framework/estimate/memory_policy.h, folded constants). Not for ops
  // whose value must change between runs.
  OpSchema& Constant();

  const std::string& type() const { return type_; }
  const std::string& doc() const { return doc_; }
  const std::vector<ArgDef>& inputs() const { return inputs_; }
  const std::vector<ArgDef>& outputs() const { return outputs_; }
  const std::vector<AttrDef>& attrs() const { return attrs_; }
  const InferShapeFn& infer_shape() const { return infer_shape_; }
  const GradMakerFn& grad_maker() const { return grad_maker_; }
  bool is_constant() const { return constant_; }
  bool HasArg(absl::string_view name) const;

  // Checks `op` against the schema and fills missing attributes with their
  // defaults. InvalidArgument names the op and the offending argument,
  // attribute or value (unknown, missing, wrong type).
  absl::Status Validate(OpDesc* op) const;

 private:
  std::string type_;
  std::string doc_;
  std::vector<ArgDef> inputs_;
  std::vector<ArgDef> outputs_;
  std::vector<AttrDef> attrs_;
  InferShapeFn infer_shape_;
  GradMakerFn grad_maker_;
  bool constant_ = false;
};

class OpRegistry {
 public:
  static OpRegistry& Global();
  // CHECK-fails on a duplicate type. The returned schema is filled in by the
  // caller during static initialisation.
  OpSchema& Register(const std::string& type);
  // NotFound listing the registered op types.
  absl::StatusOr<const OpSchema*> Find(absl::string_view type) const;
  std::vector<std::string> RegisteredOps() const;

 private:
  std::map<std::string, std::unique_ptr<OpSchema>, std::less<>> schemas_;
};

#define TANDEM_OP_CONCAT_INNER_(a, b) a##b
#define TANDEM_OP_CONCAT_(a, b) TANDEM_OP_CONCAT_INNER_(a, b)
#define REGISTER_OP(type)                                                                         \
  static ::tandem::OpSchema& TANDEM_OP_CONCAT_(tandem_op_schema_, __COUNTER__) [[maybe_unused]] = \
      ::tandem::OpRegistry::Global().Register(type)

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_OP_OP_SCHEMA_H_
