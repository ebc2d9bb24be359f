// RowGrouper: the positions of a sparse gradient grouped by table row, for
// a gpu update that applies each row's values in the gradient's order with
// one launch (sgd_launchers.h). Plain C++ on the host: a hash table in
// first-occurrence order, O(n), no sort.
//
//   RowGrouper grouper;   // keeps its hash table between calls
//   // rows {7, 3, 7, 1}: groups 7, 3, 1 with head {0, 1, 3}; next {2, -1, -1, -1}
//   const int32_t groups = grouper.Group(rows, n, out_rows, out_head, out_next);
//
// Group g (in the order rows first occur) is table row out_rows[g]; its
// positions are out_head[g], out_next[out_head[g]], ... in increasing order,
// ending at -1. Not thread-safe; one per kernel object.
#ifndef TANDEM_BACKENDS_CUDA_ROW_GROUPS_H_
#define TANDEM_BACKENDS_CUDA_ROW_GROUPS_H_

#include <cstdint>
#include <vector>

namespace tandem {
namespace cuda {

class RowGrouper {
 public:
  // Groups rows[0, n) (n < 2^31) into out_rows[0, groups), out_head[0,
  // groups) and out_next[0, n), each with room for n entries; returns the
  // number of groups.
  int32_t Group(const int64_t* rows, int32_t n, int64_t* out_rows, int32_t* out_head,
                int32_t* out_next);

 private:
  std::vector<int32_t> table_;  // open addressing: a group, or -1
  std::vector<int32_t> tail_;   // last position of each group so far
};

}  // namespace cuda
}  // namespace tandem

#endif  // TANDEM_BACKENDS_CUDA_ROW_GROUPS_H_
