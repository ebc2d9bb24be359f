#include "backends/common/broadcast.h"

#include "glog/logging.h"

namespace tandem {

BroadcastLayout::BroadcastLayout(const Shape& out, absl::Span<const Shape> operands)
    : num_operands_(static_cast<int>(operands.size())), num_elements_(out.num_elements()) {
  CHECK_LE(num_operands_, kMaxOperands);
  const int rank = out.rank();
  // Uncoalesced strides of each operand along out's dims.
  std::array<DimVector, kMaxOperands> full;
  for (int k = 0; k < num_operands_; ++k) {
    const Shape& s = operands[k];
    CHECK_LE(s.rank(), rank) << s << " does not broadcast to " << out;
    full[k].assign(rank, 0);
    int64_t stride = 1;
    for (int d = rank - 1, sd = s.rank() - 1; sd >= 0; --d, --sd) {
      CHECK(s.dim(sd) == out.dim(d) || s.dim(sd) == 1) << s << " does not broadcast to " << out;
      if (s.dim(sd) != 1) full[k][d] = stride;
      stride *= s.dim(sd);
    }
  }
  // Keep dims of size != 1, merging a dim into the inner one kept before it
  // when every operand's stride continues across the boundary.
  for (int d = rank - 1; d >= 0; --d) {
    const int64_t n = out.dim(d);
    if (n == 1) continue;
    bool merge = !dims_.empty();
    for (int k = 0; merge && k < num_operands_; ++k) {
      merge = full[k][d] == strides_[k].back() * dims_.back();
    }
    if (merge) {
      dims_.back() *= n;
      continue;
    }
    dims_.push_back(n);
    for (int k = 0; k < num_operands_; ++k) strides_[k].push_back(full[k][d]);
  }
  if (dims_.empty()) {
    dims_.push_back(1);
    for (int k = 0; k < num_operands_; ++k) strides_[k].push_back(0);
  }
  // Built innermost first; store outermost first.
  std::reverse(dims_.begin(), dims_.end());
  for (int k = 0; k < num_operands_; ++k) {
    std::reverse(strides_[k].begin(), strides_[k].end());
  }
}

StridedCounter::StridedCounter(absl::Span<const int64_t> dims, absl::Span<const DimVector> strides,
                               int64_t start)
    : dims_(dims.begin(), dims.end()),
      num_sets_(static_cast<int>(strides.size())),
      index_(dims.size(), 0) {
  CHECK_LE(num_sets_, kMaxSets);
  for (int s = 0; s < num_sets_; ++s) {
    CHECK_EQ(strides[s].size(), dims.size());
    strides_[s] = strides[s];
  }
  for (int d = static_cast<int>(dims_.size()) - 1; d >= 0 && start > 0; --d) {
    index_[d] = start % dims_[d];
    start /= dims_[d];
    for (int s = 0; s < num_sets_; ++s) offsets_[s] += index_[d] * strides_[s][d];
  }
}

}  // namespace tandem
