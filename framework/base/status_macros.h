// Status propagation macros (Abseil 20220623 has none).
//
//   absl::Status Load(Model* m) {
//     RETURN_IF_ERROR(m->Check());
//     ASSIGN_OR_RETURN(Tensor t, ReadTensor("w"));
//     ...
//   }
//
// Header-only; thread-safe (no state).
#ifndef TANDEM_FRAMEWORK_BASE_STATUS_MACROS_H_
#define TANDEM_FRAMEWORK_BASE_STATUS_MACROS_H_

#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TANDEM_STATUS_CONCAT_INNER_(a, b) a##b
#define TANDEM_STATUS_CONCAT_(a, b) TANDEM_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define RETURN_IF_ERROR(expr)                                          \
  do {                                                                 \
    ::absl::Status tandem_status_ = (expr);                            \
    if (ABSL_PREDICT_FALSE(!tandem_status_.ok())) return tandem_status_; \
  } while (0)

// `ASSIGN_OR_RETURN(lhs, rexpr)`: evaluates `rexpr` (an absl::StatusOr<T>),
// returns its status on error, otherwise moves the value into `lhs`, which
// may be a declaration (`ASSIGN_OR_RETURN(auto x, F())`).
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  TANDEM_ASSIGN_OR_RETURN_IMPL_(     \
      TANDEM_STATUS_CONCAT_(tandem_statusor_, __LINE__), lhs, rexpr)

#define TANDEM_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr)  \
  auto statusor = (rexpr);                                   \
  if (ABSL_PREDICT_FALSE(!statusor.ok())) {                  \
    return std::move(statusor).status();                     \
  }                                                          \
  lhs = std::move(statusor).value()

#endif  // TANDEM_FRAMEWORK_BASE_STATUS_MACROS_H_
