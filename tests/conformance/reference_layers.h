// Float64 references of the layout ops (transpose, concat, split) and the
// layer ops (dropout, conv2d, pool2d, layer_norm, self_attention), written independently
// of every backend and of the ops' shape functions: plain loops over
// multi-indices and windows, no shared code with kernels. Test-only.
//
//   reference::Array y = reference::Conv2D(x, w, {{1, 1}, {1, 1}, {1, 1}, 1});
#ifndef TANDEM_TESTS_CONFORMANCE_REFERENCE_LAYERS_H_
#define TANDEM_TESTS_CONFORMANCE_REFERENCE_LAYERS_H_

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "framework/types/data_type.h"
#include "tests/conformance/reference.h"

namespace tandem::reference {

// Out.dim(k) = x.dim(axis[k]).
Array Transpose(const Array& x, const std::vector<int64_t>& axis);
// Joined along `axis` (>= 0).
Array Concat(const std::vector<Array>& xs, int axis);
// Cut along `axis` (>= 0) into pieces of `sizes`.
std::vector<Array> Split(const Array& x, int axis, const std::vector<int64_t>& sizes);

// dropout's {Out, Mask} in training for kernel run `step`: element i is
// kept iff the SplitMix64-based uniform of (stream seed of (seed, step), i)
// is >= p; kept elements are x * (1 / (1 - p) rounded to `dtype`), rounded
// to `dtype`.
std::pair<Array, Array> DropoutTrain(const Array& x, DataType dtype, double p, int64_t seed,
                                     uint64_t step);

struct ConvAttrs {
  std::array<int64_t, 2> strides = {1, 1}, paddings = {0, 0}, dilations = {1, 1};
  int64_t groups = 1;
};
Array Conv2D(const Array& x, const Array& w, const ConvAttrs& a);
// {Input@GRAD, Filter@GRAD}
std::pair<Array, Array> Conv2DGrad(const Array& x, const Array& w, const Array& dout,
                                   const ConvAttrs& a);

struct PoolAttrs {
  bool max = true;
  std::array<int64_t, 2> ksize = {1, 1}, strides = {1, 1}, paddings = {0, 0};
  bool global = false;
  bool exclusive = true;
};
Array Pool2D(const Array& x, const PoolAttrs& a);
// Max windows send the gradient to their first maximum (row-major).
Array Pool2DGrad(const Array& x, const Array& dout, const PoolAttrs& a);

// {Y, Mean, Variance}; empty `scale` / `bias` arrays mean none.
struct LayerNormResult {
  Array y, mean, var;
};
LayerNormResult LayerNorm(const Array& x, const Array& scale, const Array& bias, int axis,
                          double epsilon);
// {X@GRAD, Scale@GRAD, Bias@GRAD} from the exact (float64) statistics of x.
struct LayerNormGrads {
  Array dx, dscale, dbias;
};
LayerNormGrads LayerNormGrad(const Array& x, const Array& scale, const Array& dy, int axis,
                             double epsilon);

// self_attention of qkv [batch, seq, 3 * width] with `heads` heads and the
// given `scale`: the [seq, seq] score and probability matrices of every
// (batch, head) written out. {Out, Lse}.
struct AttentionResult {
  Array out, lse;
};
AttentionResult SelfAttention(const Array& qkv, int64_t heads, bool causal, double scale);
// QKV@GRAD from Out@GRAD through the softmax's Jacobian (dS = P * (dP -
// rowsum(P * dP))), with P from the exact forward.
Array SelfAttentionGrad(const Array& qkv, const Array& dout, int64_t heads, bool causal,
                        double scale);

}  // namespace tandem::reference

#endif  // TANDEM_TESTS_CONFORMANCE_REFERENCE_LAYERS_H_
