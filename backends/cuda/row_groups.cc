#include "backends/cuda/row_groups.h"

namespace tandem {
namespace cuda {

int32_t RowGrouper::Group(const int64_t* rows, int32_t n, int64_t* out_rows, int32_t* out_head,
                          int32_t* out_next) {
  int bits = 4;  // a table at least twice as large as n: short probes
  while ((int64_t{1} << bits) < 2 * int64_t{n}) ++bits;
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  table_.assign(mask + 1, -1);
  tail_.resize(n);
  int32_t groups = 0;
  for (int32_t p = 0; p < n; ++p) {
    const int64_t row = rows[p];
    out_next[p] = -1;
    // Fibonacci hashing: the top bits of row * 2^64 / phi.
    for (uint64_t h = (static_cast<uint64_t>(row) * 0x9E3779B97F4A7C15ull) >> (64 - bits);;
         h = (h + 1) & mask) {
      const int32_t g = table_[h];
      if (g < 0) {
        table_[h] = groups;
        out_rows[groups] = row;
        out_head[groups] = p;
        tail_[groups] = p;
        ++groups;
        break;
      }
      if (out_rows[g] == row) {
        out_next[tail_[g]] = p;
        tail_[g] = p;
        break;
      }
    }
  }
  return groups;
}

}  // namespace cuda
}  // namespace tandem
