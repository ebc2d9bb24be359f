// Compile-time lists of element types, and dtype dispatch over them, so one
// list drives both a kernel's registration and the instantiations it runs.
//
//   using AddTypes = TypeList<float, double, int32_t, int64_t>;
//   KernelDef("elementwise_add", "cpu").TypeConstraint("X", AddTypes::DataTypes());
//   ...
//   return DispatchType(AddTypes(), x->dtype(), *ctx, "X", [&](auto tag) {
//     using T = typename decltype(tag)::type;
//     Add<T>(...);
//     return absl::OkStatus();
//   });
//
// Header-only, stateless, thread-safe.
#ifndef TANDEM_BACKENDS_COMMON_TYPE_DISPATCH_H_
#define TANDEM_BACKENDS_COMMON_TYPE_DISPATCH_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/kernel/kernel_context.h"
#include "framework/types/data_type.h"

namespace tandem {

template <typename... Ts>
struct TypeList {
  static std::vector<DataType> DataTypes() { return {DataTypeOf<Ts>()...}; }
};

using FloatTypes = TypeList<float, double>;
// FloatTypes and the 16-bit floating types (float16.h), which host kernels
// compute in float32 (low_precision.h).
using FloatTypesWith16Bit = TypeList<float, double, bfloat16, float16>;
using NumericTypes = TypeList<float, double, int32_t, int64_t>;
using NumericTypesWith16Bit = TypeList<float, double, int32_t, int64_t, bfloat16, float16>;
using AllTypes = TypeList<float, double, int32_t, int64_t, bool>;
// AllTypes and the 16-bit floating types (float16.h), for the kernels that
// only move or convert values: cast, fill_constant.
using AllTypesWith16Bit = TypeList<float, double, int32_t, int64_t, bool, bfloat16, float16>;

// Calls fn(TypeTag<T>{}) for the T of `dtype` and returns its status. A
// dtype outside the list is InvalidArgument naming the op, the argument or
// attribute `arg`, the dtype and the supported ones (the registry normally
// rules this out).
template <typename... Ts, typename Fn>
absl::Status DispatchType(TypeList<Ts...>, DataType dtype, const KernelContext& ctx,
                          absl::string_view arg, Fn&& fn) {
  absl::Status status;
  const bool found =
      ((dtype == DataTypeOf<Ts>() ? (status = fn(TypeTag<Ts>{}), true) : false) || ...);
  if (found) return status;
  std::vector<std::string> names = {std::string(DataTypeName(DataTypeOf<Ts>()))...};
  return ctx.InvalidArgument(absl::StrCat("'", arg, "' is ", DataTypeName(dtype),
                                          "; supported: ", absl::StrJoin(names, ", ")));
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_TYPE_DISPATCH_H_
