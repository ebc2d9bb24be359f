// Element functions of the activation kernels (relu, sigmoid, tanh) and of
// their gradients, which read the forward output rather than the input.
//
//   Map<float, Policy>(x, out, n, Activate<Activation::kSigmoid>());
//   Map2<float, Policy>(out, dout, dx, n, ActivationGrad<Activation::kSigmoid>());
//
// Function objects, so loops over them inline. Stateless, thread-safe.
#ifndef TANDEM_BACKENDS_COMMON_ACTIVATION_H_
#define TANDEM_BACKENDS_COMMON_ACTIVATION_H_

#include <cmath>

namespace tandem {

enum class Activation { kRelu, kSigmoid, kTanh };

// relu: x > 0 ? x : 0. sigmoid: 1 / (1 + exp(-x)), as exp(x) / (1 + exp(x))
// for x < 0 so that exp never overflows. tanh: std::tanh.
template <Activation kAct>
struct Activate {
  template <typename T>
  T operator()(T x) const {
    if constexpr (kAct == Activation::kRelu) {
      return x > T(0) ? x : T(0);
    } else if constexpr (kAct == Activation::kSigmoid) {
      if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
      const T e = std::exp(x);
      return e / (T(1) + e);
    } else {
      return std::tanh(x);
    }
  }
};

// dx from the forward output `out` and dout: relu dout where out > 0 (else
// 0), sigmoid dout * out * (1 - out), tanh dout * (1 - out^2).
template <Activation kAct>
struct ActivationGrad {
  template <typename T>
  T operator()(T out, T dout) const {
    if constexpr (kAct == Activation::kRelu) {
      return out > T(0) ? dout : T(0);
    } else if constexpr (kAct == Activation::kSigmoid) {
      return dout * out * (T(1) - out);
    } else {
      return dout * (T(1) - out * out);
    }
  }
};

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_ACTIVATION_H_
