// Loops of the self_attention kernels (ops/nn/attention_op.cc) for memory
// the host can address: QKV [batch, seq, 3 * width] with the query, key and
// value blocks side by side, `heads` heads of head_dim columns in each.
//
//   AttentionLayout l{dims.batch, dims.seq, dims.heads, dims.head_dim};
//   SelfAttention<float, Policy>(qkv, l, /*causal=*/true, scale, out, lse);
//   SelfAttentionGrad<float, Policy>(qkv, out, lse, dout, l, true, scale, dqkv);
//
// T is the compute type (float or double; 16-bit kernels hand float32 views,
// low_precision.h). Dot products, softmax sums and gradient sums accumulate
// in AccumulatorT<T> (double for float) in a fixed order (a dot product in
// eight interleaved lanes, attention_internal::Dot), so results do not
// depend on the policy's threads. Functions return when the work is done and
// are thread-safe for disjoint outputs. Scratch: one row of seq scores per
// task in the forward; head_dim x seq accumulators per (batch, head) in the
// gradient; no [seq, seq] matrix.
#ifndef TANDEM_BACKENDS_COMMON_ATTENTION_H_
#define TANDEM_BACKENDS_COMMON_ATTENTION_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "backends/common/elementwise.h"

namespace tandem {

// Where head h's column c of token t of batch row b lives.
struct AttentionLayout {
  int64_t batch = 0, seq = 0, heads = 1, head_dim = 0;

  int64_t width() const { return heads * head_dim; }
  // Offsets into QKV of the query, key and value (part 0, 1, 2) of (b, t, h).
  int64_t Packed(int64_t b, int64_t t, int part, int64_t h) const {
    return ((b * seq + t) * 3 + part) * width() + h * head_dim;
  }
  // Offset into Out (and Out@GRAD) of (b, t, h).
  int64_t Unpacked(int64_t b, int64_t t, int64_t h) const {
    return (b * seq + t) * width() + h * head_dim;
  }
  // Offset into Lse of (b, h, t).
  int64_t Stat(int64_t b, int64_t h, int64_t t) const { return (b * heads + h) * seq + t; }
  // Keys query row i sees: 0..i with a causal mask, all otherwise.
  int64_t Keys(int64_t i, bool causal) const { return causal ? i + 1 : seq; }
};

namespace attention_internal {

// sum a[c] b[c] in Acc: lane k (k = c % kDotLanes) adds its products in
// order, then the lanes are added in order. A fixed order, so the same bits
// on every run and thread; the lanes are independent chains that the
// compiler turns into vector instructions (one chain of dependent adds
// made every dot product wait on the adder's latency).
inline constexpr int kDotLanes = 8;

template <typename Acc, typename T>
Acc Dot(const T* a, const T* b, int64_t n) {
  Acc lanes[kDotLanes] = {};
  int64_t c = 0;
  for (; c + kDotLanes <= n; c += kDotLanes) {
    for (int k = 0; k < kDotLanes; ++k) lanes[k] += Acc(a[c + k]) * Acc(b[c + k]);
  }
  for (int k = 0; c < n; ++c, ++k) lanes[k] += Acc(a[c]) * Acc(b[c]);
  Acc sum = 0;
  for (int k = 0; k < kDotLanes; ++k) sum += lanes[k];
  return sum;
}

}  // namespace attention_internal

// Out and Lse of self_attention (see the schema): per query row, scores
// scale * q.k, their maximum m, p = exp(score - m), Out = sum p v / sum p,
// Lse = m + log(sum p).
template <typename T, typename Policy>
void SelfAttention(const T* qkv, const AttentionLayout& l, bool causal, double scale, T* out,
                   T* lse) {
  using Acc = AccumulatorT<T>;
  const int64_t rows = l.batch * l.heads * l.seq;
  const int64_t per_row = std::max<int64_t>(1, l.seq * l.head_dim);
  Policy::ParallelFor(
      rows, std::max<int64_t>(1, kMinElementsPerTask / per_row), [&](int64_t begin, int64_t end) {
        std::vector<Acc> p(l.seq), o(l.head_dim);
        for (int64_t r = begin; r < end; ++r) {
          const int64_t b = r / (l.heads * l.seq), h = r / l.seq % l.heads, i = r % l.seq;
          const T* q = qkv + l.Packed(b, i, 0, h);
          const int64_t n = l.Keys(i, causal);
          Acc m = -std::numeric_limits<Acc>::infinity();
          for (int64_t j = 0; j < n; ++j) {
            p[j] = Acc(scale) *
                   attention_internal::Dot<Acc>(q, qkv + l.Packed(b, j, 1, h), l.head_dim);
            m = std::max(m, p[j]);
          }
          Acc sum = 0;
          for (int64_t j = 0; j < n; ++j) sum += p[j] = std::exp(p[j] - m);
          std::fill(o.begin(), o.end(), Acc(0));
          for (int64_t j = 0; j < n; ++j) {
            const T* v = qkv + l.Packed(b, j, 2, h);
            for (int64_t c = 0; c < l.head_dim; ++c) o[c] += p[j] * Acc(v[c]);
          }
          T* out_row = out + l.Unpacked(b, i, h);
          for (int64_t c = 0; c < l.head_dim; ++c) out_row[c] = static_cast<T>(o[c] / sum);
          lse[l.Stat(b, h, i)] = static_cast<T>(m + std::log(sum));
        }
      });
}

// QKV@GRAD of self_attention from Out@GRAD (`dout`), the forward's Out and
// Lse (see the gradient's schema). Every element of dqkv is written.
template <typename T, typename Policy>
void SelfAttentionGrad(const T* qkv, const T* out, const T* lse, const T* dout,
                       const AttentionLayout& l, bool causal, double scale, T* dqkv) {
  using Acc = AccumulatorT<T>;
  const int64_t per_head = std::max<int64_t>(1, l.seq * l.seq * l.head_dim);
  Policy::ParallelFor(
      l.batch * l.heads, std::max<int64_t>(1, kMinElementsPerTask / per_head),
      [&](int64_t begin, int64_t end) {
        std::vector<Acc> dk(l.seq * l.head_dim), dv(l.seq * l.head_dim), dq(l.head_dim);
        for (int64_t bh = begin; bh < end; ++bh) {
          const int64_t b = bh / l.heads, h = bh % l.heads;
          std::fill(dk.begin(), dk.end(), Acc(0));
          std::fill(dv.begin(), dv.end(), Acc(0));
          for (int64_t i = 0; i < l.seq; ++i) {
            const T* q = qkv + l.Packed(b, i, 0, h);
            const T* dout_row = dout + l.Unpacked(b, i, h);
            const Acc delta =
                attention_internal::Dot<Acc>(dout_row, out + l.Unpacked(b, i, h), l.head_dim);
            const Acc row_lse = lse[l.Stat(b, h, i)];
            std::fill(dq.begin(), dq.end(), Acc(0));
            for (int64_t j = 0; j < l.Keys(i, causal); ++j) {
              const T* k = qkv + l.Packed(b, j, 1, h);
              const T* v = qkv + l.Packed(b, j, 2, h);
              const Acc p =
                  std::exp(Acc(scale) * attention_internal::Dot<Acc>(q, k, l.head_dim) - row_lse);
              const Acc ds =
                  p * (attention_internal::Dot<Acc>(dout_row, v, l.head_dim) - delta) * Acc(scale);
              for (int64_t c = 0; c < l.head_dim; ++c) {
                dv[j * l.head_dim + c] += p * Acc(dout_row[c]);
                dq[c] += ds * Acc(k[c]);
                dk[j * l.head_dim + c] += ds * Acc(q[c]);
              }
            }
            T* dq_row = dqkv + l.Packed(b, i, 0, h);
            for (int64_t c = 0; c < l.head_dim; ++c) dq_row[c] = static_cast<T>(dq[c]);
          }
          for (int64_t j = 0; j < l.seq; ++j) {
            T* dk_row = dqkv + l.Packed(b, j, 1, h);
            T* dv_row = dqkv + l.Packed(b, j, 2, h);
            for (int64_t c = 0; c < l.head_dim; ++c) {
              dk_row[c] = static_cast<T>(dk[j * l.head_dim + c]);
              dv_row[c] = static_cast<T>(dv[j * l.head_dim + c]);
            }
          }
        }
      });
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_ATTENTION_H_
