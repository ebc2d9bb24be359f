// Row loops over [rows, width] tables, shared by the embedding and sparse
// update kernels (lookup_table, lookup_table_grad, sgd):
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
#include <tuple>
#include <utility>
#include <vector>

#include "backends/common/elementwise.h"

namespace tandem {
namespace rows_internal {

// dst[j] += scale * v[j] for j < width. Arguments by value: a store to dst
// cannot then force `scale` or `width` to be reloaded.
template <typename T>
inline void AddScaledRow(const T* v, T scale, int64_t width, T* dst) {
  for (int64_t j = 0; j < width; ++j) dst[j] += scale * v[j];
}

// Columns [begin, end) of block `block` of `blocks` of a row of `width`
// elements starting at `row`: interior boundaries fall on 64-byte cache
// line boundaries, so blocks of one row never share a cache line.
template <typename T>
std::pair<int64_t, int64_t> ColumnBlock(const T* row, int64_t width, int64_t block,
                                        int64_t blocks) {
  constexpr int64_t kLine = std::max<int64_t>(1, 64 / sizeof(T));
  const int64_t misalign =
      static_cast<int64_t>(reinterpret_cast<uintptr_t>(row) % 64) / static_cast<int64_t>(sizeof(T));
  const int64_t first_aligned = std::min(width, (kLine - misalign) % kLine);
  const int64_t lines = (width - first_aligned + kLine - 1) / kLine;
  const int64_t step = (lines + blocks - 1) / blocks * kLine;
  auto boundary = [&](int64_t k) {
    return k == 0 ? 0 : k == blocks ? width : std::min(width, first_aligned + k * step);
  };
  return {boundary(block), boundary(block + 1)};
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

// The position of the first of ids[0..n) outside [0, height), or -1.
inline int64_t FirstOutOfRange(const int64_t* ids, int64_t n, int64_t height) {
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= height) return i;
  }
  return -1;
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

// table[rows[i], :] += scale * values[i, :] for i < n, in order of i, where
// `table` is [height, width] and every row index is in [0, height);
// duplicate rows accumulate. Race-free, and fast whatever the duplicates:
// the table is cut into ranges of rows, about one per kMinElementsPerTask
// elements of updates. A sample of the updates estimates each range's
// load: a range with many more updates (a hot row, e.g. every id equal) is
// cut into column blocks split on cache lines, up to one per line of a
// row and at most one per max(kMinElementsPerTask, n) elements of its
// load, and consecutive ranges the sample misses are merged. Each (rows,
// columns) cell is one task applying, in order of i, its rows' updates to
// its columns: every element is updated in order of i by one task, so the
// result equals the serial one whatever the cells. A task of whole rows
// first lists the positions of its rows, then applies them in order,
// asking for the table and value rows kPrefetchRowsAhead positions ahead
// (random rows of a large table are memory-latency bound).
template <typename T, typename Policy>
void ScatterAddRows(const int64_t* rows, int64_t n, const T* values, int64_t width, T scale,
                    T* table, int64_t height) {
  if (n == 0 || width == 0) return;
  // Four ranges per kMinElementsPerTask elements of updates, so that tasks
  // taking whole numbers of ranges are balanced.
  const int64_t ranges = std::clamp<int64_t>(4 * n * width / kMinElementsPerTask, 1, height);
  std::vector<int64_t> first_row(ranges + 1);  // range b is [first_row[b], first_row[b + 1])
  for (int64_t b = 0; b <= ranges; ++b) {
    first_row[b] = static_cast<int64_t>(static_cast<__int128>(height) * b / ranges);
  }
  // Updates per range, estimated from up to 256 updates spread over i.
  const int64_t samples = std::min<int64_t>(n, 256);
  std::vector<int64_t> sampled(ranges, 0);
  const double ranges_per_row = static_cast<double>(ranges) / static_cast<double>(height);
  for (int64_t k = 0; k < samples; ++k) {
    const int64_t r = rows[k * n / samples];
    int64_t b = std::min(ranges - 1, static_cast<int64_t>(static_cast<double>(r) * ranges_per_row));
    while (r < first_row[b]) --b;
    while (r >= first_row[b + 1]) ++b;
    ++sampled[b];
  }
  struct Cell {
    int64_t lo, hi;  // rows
    int64_t block, blocks;
  };
  std::vector<Cell> cells;
  const int64_t max_blocks = (width * static_cast<int64_t>(sizeof(T)) + 63) / 64;
  int64_t quiet = -1;  // first row of a run of ranges the sample missed
  for (int64_t b = 0; b <= ranges; ++b) {
    if (b < ranges && sampled[b] == 0) {
      if (quiet < 0) quiet = first_row[b];
      continue;
    }
    if (quiet >= 0) cells.push_back({quiet, first_row[b], 0, 1});
    quiet = -1;
    if (b == ranges) break;
    // A column block scans all n updates, so it needs at least n elements
    // of work besides kMinElementsPerTask: sampling noise (one sample
    // stands for n / samples updates) never splits a range.
    const int64_t load = sampled[b] * n / samples * width;
    const int64_t blocks =
        std::clamp<int64_t>(load / std::max(kMinElementsPerTask, n), 1, max_blocks);
    for (int64_t k = 0; k < blocks; ++k) {
      cells.push_back({first_row[b], first_row[b + 1], k, blocks});
    }
  }
  // Applies the updates of rows [lo, hi) to columns `block` of `blocks`.
  auto apply = [&](int64_t lo, int64_t hi, int64_t block, int64_t blocks) {
    if (blocks > 1) {  // a hot range: its few rows stay cached
      int64_t last = -1, begin = 0, end = width;  // columns of the last row
      for (int64_t i = 0; i < n; ++i) {
        const int64_t r = rows[i];
        if (r < lo || r >= hi) continue;
        T* dst = table + r * width;
        if (r != last) {
          std::tie(begin, end) = rows_internal::ColumnBlock(dst, width, block, blocks);
          last = r;
        }
        rows_internal::AddScaledRow(values + i * width + begin, scale, end - begin, dst + begin);
      }
      return;
    }
    std::vector<int64_t> mine;  // positions of rows in [lo, hi), ascending
    for (int64_t i = 0; i < n; ++i) {
      if (rows[i] >= lo && rows[i] < hi) mine.push_back(i);
    }
    const int64_t count = static_cast<int64_t>(mine.size());
    const int64_t row_bytes = width * static_cast<int64_t>(sizeof(T));
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
  Policy::ParallelFor(static_cast<int64_t>(cells.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end;) {
      if (cells[c].blocks > 1) {
        apply(cells[c].lo, cells[c].hi, cells[c].block, cells[c].blocks);
        ++c;
        continue;
      }
      // Consecutive whole-row cells cover adjacent rows: one pass.
      int64_t e = c + 1;
      while (e < end && cells[e].blocks == 1) ++e;
      apply(cells[c].lo, cells[e - 1].hi, 0, 1);
      c = e;
    }
  });
}

}  // namespace tandem

#endif  // TANDEM_BACKENDS_COMMON_ROWS_H_
