// softmax, softmax_with_cross_entropy and accuracy kernels. See
// softmax_launchers.h.
#include "backends/cuda/device_check.h"
#include "backends/cuda/device_lines.h"
#include "backends/cuda/device_reduce.h"
#include "backends/cuda/softmax_launchers.h"

namespace tandem {
namespace cuda {
namespace {

using device::Blocks;
using device::kThreads;
using device::LaunchLines;
using device::LineStart;
using device::MaxOp;

// Writes exp(x - max) (rounded to T, as the host stores it) over the line
// and returns {max, sum of the unrounded exps}, both group-wide.
template <typename T, typename G>
__device__ __forceinline__ void ExpLine(const T* x, T* out, int64_t start, int64_t n, int64_t inner,
                                        const G& g, double* max, double* sum) {
  double m = MaxOp::Identity();
  for (int64_t k = g.first; k < n; k += g.step) {
    m = fmax(m, static_cast<double>(x[start + k * inner]));
  }
  m = g.Max(m);
  double s = 0;
  for (int64_t k = g.first; k < n; k += g.step) {
    const int64_t at = start + k * inner;
    const double e = exp(static_cast<double>(x[at]) - m);
    out[at] = static_cast<T>(e);
    s += e;
  }
  *max = m;
  *sum = g.Sum(s);
}

// out /= sum over the line (in double, then rounded to T).
template <typename T, typename G>
__device__ __forceinline__ void DivideLine(T* out, int64_t start, int64_t n, int64_t inner,
                                           const G& g, double sum) {
  for (int64_t k = g.first; k < n; k += g.step) {
    T& o = out[start + k * inner];
    o = static_cast<T>(static_cast<double>(o) / sum);
  }
}

template <typename T>
struct SoftmaxLine {
  const T* x;
  T* out;
  int64_t n, inner;

  template <typename G>
  __device__ __forceinline__ void operator()(int64_t line, const G& g) const {
    const int64_t start = LineStart(line, n, inner);
    double max, sum;
    ExpLine(x, out, start, n, inner, g, &max, &sum);
    DivideLine(out, start, n, inner, g, sum);
  }
};

template <typename T>
struct SoftmaxGradLine {
  const T* out;
  const T* dout;
  T* dx;
  int64_t n, inner;

  template <typename G>
  __device__ __forceinline__ void operator()(int64_t line, const G& g) const {
    const int64_t start = LineStart(line, n, inner);
    double dot = 0;
    for (int64_t k = g.first; k < n; k += g.step) {
      const int64_t at = start + k * inner;
      dot += static_cast<double>(dout[at]) * static_cast<double>(out[at]);
    }
    dot = g.Sum(dot);
    for (int64_t k = g.first; k < n; k += g.step) {
      const int64_t at = start + k * inner;
      dx[at] = static_cast<T>(static_cast<double>(out[at]) * (static_cast<double>(dout[at]) - dot));
    }
  }
};

__device__ __forceinline__ bool Counts(int64_t label, int64_t classes, int64_t ignore_index) {
  return label != ignore_index && label >= 0 && label < classes;
}

template <typename T>
struct CrossEntropyLine {
  const T* logits;
  const int64_t* labels;
  int64_t classes, ignore_index;
  T* softmax;
  T* loss;

  template <typename G>
  __device__ __forceinline__ void operator()(int64_t row, const G& g) const {
    const int64_t start = row * classes;
    double max, sum;
    ExpLine(logits, softmax, start, classes, 1, g, &max, &sum);
    DivideLine(softmax, start, classes, 1, g, sum);
    if (g.first != 0) return;
    const int64_t label = labels[row];
    loss[row] = Counts(label, classes, ignore_index)
                    ? static_cast<T>(log(sum) + max - static_cast<double>(logits[start + label]))
                    : T(0);
  }
};

template <typename T>
struct AccuracyLine {
  const T* scores;
  const int64_t* labels;
  int64_t classes, k;
  unsigned long long* correct;  // NOLINT(runtime/int): atomicAdd's type

  template <typename G>
  __device__ __forceinline__ void operator()(int64_t row, const G& g) const {
    const int64_t label = labels[row];
    if (label < 0 || label >= classes) return;  // the whole group returns
    const T* s = scores + row * classes;
    const T at_label = s[label];
    double above = 0;
    for (int64_t j = g.first; j < classes; j += g.step) {
      above += s[j] > at_label || (s[j] == at_label && j < label) ? 1.0 : 0.0;
    }
    above = g.Sum(above);  // exact: counts below 2^53
    if (g.first == 0 && above < static_cast<double>(k)) atomicAdd(correct, 1ull);
  }
};

__global__ void CheckLabelsKernel(const int64_t* labels, int64_t rows, int64_t classes,
                                  bool has_ignore, int64_t ignore_index, CheckSlot check) {
  TANDEM_GRID_LOOP(r, rows) {
    const int64_t label = labels[r];
    if ((label < 0 || label >= classes) && !(has_ignore && label == ignore_index)) {
      device::NoteBadInput(check, r);
    }
  }
  device::PublishBadInput(check, labels);
}

template <typename T>
__global__ void CrossEntropyGradKernel(const T* softmax, const int64_t* labels, const T* dloss,
                                       int64_t classes, int64_t ignore_index, T* dlogits,
                                       int64_t total) {
  TANDEM_GRID_LOOP(i, total) {
    const int64_t row = i / classes, k = i - row * classes;
    const int64_t label = labels[row];
    dlogits[i] = Counts(label, classes, ignore_index)
                     ? (softmax[i] - (k == label ? T(1) : T(0))) * dloss[row]
                     : T(0);
  }
}

__global__ void AccuracyFinalKernel(const int64_t* correct, int64_t rows, int64_t* total,
                                    float* accuracy) {
  total[0] = rows;
  accuracy[0] =
      rows == 0 ? 0.0f
                : static_cast<float>(static_cast<double>(correct[0]) / static_cast<double>(rows));
}

}  // namespace

template <typename T>
cudaError_t LaunchSoftmax(const T* x, T* out, const AxisGeometry& g, cudaStream_t stream) {
  return LaunchLines(SoftmaxLine<T>{x, out, g.n, g.inner}, g.outer * g.inner, g.n, g.inner, stream);
}

template <typename T>
cudaError_t LaunchSoftmaxGrad(const T* out, const T* dout, T* dx, const AxisGeometry& g,
                              cudaStream_t stream) {
  return LaunchLines(SoftmaxGradLine<T>{out, dout, dx, g.n, g.inner}, g.outer * g.inner, g.n,
                     g.inner, stream);
}

cudaError_t LaunchCheckLabels(const int64_t* labels, int64_t rows, int64_t classes, bool has_ignore,
                              int64_t ignore_index, const CheckSlot& check, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  CheckLabelsKernel<<<Blocks(rows), kThreads, 0, stream>>>(labels, rows, classes, has_ignore,
                                                           ignore_index, check);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchSoftmaxCrossEntropy(const T* logits, const int64_t* labels, int64_t rows,
                                      int64_t classes, int64_t ignore_index, T* softmax, T* loss,
                                      cudaStream_t stream) {
  return LaunchLines(CrossEntropyLine<T>{logits, labels, classes, ignore_index, softmax, loss},
                     rows, classes, 1, stream);
}

template <typename T>
cudaError_t LaunchSoftmaxCrossEntropyGrad(const T* softmax, const int64_t* labels, const T* dloss,
                                          int64_t rows, int64_t classes, int64_t ignore_index,
                                          T* dlogits, cudaStream_t stream) {
  const int64_t total = rows * classes;
  if (total == 0) return cudaSuccess;
  CrossEntropyGradKernel<T><<<Blocks(total), kThreads, 0, stream>>>(softmax, labels, dloss, classes,
                                                                    ignore_index, dlogits, total);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchAccuracy(const T* scores, const int64_t* labels, int64_t rows, int64_t classes,
                           int64_t k, int64_t* correct, int64_t* total, float* accuracy,
                           cudaStream_t stream) {
  const cudaError_t reset = cudaMemsetAsync(correct, 0, sizeof(int64_t), stream);
  if (reset != cudaSuccess) return reset;
  auto* counter = reinterpret_cast<unsigned long long*>(correct);  // NOLINT(runtime/int)
  const cudaError_t rows_error =
      LaunchLines(AccuracyLine<T>{scores, labels, classes, k, counter}, rows, classes, 1, stream);
  if (rows_error != cudaSuccess) return rows_error;
  AccuracyFinalKernel<<<1, 1, 0, stream>>>(correct, rows, total, accuracy);
  return cudaGetLastError();
}

#define TANDEM_INSTANTIATE(T)                                                                   \
  template cudaError_t LaunchSoftmax<T>(const T*, T*, const AxisGeometry&, cudaStream_t);       \
  template cudaError_t LaunchSoftmaxGrad<T>(const T*, const T*, T*, const AxisGeometry&,        \
                                            cudaStream_t);                                      \
  template cudaError_t LaunchSoftmaxCrossEntropy<T>(const T*, const int64_t*, int64_t, int64_t, \
                                                    int64_t, T*, T*, cudaStream_t);             \
  template cudaError_t LaunchSoftmaxCrossEntropyGrad<T>(                                        \
      const T*, const int64_t*, const T*, int64_t, int64_t, int64_t, T*, cudaStream_t);         \
  template cudaError_t LaunchAccuracy<T>(const T*, const int64_t*, int64_t, int64_t, int64_t,   \
                                         int64_t*, int64_t*, float*, cudaStream_t);
TANDEM_INSTANTIATE(float)
TANDEM_INSTANTIATE(double)
#undef TANDEM_INSTANTIATE

}  // namespace cuda
}  // namespace tandem
