// Variable: what a program variable holds at run time: nothing, a dense
// Tensor, or SelectedRows (a sparse row gradient).
//
//   Variable v(Tensor::FromVector<float>({2}, {1, 2}));
//   if (v.is_tensor()) Use(v.tensor());
//   v.set(SelectedRows(...));
//
// Value semantics (the tensor's buffer is shared); not thread-safe to mutate.
#ifndef TANDEM_FRAMEWORK_TENSOR_VARIABLE_H_
#define TANDEM_FRAMEWORK_TENSOR_VARIABLE_H_

#include <variant>

#include "framework/tensor/selected_rows.h"
#include "framework/tensor/tensor.h"

namespace tandem {

class Variable {
 public:
  Variable() = default;
  explicit Variable(Tensor t) : value_(std::move(t)) {}
  explicit Variable(SelectedRows rows) : value_(std::move(rows)) {}

  bool empty() const { return std::holds_alternative<std::monostate>(value_); }
  bool is_tensor() const { return std::holds_alternative<Tensor>(value_); }
  bool is_selected_rows() const {
    return std::holds_alternative<SelectedRows>(value_);
  }
  // CHECK-fail when the variable holds something else (a bug).
  const Tensor& tensor() const { return std::get<Tensor>(value_); }
  Tensor* mutable_tensor() { return &std::get<Tensor>(value_); }
  const SelectedRows& selected_rows() const { return std::get<SelectedRows>(value_); }
  SelectedRows* mutable_selected_rows() { return &std::get<SelectedRows>(value_); }

  void set(Tensor t) { value_ = std::move(t); }
  void set(SelectedRows r) { value_ = std::move(r); }
  void clear() { value_ = std::monostate(); }

  // The dense tensor, or the value tensor of SelectedRows.
  const Tensor* data_tensor() const {
    if (is_tensor()) return &tensor();
    if (is_selected_rows()) return &selected_rows().value();
    return nullptr;
  }

 private:
  std::variant<std::monostate, Tensor, SelectedRows> value_;
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_TENSOR_VARIABLE_H_
