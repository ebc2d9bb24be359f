#include "framework/types/shape.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"

namespace tandem {

absl::StatusOr<Shape> Shape::Make(absl::Span<const int64_t> dims) {
  Shape s(dims);
  absl::StatusOr<int64_t> n = s.NumElements();
  if (!n.ok()) return n.status();
  return s;
}

absl::StatusOr<int64_t> Shape::NumElements() const {
  int64_t n = 1;
  for (int i = 0; i < rank(); ++i) {
    if (dims_[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", ToString(), ": dim ", i, " is negative (", dims_[i], ")"));
    }
    if (__builtin_mul_overflow(n, dims_[i], &n)) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", ToString(), ": element count overflows int64 at dim ", i));
    }
  }
  return n;
}

absl::StatusOr<int64_t> Shape::KnownElements() const {
  int64_t n = 1;
  bool empty = false;
  for (int i = 0; i < rank(); ++i) {
    if (dims_[i] < -1) {
      return absl::InvalidArgumentError(absl::StrCat("shape ", ToString(), ": dim ", i, " is ",
                                                     dims_[i], " (need >= 0, or -1 if unknown)"));
    }
    empty |= dims_[i] == 0;
    if (dims_[i] > 0 && __builtin_mul_overflow(n, dims_[i], &n)) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", ToString(), ": element count overflows int64 at dim ", i));
    }
  }
  return empty ? 0 : n;
}

int64_t Shape::num_elements() const {
  absl::StatusOr<int64_t> n = NumElements();
  CHECK(n.ok()) << n.status();
  return *n;
}

std::string Shape::ToString() const { return absl::StrCat("[", absl::StrJoin(dims_, ", "), "]"); }

std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.ToString(); }

}  // namespace tandem
