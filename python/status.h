// absl::Status -> Python exceptions for the extension.
//
//   ThrowIfError(exe.Run(...).status());              // raises on error
//   Tensor t = ValueOrThrow(Tensor::Allocate(...));   // the value, or raises
//
// A failed status becomes a C++ StatusError, which the translator that
// RegisterStatusErrors installs turns into the Python class registered for
// its code by tandem/errors.py (InvalidArgument -> tandem.InvalidArgumentError,
// a ValueError; NotFound -> a LookupError; ResourceExhausted -> a MemoryError;
// DataLoss -> an IOError; the other codes -> tandem.Error subclasses), with
// the status message as its text and the code name in `.code`. Call these
// with or without the GIL; the translation happens when the exception
// reaches pybind11, which holds it.
#ifndef TANDEM_PYTHON_STATUS_H_
#define TANDEM_PYTHON_STATUS_H_

#include <exception>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pybind11/pybind11.h"

namespace tandem {
namespace python {

class StatusError : public std::exception {
 public:
  explicit StatusError(absl::Status status)
      : status_(std::move(status)), what_(status_.ToString()) {}
  const absl::Status& status() const { return status_; }
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  absl::Status status_;
  std::string what_;
};

inline void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) throw StatusError(status);
}

template <typename T>
T ValueOrThrow(absl::StatusOr<T> value) {
  if (!value.ok()) throw StatusError(value.status());
  return *std::move(value);
}

// Installs the translator and `_set_error_classes(dict)`, with which
// tandem/errors.py gives the Python class of each code (by its name, e.g.
// "INVALID_ARGUMENT"; "" for the fallback).
void RegisterStatusErrors(pybind11::module_& m);

}  // namespace python
}  // namespace tandem

#endif  // TANDEM_PYTHON_STATUS_H_
