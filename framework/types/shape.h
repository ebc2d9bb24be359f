// Shape: dimensions of a tensor (int64, rank 0 = scalar).
//
//   ASSIGN_OR_RETURN(Shape s, Shape::Make({2, 3}));  // checks dims >= 0
//   ASSIGN_OR_RETURN(int64_t n, s.NumElements());     // overflow-checked
//   s.ToString();                                     // "[2, 3]"
//
// The constructor from a dimension list does not validate; use Make() for
// anything a user supplies. Value type, not thread-safe to mutate.
#ifndef TANDEM_FRAMEWORK_TYPES_SHAPE_H_
#define TANDEM_FRAMEWORK_TYPES_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace tandem {

class Shape {
 public:
  using Dims = absl::InlinedVector<int64_t, 6>;

  Shape() = default;  // rank 0: a scalar with one element
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(absl::Span<const int64_t> dims) : dims_(dims.begin(), dims.end()) {}

  // Validates: every dim >= 0 and the element count fits in int64.
  // InvalidArgument names the offending dim and value.
  static absl::StatusOr<Shape> Make(absl::Span<const int64_t> dims);

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t dim(int i) const { return dims_[i]; }
  void set_dim(int i, int64_t v) { dims_[i] = v; }
  const Dims& dims() const { return dims_; }
  std::vector<int64_t> ToVector() const { return std::vector<int64_t>(dims_.begin(), dims_.end()); }

  // Product of dims; InvalidArgument on negative dims or int64 overflow.
  absl::StatusOr<int64_t> NumElements() const;
  // Product of the dims known so far (>= 0; -1 marks one known at run time
  // only and counts as 1): a declared shape is usable only if this fits.
  // InvalidArgument naming the shape on a dim below -1 or when the product
  // of the known non-zero dims overflows int64 (so any product of some of
  // the dims fits, [0, 2^62, 4] included).
  absl::StatusOr<int64_t> KnownElements() const;
  // Product of dims for a shape already validated (CHECK-fails otherwise).
  int64_t num_elements() const;

  std::string ToString() const;  // "[1, 3, 5, 5]", "[]" for a scalar

  friend bool operator==(const Shape& a, const Shape& b) { return a.dims_ == b.dims_; }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }
  template <typename H>
  friend H AbslHashValue(H h, const Shape& s) {
    return H::combine(std::move(h), s.dims_);
  }

 private:
  Dims dims_;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_TYPES_SHAPE_H_
