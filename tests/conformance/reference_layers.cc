#include "tests/conformance/reference_layers.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "glog/logging.h"

namespace tandem::reference {
namespace {

int64_t Count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s.dims()) n *= d;
  return n;
}

// The multi-index of flat position `pos` in `s`.
std::vector<int64_t> Unflatten(const Shape& s, int64_t pos) {
  std::vector<int64_t> idx(s.rank());
  for (int d = s.rank() - 1; d >= 0; --d) {
    idx[d] = pos % s.dim(d);
    pos /= s.dim(d);
  }
  return idx;
}

int64_t Flatten(const Shape& s, const std::vector<int64_t>& idx) {
  int64_t pos = 0;
  for (int d = 0; d < s.rank(); ++d) pos = pos * s.dim(d) + idx[d];
  return pos;
}

// NCHW element access.
struct Nchw {
  const Shape& s;
  int64_t operator()(int64_t n, int64_t c, int64_t y, int64_t x) const {
    return ((n * s.dim(1) + c) * s.dim(2) + y) * s.dim(3) + x;
  }
};

// The uniform of SplitMix64 of counter i + 1 offset by `seed`, and its raw
// bits (written out again here, independently of backends/common).
uint64_t Mix(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

Array Transpose(const Array& x, const std::vector<int64_t>& axis) {
  std::vector<int64_t> dims;
  for (int64_t a : axis) dims.push_back(x.shape.dim(a));
  Array out{Shape(dims), std::vector<double>(x.values.size())};
  for (int64_t pos = 0; pos < Count(out.shape); ++pos) {
    const std::vector<int64_t> o = Unflatten(out.shape, pos);
    std::vector<int64_t> i(axis.size());
    for (size_t k = 0; k < axis.size(); ++k) i[axis[k]] = o[k];
    out.values[pos] = x.values[Flatten(x.shape, i)];
  }
  return out;
}

Array Concat(const std::vector<Array>& xs, int axis) {
  std::vector<int64_t> dims = xs[0].shape.ToVector();
  dims[axis] = 0;
  for (const Array& x : xs) dims[axis] += x.shape.dim(axis);
  Array out{Shape(dims), std::vector<double>(Count(Shape(dims)))};
  int64_t offset = 0;
  for (const Array& x : xs) {
    for (int64_t pos = 0; pos < Count(x.shape); ++pos) {
      std::vector<int64_t> idx = Unflatten(x.shape, pos);
      idx[axis] += offset;
      out.values[Flatten(out.shape, idx)] = x.values[pos];
    }
    offset += x.shape.dim(axis);
  }
  return out;
}

std::vector<Array> Split(const Array& x, int axis, const std::vector<int64_t>& sizes) {
  std::vector<Array> pieces;
  int64_t offset = 0;
  for (int64_t size : sizes) {
    std::vector<int64_t> dims = x.shape.ToVector();
    dims[axis] = size;
    Array piece{Shape(dims), std::vector<double>(Count(Shape(dims)))};
    for (int64_t pos = 0; pos < Count(piece.shape); ++pos) {
      std::vector<int64_t> idx = Unflatten(piece.shape, pos);
      idx[axis] += offset;
      piece.values[pos] = x.values[Flatten(x.shape, idx)];
    }
    pieces.push_back(piece);
    offset += size;
  }
  return pieces;
}

std::pair<Array, Array> DropoutTrain(const Array& x, DataType dtype, double p, int64_t seed,
                                     uint64_t step) {
  const uint64_t stream = Mix(static_cast<uint64_t>(seed), step);
  // The 16-bit types multiply in float32, then round once more.
  const DataType compute = IsLowPrecisionFloat(dtype) ? DataType::kFloat32 : dtype;
  const double scale = Convert(p >= 1 ? 0.0 : 1.0 / (1.0 - p), compute);
  Array out{x.shape, {}}, mask{x.shape, {}};
  for (size_t i = 0; i < x.values.size(); ++i) {
    const double u = static_cast<double>(Mix(stream, i) >> 11) * 0x1.0p-53;
    const bool keep = u >= p;
    mask.values.push_back(keep ? 1 : 0);
    out.values.push_back(keep ? Convert(Convert(x.values[i] * scale, compute), dtype) : 0.0);
  }
  return {out, mask};
}

namespace {

// Calls fn(out_index, in_index, w_index) for every term of the convolution
// sum (terms reading padding are skipped).
template <typename Fn>
void ForEachConvTerm(const Shape& xs, const Shape& ws, const Shape& os, const ConvAttrs& a,
                     Fn&& fn) {
  const int64_t cg = ws.dim(1), mg = ws.dim(0) / a.groups;
  for (int64_t n = 0; n < os.dim(0); ++n) {
    for (int64_t m = 0; m < os.dim(1); ++m) {
      const int64_t g = m / mg;
      for (int64_t oy = 0; oy < os.dim(2); ++oy) {
        for (int64_t ox = 0; ox < os.dim(3); ++ox) {
          for (int64_t c = 0; c < cg; ++c) {
            for (int64_t i = 0; i < ws.dim(2); ++i) {
              for (int64_t j = 0; j < ws.dim(3); ++j) {
                const int64_t y = oy * a.strides[0] - a.paddings[0] + i * a.dilations[0];
                const int64_t x = ox * a.strides[1] - a.paddings[1] + j * a.dilations[1];
                if (y < 0 || y >= xs.dim(2) || x < 0 || x >= xs.dim(3)) continue;
                fn(Nchw{os}(n, m, oy, ox), Nchw{xs}(n, g * cg + c, y, x), Nchw{ws}(m, c, i, j));
              }
            }
          }
        }
      }
    }
  }
}

Shape ConvOutShape(const Shape& xs, const Shape& ws, const ConvAttrs& a) {
  std::vector<int64_t> dims = {xs.dim(0), ws.dim(0)};
  for (int d = 0; d < 2; ++d) {
    const int64_t extent = a.dilations[d] * (ws.dim(2 + d) - 1) + 1;
    dims.push_back((xs.dim(2 + d) + 2 * a.paddings[d] - extent) / a.strides[d] + 1);
  }
  return Shape(dims);
}

}  // namespace

Array Conv2D(const Array& x, const Array& w, const ConvAttrs& a) {
  const Shape os = ConvOutShape(x.shape, w.shape, a);
  Array out{os, std::vector<double>(Count(os), 0.0)};
  ForEachConvTerm(x.shape, w.shape, os, a, [&](int64_t o, int64_t i, int64_t k) {
    out.values[o] += x.values[i] * w.values[k];
  });
  return out;
}

std::pair<Array, Array> Conv2DGrad(const Array& x, const Array& w, const Array& dout,
                                   const ConvAttrs& a) {
  Array dx{x.shape, std::vector<double>(x.values.size(), 0.0)};
  Array dw{w.shape, std::vector<double>(w.values.size(), 0.0)};
  ForEachConvTerm(x.shape, w.shape, dout.shape, a, [&](int64_t o, int64_t i, int64_t k) {
    dx.values[i] += dout.values[o] * w.values[k];
    dw.values[k] += dout.values[o] * x.values[i];
  });
  return {dx, dw};
}

namespace {

// Calls fn(out_index, window indices, divisor) for every pooling window.
template <typename Fn>
Shape ForEachPoolWindow(const Shape& xs, const PoolAttrs& a, Fn&& fn) {
  const std::array<int64_t, 2> k =
      a.global ? std::array<int64_t, 2>{xs.dim(2), xs.dim(3)} : a.ksize;
  const std::array<int64_t, 2> p = a.global ? std::array<int64_t, 2>{0, 0} : a.paddings;
  const std::array<int64_t, 2> s = a.global ? std::array<int64_t, 2>{1, 1} : a.strides;
  const Shape os({xs.dim(0), xs.dim(1), (xs.dim(2) + 2 * p[0] - k[0]) / s[0] + 1,
                  (xs.dim(3) + 2 * p[1] - k[1]) / s[1] + 1});
  for (int64_t n = 0; n < os.dim(0); ++n) {
    for (int64_t c = 0; c < os.dim(1); ++c) {
      for (int64_t oy = 0; oy < os.dim(2); ++oy) {
        for (int64_t ox = 0; ox < os.dim(3); ++ox) {
          std::vector<int64_t> window;
          for (int64_t i = 0; i < k[0]; ++i) {
            for (int64_t j = 0; j < k[1]; ++j) {
              const int64_t y = oy * s[0] - p[0] + i, x = ox * s[1] - p[1] + j;
              if (y >= 0 && y < xs.dim(2) && x >= 0 && x < xs.dim(3)) {
                window.push_back(Nchw{xs}(n, c, y, x));
              }
            }
          }
          const double divisor = a.exclusive ? window.size() : k[0] * k[1];
          fn(Nchw{os}(n, c, oy, ox), window, divisor);
        }
      }
    }
  }
  return os;
}

}  // namespace

Array Pool2D(const Array& x, const PoolAttrs& a) {
  std::vector<std::pair<int64_t, double>> values;
  const Shape os = ForEachPoolWindow(
      x.shape, a, [&](int64_t o, const std::vector<int64_t>& window, double divisor) {
        double r = a.max ? -std::numeric_limits<double>::infinity() : 0.0;
        for (int64_t i : window) r = a.max ? std::max(r, x.values[i]) : r + x.values[i];
        values.emplace_back(o, a.max ? r : r / divisor);
      });
  Array out{os, std::vector<double>(Count(os))};
  for (const auto& [o, v] : values) out.values[o] = v;
  return out;
}

Array Pool2DGrad(const Array& x, const Array& dout, const PoolAttrs& a) {
  Array dx{x.shape, std::vector<double>(x.values.size(), 0.0)};
  ForEachPoolWindow(x.shape, a, [&](int64_t o, const std::vector<int64_t>& window, double divisor) {
    if (a.max) {
      int64_t best = window[0];
      for (int64_t i : window) {
        if (x.values[i] > x.values[best]) best = i;
      }
      dx.values[best] += dout.values[o];
    } else {
      for (int64_t i : window) dx.values[i] += dout.values[o] / divisor;
    }
  });
  return dx;
}

namespace {

// rows x cols of x normalized from dim `axis`.
std::pair<int64_t, int64_t> RowsCols(const Shape& s, int axis) {
  int64_t rows = 1, cols = 1;
  for (int d = 0; d < s.rank(); ++d) (d < axis ? rows : cols) *= s.dim(d);
  return {rows, cols};
}

}  // namespace

LayerNormResult LayerNorm(const Array& x, const Array& scale, const Array& bias, int axis,
                          double epsilon) {
  const auto [rows, cols] = RowsCols(x.shape, axis);
  LayerNormResult r{{x.shape, {}}, {Shape({rows}), {}}, {Shape({rows}), {}}};
  for (int64_t i = 0; i < rows; ++i) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < cols; ++j) mean += x.values[i * cols + j];
    mean /= cols;
    for (int64_t j = 0; j < cols; ++j) {
      var += (x.values[i * cols + j] - mean) * (x.values[i * cols + j] - mean);
    }
    var /= cols;
    for (int64_t j = 0; j < cols; ++j) {
      double y = (x.values[i * cols + j] - mean) / std::sqrt(var + epsilon);
      if (!scale.values.empty()) y *= scale.values[j];
      if (!bias.values.empty()) y += bias.values[j];
      r.y.values.push_back(y);
    }
    r.mean.values.push_back(mean);
    r.var.values.push_back(var);
  }
  return r;
}

LayerNormGrads LayerNormGrad(const Array& x, const Array& scale, const Array& dy, int axis,
                             double epsilon) {
  const auto [rows, cols] = RowsCols(x.shape, axis);
  const LayerNormResult fwd = LayerNorm(x, Array{}, Array{}, axis, epsilon);  // y = xhat
  LayerNormGrads g{{x.shape, std::vector<double>(x.values.size())},
                   {Shape({cols}), std::vector<double>(cols, 0.0)},
                   {Shape({cols}), std::vector<double>(cols, 0.0)}};
  for (int64_t i = 0; i < rows; ++i) {
    const double inv = 1 / std::sqrt(fwd.var.values[i] + epsilon);
    // dL/dxhat, then the chain rule through the mean and variance.
    std::vector<double> dxhat(cols);
    double mean_dxhat = 0, mean_dxhat_xhat = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t k = i * cols + j;
      dxhat[j] = dy.values[k] * (scale.values.empty() ? 1.0 : scale.values[j]);
      mean_dxhat += dxhat[j] / cols;
      mean_dxhat_xhat += dxhat[j] * fwd.y.values[k] / cols;
      g.dscale.values[j] += dy.values[k] * fwd.y.values[k];
      g.dbias.values[j] += dy.values[k];
    }
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t k = i * cols + j;
      g.dx.values[k] = inv * (dxhat[j] - mean_dxhat - fwd.y.values[k] * mean_dxhat_xhat);
    }
  }
  return g;
}

namespace {

// One (batch, head) of self_attention: Q, K, V as [seq, head_dim] matrices
// and the probabilities P [seq, seq] (0 above the diagonal when causal).
struct Head {
  int64_t seq = 0, dim = 0;
  std::vector<double> q, k, v, p;
  double At(const std::vector<double>& m, int64_t r, int64_t c) const { return m[r * dim + c]; }
};

Head GetHead(const Array& qkv, int64_t b, int64_t h, int64_t heads, bool causal, double scale) {
  Head hd;
  hd.seq = qkv.shape.dim(1);
  const int64_t width = qkv.shape.dim(2) / 3;
  hd.dim = width / heads;
  for (int part = 0; part < 3; ++part) {
    std::vector<double>& m = part == 0 ? hd.q : part == 1 ? hd.k : hd.v;
    for (int64_t t = 0; t < hd.seq; ++t) {
      for (int64_t c = 0; c < hd.dim; ++c) {
        m.push_back(qkv.values[(b * hd.seq + t) * 3 * width + part * width + h * hd.dim + c]);
      }
    }
  }
  hd.p.assign(hd.seq * hd.seq, 0.0);
  for (int64_t i = 0; i < hd.seq; ++i) {
    const int64_t keys = causal ? i + 1 : hd.seq;
    double max = -INFINITY, sum = 0;
    std::vector<double> s(keys);
    for (int64_t j = 0; j < keys; ++j) {
      for (int64_t c = 0; c < hd.dim; ++c) s[j] += hd.At(hd.q, i, c) * hd.At(hd.k, j, c);
      s[j] *= scale;
      max = std::max(max, s[j]);
    }
    for (int64_t j = 0; j < keys; ++j) sum += std::exp(s[j] - max);
    for (int64_t j = 0; j < keys; ++j) hd.p[i * hd.seq + j] = std::exp(s[j] - max) / sum;
  }
  return hd;
}

// The log of row i's sum of exp(scores), from P and the row's scores.
double RowLse(const Head& hd, int64_t i, double scale) {
  // p_j = exp(s_j) / sum, so log(sum) = s_0 - log(p_0) for key 0 (always seen).
  double s0 = 0;
  for (int64_t c = 0; c < hd.dim; ++c) s0 += hd.At(hd.q, i, c) * hd.At(hd.k, 0, c);
  return s0 * scale - std::log(hd.p[i * hd.seq]);
}

}  // namespace

AttentionResult SelfAttention(const Array& qkv, int64_t heads, bool causal, double scale) {
  const int64_t batch = qkv.shape.dim(0), seq = qkv.shape.dim(1), width = qkv.shape.dim(2) / 3;
  AttentionResult r{{Shape({batch, seq, width}), std::vector<double>(batch * seq * width)},
                    {Shape({batch, heads, seq}), std::vector<double>(batch * heads * seq)}};
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      const Head hd = GetHead(qkv, b, h, heads, causal, scale);
      for (int64_t i = 0; i < seq; ++i) {
        for (int64_t c = 0; c < hd.dim; ++c) {
          double o = 0;
          for (int64_t j = 0; j < seq; ++j) o += hd.p[i * seq + j] * hd.At(hd.v, j, c);
          r.out.values[(b * seq + i) * width + h * hd.dim + c] = o;
        }
        r.lse.values[(b * heads + h) * seq + i] = RowLse(hd, i, scale);
      }
    }
  }
  return r;
}

Array SelfAttentionGrad(const Array& qkv, const Array& dout, int64_t heads, bool causal,
                        double scale) {
  const int64_t batch = qkv.shape.dim(0), seq = qkv.shape.dim(1), width = qkv.shape.dim(2) / 3;
  Array dqkv{qkv.shape, std::vector<double>(qkv.values.size())};
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      const Head hd = GetHead(qkv, b, h, heads, causal, scale);
      auto grad = [&](int part, int64_t t, int64_t c) -> double& {
        return dqkv.values[(b * seq + t) * 3 * width + part * width + h * hd.dim + c];
      };
      auto d_out = [&](int64_t t, int64_t c) {
        return dout.values[(b * seq + t) * width + h * hd.dim + c];
      };
      for (int64_t i = 0; i < seq; ++i) {
        // dP_ij = dO_i . v_j, then the softmax Jacobian row by row.
        std::vector<double> dp(seq, 0.0);
        double weighted = 0;
        for (int64_t j = 0; j < seq; ++j) {
          for (int64_t c = 0; c < hd.dim; ++c) dp[j] += d_out(i, c) * hd.At(hd.v, j, c);
          weighted += hd.p[i * seq + j] * dp[j];
        }
        for (int64_t j = 0; j < seq; ++j) {
          const double p = hd.p[i * seq + j];
          const double ds = p * (dp[j] - weighted) * scale;
          for (int64_t c = 0; c < hd.dim; ++c) {
            grad(2, j, c) += p * d_out(i, c);
            grad(0, i, c) += ds * hd.At(hd.k, j, c);
            grad(1, j, c) += ds * hd.At(hd.q, i, c);
          }
        }
      }
    }
  }
  return dqkv;
}

}  // namespace tandem::reference
