// Checks the plans by running them on the host with the kernels' index math
// against a direct numpy-style reference. Needs no GPU.
#include "backends/cuda/broadcast_plan.h"

#include <numeric>
#include <utility>
#include <vector>

#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace cuda {
namespace {

using Vec = std::vector<int64_t>;

Vec Iota(const Shape& s, int64_t start) {
  Vec v(s.num_elements());
  std::iota(v.begin(), v.end(), start);
  return v;
}

// Offset in a contiguous tensor of shape `s` (right-aligned to `out`, size-1
// dims broadcast) of the element at out coordinates `coord`.
int64_t BroadcastOffset(const Shape& s, const Shape& out, const Vec& coord) {
  int64_t offset = 0, stride = 1;
  for (int i = s.rank() - 1; i >= 0; --i) {
    const int d = i + out.rank() - s.rank();
    if (s.dim(i) != 1) offset += coord[d] * stride;
    stride *= s.dim(i);
  }
  return offset;
}

Vec Coord(const Shape& out, int64_t i) {
  Vec c(out.rank());
  for (int d = out.rank() - 1; d >= 0; --d) {
    c[d] = i % out.dim(d);
    i /= out.dim(d);
  }
  return c;
}

Vec ReferenceAdd(const Shape& x, const Vec& xv, const Shape& y, const Vec& yv, const Shape& out) {
  Vec o(out.num_elements());
  for (int64_t i = 0; i < static_cast<int64_t>(o.size()); ++i) {
    const Vec c = Coord(out, i);
    o[i] = xv[BroadcastOffset(x, out, c)] + yv[BroadcastOffset(y, out, c)];
  }
  return o;
}

Vec RunAdd(const AddPlan& p, Vec xv, Vec yv) {
  if (p.swap) std::swap(xv, yv);
  Vec o(p.n);
  for (int64_t i = 0; i < p.n; ++i) {
    switch (p.kind) {
      case AddPlan::Kind::kSame:
        o[i] = xv[i] + yv[i];
        break;
      case AddPlan::Kind::kRow:
        o[i] = xv[i] + yv[i % p.cols];
        break;
      case AddPlan::Kind::kStrided: {
        const AddGeometry& g = p.geometry;
        int64_t rest = i, xo = 0, yo = 0;
        for (int d = g.rank - 1; d >= 0; --d) {
          xo += rest % g.dims[d] * g.x_strides[d];
          yo += rest % g.dims[d] * g.y_strides[d];
          rest /= g.dims[d];
        }
        o[i] = xv[xo] + yv[yo];
      }
    }
  }
  return o;
}

struct AddCase {
  Shape x, y;  // y already aligned
  AddPlan::Kind kind;
  bool swap;
};

TEST(PlanAdd, MatchesReference) {
  const std::vector<AddCase> cases = {
      {Shape({2, 3}), Shape({2, 3}), AddPlan::Kind::kSame, false},
      {Shape(), Shape(), AddPlan::Kind::kSame, false},
      {Shape({1, 4}), Shape({4}), AddPlan::Kind::kSame, false},
      {Shape({2, 3}), Shape({3}), AddPlan::Kind::kRow, false},
      {Shape({3}), Shape({2, 3}), AddPlan::Kind::kRow, true},
      {Shape({2, 3, 4}), Shape({1}), AddPlan::Kind::kRow, false},
      {Shape(), Shape({1023}), AddPlan::Kind::kRow, true},
      {Shape({2, 3, 4}), Shape({1, 3, 4}), AddPlan::Kind::kRow, false},
      {Shape({2, 3, 4}), Shape({1, 3, 1}), AddPlan::Kind::kStrided, false},
      {Shape({4, 1, 5}), Shape({3, 1}), AddPlan::Kind::kStrided, false},
      {Shape({5, 1}), Shape({1, 6}), AddPlan::Kind::kStrided, false},
      {Shape({2, 3}), Shape({2, 1}), AddPlan::Kind::kStrided, false},
      {Shape({2, 1, 3, 1, 2}), Shape({1, 4, 3, 2, 1}), AddPlan::Kind::kStrided, false},
      {Shape({0, 3}), Shape({1, 3}), AddPlan::Kind::kRow, false},
  };
  for (const AddCase& c : cases) {
    SCOPED_TRACE(c.x.ToString() + " + " + c.y.ToString());
    const int rank = std::max(c.x.rank(), c.y.rank());
    std::vector<int64_t> out_dims(rank);
    for (int d = 0; d < rank; ++d) {
      const int xi = d - (rank - c.x.rank()), yi = d - (rank - c.y.rank());
      const int64_t a = xi >= 0 ? c.x.dim(xi) : 1, b = yi >= 0 ? c.y.dim(yi) : 1;
      out_dims[d] = a == 1 ? b : a;
    }
    const Shape out(out_dims);
    ASSERT_OK_AND_ASSIGN(AddPlan plan, PlanAdd("elementwise_add", c.x, c.y, out));
    EXPECT_EQ(plan.kind, c.kind);
    EXPECT_EQ(plan.swap, c.swap);
    EXPECT_EQ(plan.n, out.num_elements());
    const Vec xv = Iota(c.x, 1), yv = Iota(c.y, 1000);
    EXPECT_EQ(RunAdd(plan, xv, yv), ReferenceAdd(c.x, xv, c.y, yv, out));
  }
}

TEST(PlanAdd, TooManyDimGroupsIsUnimplemented) {
  const Shape x({2, 1, 2, 1, 2, 1, 2, 1, 2}), y({1, 2, 1, 2, 1, 2, 1, 2, 1});
  EXPECT_THAT(PlanAdd("elementwise_add", x, y, Shape({2, 2, 2, 2, 2, 2, 2, 2, 2})),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("at most 8")));
}

Vec RunReduce(const ReduceGeometry& g, const Vec& in) {
  Vec out(g.out_count, 0);
  for (int64_t j = 0; j < g.out_count; ++j) {
    int64_t base = 0, rest = j;
    for (int d = g.keep_rank - 1; d >= 0; --d) {
      base += rest % g.keep_dims[d] * g.keep_strides[d];
      rest /= g.keep_dims[d];
    }
    for (int64_t r = 0; r < g.reduce_count; ++r) {
      int64_t offset = 0, rr = r;
      for (int d = g.reduce_rank - 1; d >= 0; --d) {
        offset += rr % g.reduce_dims[d] * g.reduce_strides[d];
        rr /= g.reduce_dims[d];
      }
      out[j] += in[base + offset];
    }
  }
  return out;
}

Vec ReferenceReduce(const Shape& out, const Vec& in, const Shape& target) {
  Vec t(target.num_elements(), 0);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    t[BroadcastOffset(target, out, Coord(out, i))] += in[i];
  }
  return t;
}

TEST(PlanReduceTo, MatchesReference) {
  const std::vector<std::pair<Vec, Vec>> cases = {
      {{2, 3}, {3}},          {{2, 3}, {2, 1}},
      {{2, 3}, {2, 3}},       {{2, 3}, {}},
      {{4, 3, 5}, {3, 1}},    {{4, 3, 5}, {4, 1, 5}},
      {{2, 1, 3}, {1, 1, 3}}, {{0, 3}, {1, 3}},
      {{2, 0}, {2, 1}},       {{}, {}},
      {{3, 1023}, {1023}},    {{2, 3, 4, 5}, {2, 1, 4, 1}},
  };
  for (const auto& [out_dims, target_dims] : cases) {
    const Shape out(out_dims), target(target_dims);
    SCOPED_TRACE(out.ToString() + " -> " + target.ToString());
    ASSERT_OK_AND_ASSIGN(ReduceGeometry g, PlanReduceTo("elementwise_add_grad", out, target));
    EXPECT_EQ(g.out_count, target.num_elements());
    const Vec in = Iota(out, 1);
    EXPECT_EQ(RunReduce(g, in), ReferenceReduce(out, in, target));
    if (out == target) {
      EXPECT_EQ(g.reduce_rank, 0);
    }
  }
}

TEST(PlanBroadcastTo, MatchesReference) {
  const std::vector<std::pair<Vec, Vec>> cases = {
      {{3}, {2, 3}},       {{2, 1}, {2, 3}},
      {{2, 3}, {2, 3}},    {{}, {2, 3}},
      {{3, 1}, {4, 3, 5}}, {{4, 1, 5}, {4, 3, 5}},
      {{1, 3}, {0, 3}},    {{}, {}},
      {{1}, {7}},          {{2, 1, 4, 1}, {2, 3, 4, 5}},
  };
  for (const auto& [in_dims, out_dims] : cases) {
    const Shape in(in_dims), out(out_dims);
    SCOPED_TRACE(in.ToString() + " -> " + out.ToString());
    ASSERT_OK_AND_ASSIGN(AddGeometry g, PlanBroadcastTo("reduce_sum_grad", in, out));
    const Vec iv = Iota(in, 1);
    int64_t n = 1;
    for (int d = 0; d < g.rank; ++d) n *= g.dims[d];
    ASSERT_EQ(n, out.num_elements());
    for (int64_t i = 0; i < n; ++i) {
      int64_t rest = i, at = 0;
      for (int d = g.rank - 1; d >= 0; --d) {
        at += rest % g.dims[d] * g.x_strides[d];
        rest /= g.dims[d];
      }
      EXPECT_EQ(iv[at], iv[BroadcastOffset(in, out, Coord(out, i))]) << i;
    }
  }
}

}  // namespace
}  // namespace cuda
}  // namespace tandem
