// Row loops over [rows, width] tables, shared by the embedding and sparse
// update kernels (lookup_table, lookup_table_grad, sgd; momentum and adam
// share their rows by rows_internal::RowBuckets):
//
//   int64_t bad = FirstOutOfRange(ids, n, rows);           // -1: all valid
//   CopyRows<float, Policy>(n, width, [&](int64_t i) { return table + ids[i] * width; }, out);
//   ScatterAddRows<float, Policy>(ids, n, grads, width, -lr, table, rows);
//
// Pointers are to host-addressable memory; callers validate row indices
// first. Functions return when the work is done. Results do not depend on
// the policy: every output element is computed by one task, in an order
// fixed by the inputs.
#ifndef TANDEM_BACKENDS_COMMON_ROWS_H_
#define TANDEM_BACKENDS_COMMON_ROWS_H_

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "backends/common/elementwise.h"
#include "framework/tensor/selected_rows.h"  // FirstOutOfRange

namespace tandem {
namespace rows_internal {

// dst[j] += scale * v[j] for j < width. Arguments by value: a store to dst
// cannot then force `scale` or `width` to be reloaded.
template <typename T>
inline void AddScaledRow(const T* v, T scale, int64_t width, T* dst) {
  for (int64_t j = 0; j < width; ++j) dst[j] += scale * v[j];
}

// The column at fraction x / of (0 <= x <= of, of > 0) of a row of `width`
// elements starting at `row`, rounded down to a 64-byte cache line boundary
// of the row's memory: 0 for x == 0, width for x == of. Columns between
// consecutive boundaries never share a cache line with other such ranges.
template <typename T>
int64_t ColumnBoundary(const T* row, int64_t width, int64_t x, int64_t of) {
  if (x <= 0) return 0;
  if (x >= of) return width;
  constexpr int64_t kLine = std::max<int64_t>(1, 64 / sizeof(T));
  const int64_t misalign =
      static_cast<int64_t>(reinterpret_cast<uintptr_t>(row) % 64) / static_cast<int64_t>(sizeof(T));
  const int64_t first_aligned = std::min(width, (kLine - misalign) % kLine);
  const int64_t lines = (width - first_aligned + kLine - 1) / kLine;
  const int64_t line = static_cast<int64_t>(static_cast<__int128>(lines) * x / of);
  return std::min(width, first_aligned + line * kLine);
}

// How many rows ahead the row loops ask the memory system for: enough
// independent misses in flight to hide the latency of random rows, few
// enough that the prefetched lines are still cached when used.
inline constexpr int64_t kPrefetchRowsAhead = 16;

// Hints that the first bytes of the row at `p` (up to 1 KiB; hardware
// prefetchers follow longer rows) will soon be read, or with kWrite
// written. No effect on results.
template <bool kWrite = false>
inline void PrefetchRow(const void* p, int64_t bytes) {
  const char* c = static_cast<const char*>(p);
  const int64_t end = std::min<int64_t>(bytes, 1024);
  for (int64_t b = 0; b < end; b += 64) __builtin_prefetch(c + b, kWrite ? 1 : 0);
}

}  // namespace rows_internal

// The positions of `n` row indices grouped by row: group k is
// order[starts[k] .. starts[k + 1]), positions ascending, all with the same
// row; groups in ascending row order.
struct RowGroups {
  std::vector<int64_t> order;
  std::vector<int64_t> starts;  // size groups + 1
  int64_t size() const { return static_cast<int64_t>(starts.size()) - 1; }
};
// GroupPositions for the ascending `positions` (indices into `rows`) only;
// GroupRows for positions 0..n-1.
inline RowGroups GroupPositions(const int64_t* rows, std::vector<int64_t> positions) {
  RowGroups g;
  g.order = std::move(positions);
  std::stable_sort(g.order.begin(), g.order.end(),
                   [rows](int64_t a, int64_t b) { return rows[a] < rows[b]; });
  const int64_t n = static_cast<int64_t>(g.order.size());
  for (int64_t i = 0; i < n; ++i) {
    if (i == 0 || rows[g.order[i]] != rows[g.order[i - 1]]) g.starts.push_back(i);
  }
  g.starts.push_back(n);
  return g;
}

inline RowGroups GroupRows(const int64_t* rows, int64_t n) {
  std::vector<int64_t> positions(n);
  std::iota(positions.begin(), positions.end(), int64_t{0});
  return GroupPositions(rows, std::move(positions));
}

// Row i of `out` ([n, width]) = the `width` elements at source(i), or zeros
// where source(i) is nullptr. Parallel over i; each task asks for the
// source rows kPrefetchRowsAhead ahead of the one it copies.
template <typename T, typename Policy, typename Source>
void CopyRows(int64_t n, int64_t width, Source&& source, T* out) {
  if (width == 0) return;
  const int64_t row_bytes = width * static_cast<int64_t>(sizeof(T));
  Policy::ParallelFor(n, std::max<int64_t>(1, kMinElementsPerTask / width),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t i = begin; i < end; ++i) {
                          if (i + rows_internal::kPrefetchRowsAhead < end) {
                            const T* ahead = source(i + rows_internal::kPrefetchRowsAhead);
                            if (ahead != nullptr) rows_internal::PrefetchRow(ahead, row_bytes);
                          }
                          const T* src = source(i);
                          T* dst = out + i * width;
                          if (src == nullptr) {
                            std::fill(dst, dst + width, T(0));
                          } else {
                            std::copy(src, src + width, dst);
                          }
                        }
                      });
}

namespace rows_internal {

// The updates of `n` row indices `rows` (each in [0, height)) counted by
// bucket, a range of 2^shift table rows (at most kMaxBuckets buckets, and
// about one per 8 updates), in
// each chunk of positions, for tasks that own disjoint rows. Build counts
// in parallel over the chunks (one parallel loop, run on the calling
// thread below 2 * kMinChunkPositions updates); the running totals place
// each bucket in the update order, so a task taking updates [begin, end)
// of that order gets an exact share of the buckets, balanced to within one
// bucket (ForEachShare), and Positions lists a task's positions in
// ascending order (value rows are then read in order) without branches,
// scanning only the chunks that hold some. Keeps `rows`, which must
// outlive it. Immutable once built; concurrent reads are safe.
class RowBuckets {
 public:
  static constexpr int64_t kMaxBuckets = 512;
  static constexpr int64_t kMaxChunks = 16;
  static constexpr int64_t kMinChunkPositions = 4096;

  template <typename Policy>
  static RowBuckets Build(const int64_t* rows, int64_t n, int64_t height) {
    RowBuckets b;
    b.rows_ = rows;
    b.n_ = n;
    b.height_ = height;
    // About 8 updates per bucket, for few updates (fewer buckets to total).
    const int64_t max_buckets = std::clamp<int64_t>(n / 8, 1, kMaxBuckets);
    while (((height - 1) >> b.shift_) >= max_buckets) ++b.shift_;
    b.buckets_ = ((height - 1) >> b.shift_) + 1;
    b.chunks_ = std::clamp<int64_t>(n / kMinChunkPositions, 1, kMaxChunks);
    b.starts_.assign(b.chunks_ * (b.buckets_ + 1), 0);
    Policy::ParallelFor(b.chunks_, 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        int64_t* starts = b.starts_.data() + c * (b.buckets_ + 1);
        const int64_t hi = b.ChunkBegin(c + 1);
        for (int64_t i = b.ChunkBegin(c); i < hi; ++i) ++starts[(rows[i] >> b.shift_) + 1];
        for (int64_t k = 0; k < b.buckets_; ++k) starts[k + 1] += starts[k];
      }
    });
    b.cum_.assign(b.buckets_ + 1, 0);
    for (int64_t c = 0; c < b.chunks_; ++c) {
      const int64_t* starts = b.starts_.data() + c * (b.buckets_ + 1);
      for (int64_t k = 1; k <= b.buckets_; ++k) b.cum_[k] += starts[k];
    }
    return b;
  }

  // Replaces *out with the positions of the updates to buckets [b0, b1),
  // ascending.
  void Positions(int64_t b0, int64_t b1, std::vector<int64_t>* out) const {
    const int64_t lo = b0 << shift_;
    const uint64_t span = static_cast<uint64_t>(std::min(height_, b1 << shift_) - lo);
    out->resize(cum_[b1] - cum_[b0] + 1);  // + 1: the compaction below writes one past
    int64_t* w = out->data();
    int64_t k = 0;
    for (int64_t c = 0; c < chunks_; ++c) {
      const int64_t* starts = starts_.data() + c * (buckets_ + 1);
      if (starts[b1] == starts[b0]) continue;
      const int64_t hi = ChunkBegin(c + 1);
      for (int64_t i = ChunkBegin(c); i < hi; ++i) {  // without branches: the test is random
        w[k] = i;
        k += static_cast<int64_t>(static_cast<uint64_t>(rows_[i] - lo) < span);
      }
    }
    out->resize(k);
  }

  // The buckets of the task owning updates [begin, end) of the update order
  // (bucket by bucket; tasks whose ranges partition [0, n) own every update
  // once). A bucket of fewer than `split_load` updates belongs whole to the
  // task whose range holds its first update: whole(b0, b1) per run of such
  // buckets. A larger one is shared: each task whose range meets it gets
  // part(b, x0, x1, load) for its updates [x0, x1) of the bucket's `load`,
  // to apply to its columns of every row (ColumnBoundary at x0 and x1), so
  // that a hot row is split by columns. Calls come in bucket order.
  template <typename Whole, typename Part>
  void ForEachShare(int64_t begin, int64_t end, int64_t split_load, Whole&& whole,
                    Part&& part) const {
    // The bucket holding update `begin`: the last one starting at or before it.
    int64_t b = std::upper_bound(cum_.begin(), cum_.end(), begin) - cum_.begin() - 1;
    int64_t run = -1;  // first bucket of the current run of whole buckets
    for (; b < buckets_ && cum_[b] < end; ++b) {
      const int64_t load = cum_[b + 1] - cum_[b];
      if (load == 0) continue;
      if (load < split_load) {
        if (cum_[b] >= begin && run < 0) run = b;
        continue;
      }
      if (run >= 0) whole(run, b);
      run = -1;
      part(b, std::max(begin, cum_[b]) - cum_[b], std::min(end, cum_[b + 1]) - cum_[b], load);
    }
    if (run >= 0) whole(run, b);
  }

 private:
  int64_t ChunkBegin(int64_t c) const {
    return static_cast<int64_t>(static_cast<__int128>(n_) * c / chunks_);
  }

  const int64_t* rows_ = nullptr;  // not owned
  int64_t n_ = 0, height_ = 0;
  int shift_ = 0;
  int64_t buckets_ = 0, chunks_ = 0;
  // [chunks_, buckets_ + 1]: per chunk, the updates to the buckets before each.
  std::vector<int64_t> starts_;
  std::vector<int64_t> cum_;  // [buckets_ + 1]: the same over all chunks
};

}  // namespace rows_internal

// table[rows[i], :] += scale * values[i, :] for i < n, in order of i, where
// `table` is [height, width] and every row index is in [0, height);
// duplicate rows accumulate. Race-free, balanced and fast whatever the
// duplicates: the updates are counted by ranges of rows
// (rows_internal::RowBuckets), and each task of the policy takes an equal
// share of them, as whole buckets or, for a bucket of at least twice the
// fewest updates a task gets (a hot row, e.g. every id equal), a share of
// its columns split on cache lines. Each element is updated by one task, in
// order of i, so the result equals the serial one whatever the tasks. A
// task lists the positions of its buckets, then applies them in order,
// asking for the table and value rows kPrefetchRowsAhead positions ahead
// (random rows of a large table are memory-latency bound).
template <typename T, typename Policy>
void ScatterAddRows(const int64_t* rows, int64_t n, const T* values, int64_t width, T scale,
                    T* table, int64_t height) {
  if (n == 0 || width == 0) return;
  const auto buckets = rows_internal::RowBuckets::Build<Policy>(rows, n, height);
  // Updates per task at least: kMinElementsPerTask elements.
  const int64_t grain = std::max<int64_t>(1, kMinElementsPerTask / width);
  const int64_t row_bytes = width * static_cast<int64_t>(sizeof(T));
  Policy::ParallelFor(n, grain, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> mine;
    auto whole = [&](int64_t b0, int64_t b1) {
      buckets.Positions(b0, b1, &mine);
      const int64_t count = static_cast<int64_t>(mine.size());
      for (int64_t k = 0; k < count; ++k) {
        if (k + rows_internal::kPrefetchRowsAhead < count) {
          const int64_t ahead = mine[k + rows_internal::kPrefetchRowsAhead];
          rows_internal::PrefetchRow</*kWrite=*/true>(table + rows[ahead] * width, row_bytes);
          rows_internal::PrefetchRow(values + ahead * width, row_bytes);
        }
        const int64_t i = mine[k];
        rows_internal::AddScaledRow(values + i * width, scale, width, table + rows[i] * width);
      }
    };
    // A shared bucket: its rows are few or cached, so no prefetch.
    auto part = [&](int64_t b, int64_t x0, int64_t x1, int64_t load) {
      buckets.Positions(b, b + 1, &mine);
      for (const int64_t i : mine) {
        T* dst = table + rows[i] * width;
        const int64_t lo = rows_internal::ColumnBoundary(dst, width, x0, load);
        const int64_t hi = rows_internal::ColumnBoundary(dst, width, x1, load);
        if (lo < hi) rows_internal::AddScaledRow(values + i * width + lo, scale, hi - lo, dst + lo);
      }
    };
    buckets.ForEachShare(begin, end, 2 * grain, whole, part);
  });
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_ROWS_H_
