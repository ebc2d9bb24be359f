// The arithmetic of the elementwise_* ops, one definition for the host
// kernels (elementwise.h) and the CUDA launchers (backends/cuda/
// broadcast_launchers.h): both compile this header, so they agree bit for bit.
//
//   Binary<BinaryOp::kDiv>()(int32_t{INT32_MIN}, int32_t{-1})  // INT32_MIN: wraps
//   LaunchBinarySame<float>(BinaryOp::kSub, x, y, out, n, stream);
//
// Integers wrap around (two's complement) on overflow, INT_MIN / -1
// included; integer division truncates toward zero, and callers rule out
// zero divisors first. Floating point is IEEE: a + b, a - b, a * b, a / b.
// Stateless function objects, thread-safe; header-only.
#ifndef TANDEM_BACKENDS_COMMON_BINARY_OP_H_
#define TANDEM_BACKENDS_COMMON_BINARY_OP_H_

#include <type_traits>

#include "backends/common/host_device.h"

namespace tandem {

// a + b; integers wrap around.
template <typename T>
TANDEM_HOST_DEVICE inline T WrappingAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

enum class BinaryOp { kAdd, kSub, kMul, kDiv };

// a <op> b as a function object (so loops over it inline and vectorize).
template <BinaryOp kOp>
struct Binary {
  template <typename T>
  TANDEM_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      if constexpr (kOp == BinaryOp::kAdd) {
        return WrappingAdd(a, b);
      } else if constexpr (kOp == BinaryOp::kSub) {
        return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
      } else if constexpr (kOp == BinaryOp::kMul) {
        return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
      } else {
        return b == T(-1) ? static_cast<T>(U(0) - static_cast<U>(a)) : a / b;
      }
    } else {
      if constexpr (kOp == BinaryOp::kAdd) {
        return a + b;
      } else if constexpr (kOp == BinaryOp::kSub) {
        return a - b;
      } else if constexpr (kOp == BinaryOp::kMul) {
        return a * b;
      } else {
        return a / b;
      }
    }
  }
};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_BINARY_OP_H_
