// Element functions of the activation kernels (relu, sigmoid, tanh, gelu)
// and of their gradients, one definition for the host kernels
// (math_kernels.h) and the CUDA launchers (backends/cuda/math_launchers.h):
// nvcc compiles this header too.
//
//   Map<float, Policy>(x, out, n, Activate<Activation::kSigmoid>());
//   Map2<float, Policy>(out, dout, dx, n, ActivationGrad<Activation::kSigmoid>());
//   WithActivation<Activate>(act, [&](auto f) { Map<float, Policy>(x, out, n, f); });
//
// The gradients of relu, sigmoid and tanh read the forward output Out; those
// of gelu read the forward input X (GradReadsInput). Function objects, so
// loops over them inline. Stateless, thread-safe.
#ifndef TANDEM_BACKENDS_COMMON_ACTIVATION_H_
#define TANDEM_BACKENDS_COMMON_ACTIVATION_H_

#include <cmath>

#include "backends/common/host_device.h"

namespace tandem {

// kGelu is the exact form, kGeluTanh the tanh approximation (gelu's attr
// approximate): one op, two functions.
enum class Activation { kRelu, kSigmoid, kTanh, kGelu, kGeluTanh };

// Whether the gradient of `act` reads the forward input X (else Out).
constexpr bool GradReadsInput(Activation act) {
  return act == Activation::kGelu || act == Activation::kGeluTanh;
}

// The argument the gradient op reads the forward tensor from: "X" or "Out".
constexpr const char* GradForwardArg(Activation act) { return GradReadsInput(act) ? "X" : "Out"; }

namespace activation_internal {

inline constexpr double kSqrtHalf = 0.70710678118654752440;     // 1 / sqrt(2)
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1 / sqrt(2 pi)
inline constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi)
inline constexpr double kGeluCubic = 0.044715;

// tanh(sqrt(2 / pi) * (x + 0.044715 x^3)), the tanh approximation's core.
template <typename T>
TANDEM_HOST_DEVICE inline T GeluTanhCore(T x) {
  return std::tanh(T(kSqrt2OverPi) * (x + T(kGeluCubic) * x * x * x));
}

}  // namespace activation_internal

// relu: x > 0 ? x : 0. sigmoid: 1 / (1 + exp(-x)), as exp(x) / (1 + exp(x))
// for x < 0 so that exp never overflows. tanh: std::tanh. gelu: x * Phi(x) =
// x / 2 * (1 + erf(x / sqrt(2))); its tanh form x / 2 * (1 + tanh(sqrt(2 /
// pi) * (x + 0.044715 x^3))) (GPT-2's). Computed in T.
template <Activation kAct>
struct Activate {
  template <typename T>
  TANDEM_HOST_DEVICE T operator()(T x) const {
    using namespace activation_internal;
    if constexpr (kAct == Activation::kRelu) {
      return x > T(0) ? x : T(0);
    } else if constexpr (kAct == Activation::kSigmoid) {
      if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
      const T e = std::exp(x);
      return e / (T(1) + e);
    } else if constexpr (kAct == Activation::kTanh) {
      return std::tanh(x);
    } else if constexpr (kAct == Activation::kGelu) {
      return T(0.5) * x * (T(1) + std::erf(x * T(kSqrtHalf)));
    } else {
      return T(0.5) * x * (T(1) + GeluTanhCore(x));
    }
  }
};

// dx from dout and the forward tensor the gradient reads (`fwd`: Out, or X
// for gelu): relu dout where out > 0 (else 0), sigmoid dout * out * (1 -
// out), tanh dout * (1 - out^2); gelu dout * (Phi(x) + x * phi(x)), its tanh
// form dout * (0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2 / pi) (1 + 3 * 0.044715
// x^2)) with t its core.
template <Activation kAct>
struct ActivationGrad {
  template <typename T>
  TANDEM_HOST_DEVICE T operator()(T fwd, T dout) const {
    using namespace activation_internal;
    if constexpr (kAct == Activation::kRelu) {
      return fwd > T(0) ? dout : T(0);
    } else if constexpr (kAct == Activation::kSigmoid) {
      return dout * fwd * (T(1) - fwd);
    } else if constexpr (kAct == Activation::kTanh) {
      return dout * (T(1) - fwd * fwd);
    } else if constexpr (kAct == Activation::kGelu) {
      const T cdf = T(0.5) * (T(1) + std::erf(fwd * T(kSqrtHalf)));
      const T pdf = T(kInvSqrt2Pi) * std::exp(T(-0.5) * fwd * fwd);
      return dout * (cdf + fwd * pdf);
    } else {
      const T t = GeluTanhCore(fwd);
      const T inner = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluCubic) * fwd * fwd);
      return dout * (T(0.5) * (T(1) + t) + T(0.5) * fwd * (T(1) - t * t) * inner);
    }
  }
};

// Calls launch(Functor<act>()) with `act` as a template argument (Functor:
// Activate or ActivationGrad); returns what launch returns.
template <template <Activation> class Functor, typename Launch>
auto WithActivation(Activation act, Launch&& launch) {
  switch (act) {
    case Activation::kRelu:
      return launch(Functor<Activation::kRelu>());
    case Activation::kSigmoid:
      return launch(Functor<Activation::kSigmoid>());
    case Activation::kTanh:
      return launch(Functor<Activation::kTanh>());
    case Activation::kGelu:
      return launch(Functor<Activation::kGelu>());
    case Activation::kGeluTanh:
      break;
  }
  return launch(Functor<Activation::kGeluTanh>());
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_ACTIVATION_H_
