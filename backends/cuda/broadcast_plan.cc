#include "backends/cuda/broadcast_plan.h"

#include <vector>

#include "absl/strings/str_cat.h"

namespace tandem {
namespace cuda {
namespace {

// Dim `d` of `s` right-aligned to rank `rank` (1 where `s` has no such dim).
int64_t AlignedDim(const Shape& s, int rank, int d) {
  const int i = d - (rank - s.rank());
  return i >= 0 ? s.dim(i) : 1;
}

// A run of adjacent output dims in which each operand is either read along
// (false) or broadcast (true) throughout.
struct Run {
  int64_t size;
  bool a_broadcast;
  bool b_broadcast;
};

// Runs of `out`'s dims (size-1 dims dropped), with where `a` and `b` are
// broadcast.
std::vector<Run> MergeRuns(const Shape& out, const Shape& a, const Shape& b) {
  std::vector<Run> runs;
  const int rank = out.rank();
  for (int d = 0; d < rank; ++d) {
    const int64_t o = out.dim(d);
    if (o == 1) continue;
    const bool ab = AlignedDim(a, rank, d) != o;
    const bool bb = AlignedDim(b, rank, d) != o;
    if (!runs.empty() && runs.back().a_broadcast == ab && runs.back().b_broadcast == bb) {
      runs.back().size *= o;
    } else {
      runs.push_back(Run{o, ab, bb});
    }
  }
  return runs;
}

absl::Status TooManyDims(absl::string_view op, const Shape& a, const Shape& b, size_t dims) {
  return absl::UnimplementedError(absl::StrCat(
      "op '", op, "' on gpu: ", a.ToString(), " and ", b.ToString(), " broadcast over ", dims,
      " separate dim groups; at most ", kMaxBroadcastDims, " are supported"));
}

}  // namespace

absl::StatusOr<AddPlan> PlanAdd(absl::string_view op, const Shape& x, const Shape& y_aligned,
                                const Shape& out) {
  AddPlan plan;
  plan.n = out.num_elements();
  const std::vector<Run> runs = MergeRuns(out, x, y_aligned);
  bool any_broadcast = false;
  for (const Run& r : runs) any_broadcast |= r.a_broadcast || r.b_broadcast;
  if (!any_broadcast) return plan;  // kSame

  // One operand is read in full and the other is a row repeated over the
  // leading dims (broadcast on the first run only) or a scalar.
  for (const bool row_is_x : {false, true}) {
    const bool Run::*row = row_is_x ? &Run::a_broadcast : &Run::b_broadcast;
    const bool Run::*full = row_is_x ? &Run::b_broadcast : &Run::a_broadcast;
    bool full_is_full = true;
    for (const Run& r : runs) full_is_full &= !(r.*full);
    if (!full_is_full || !(runs[0].*row)) continue;
    if (runs.size() == 1 || (runs.size() == 2 && !(runs[1].*row))) {
      plan.kind = AddPlan::Kind::kRow;
      plan.swap = row_is_x;
      plan.cols = runs.size() == 1 ? 1 : runs[1].size;
      return plan;
    }
  }

  if (runs.size() > static_cast<size_t>(kMaxBroadcastDims)) {
    return TooManyDims(op, x, y_aligned, runs.size());
  }
  plan.kind = AddPlan::Kind::kStrided;
  AddGeometry& g = plan.geometry;
  g.rank = static_cast<int>(runs.size());
  int64_t x_stride = 1, y_stride = 1;
  for (int d = g.rank - 1; d >= 0; --d) {
    g.dims[d] = runs[d].size;
    g.x_strides[d] = runs[d].a_broadcast ? 0 : x_stride;
    g.y_strides[d] = runs[d].b_broadcast ? 0 : y_stride;
    if (!runs[d].a_broadcast) x_stride *= runs[d].size;
    if (!runs[d].b_broadcast) y_stride *= runs[d].size;
  }
  return plan;
}

absl::StatusOr<ReduceGeometry> PlanReduceTo(absl::string_view op, const Shape& out,
                                            const Shape& target) {
  // Runs where the target is broadcast (summed) or not, `b` unused.
  const std::vector<Run> runs = MergeRuns(out, target, out);
  ReduceGeometry g;
  int64_t stride = 1;
  std::vector<Run> keep, reduce;
  std::vector<int64_t> keep_strides, reduce_strides;
  for (int d = static_cast<int>(runs.size()) - 1; d >= 0; --d) {
    (runs[d].a_broadcast ? reduce : keep).push_back(runs[d]);
    (runs[d].a_broadcast ? reduce_strides : keep_strides).push_back(stride);
    stride *= runs[d].size;
  }
  if (keep.size() > static_cast<size_t>(kMaxBroadcastDims) ||
      reduce.size() > static_cast<size_t>(kMaxBroadcastDims)) {
    return TooManyDims(op, out, target, runs.size());
  }
  // Collected innermost first; the geometry lists dims outermost first.
  g.keep_rank = static_cast<int>(keep.size());
  for (int i = 0; i < g.keep_rank; ++i) {
    g.keep_dims[i] = keep[g.keep_rank - 1 - i].size;
    g.keep_strides[i] = keep_strides[g.keep_rank - 1 - i];
    g.out_count *= g.keep_dims[i];
  }
  g.reduce_rank = static_cast<int>(reduce.size());
  for (int i = 0; i < g.reduce_rank; ++i) {
    g.reduce_dims[i] = reduce[g.reduce_rank - 1 - i].size;
    g.reduce_strides[i] = reduce_strides[g.reduce_rank - 1 - i];
    g.reduce_count *= g.reduce_dims[i];
  }
  return g;
}

absl::StatusOr<AddGeometry> PlanBroadcastTo(absl::string_view op, const Shape& in,
                                            const Shape& out) {
  const std::vector<Run> runs = MergeRuns(out, in, out);  // `b` unused
  if (runs.size() > static_cast<size_t>(kMaxBroadcastDims)) {
    return TooManyDims(op, in, out, runs.size());
  }
  AddGeometry g;
  g.rank = static_cast<int>(runs.size());
  int64_t stride = 1;
  for (int d = g.rank - 1; d >= 0; --d) {
    g.dims[d] = runs[d].size;
    g.x_strides[d] = runs[d].a_broadcast ? 0 : stride;
    if (!runs[d].a_broadcast) stride *= runs[d].size;
  }
  return g;
}

}  // namespace cuda
}  // namespace tandem
