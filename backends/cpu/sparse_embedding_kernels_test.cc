// The cpu sparse-embedding kernels (lookup_table, lookup_table_grad with
// is_sparse, sgd and momentum with a SelectedRows gradient) through
// RunOpEager, on tables large enough for every thread to get work, against
// serial loops in the order the ops define: bit for bit, whatever the
// duplicates and whatever --cpu_threads.
#include <gflags/gflags.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "framework/base/status_macros.h"
#include "framework/kernel/eager.h"
#include "framework/tensor/selected_rows.h"
#include "framework/tensor/tensor.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

DECLARE_int32(cpu_threads);

namespace tandem {
namespace {

using testing::HasSubstr;

constexpr int64_t kDim = 150;

OpDesc Op(const std::string& type, AttrMap attrs = {}) {
  OpDesc op;
  op.type = type;
  op.attrs = std::move(attrs);
  return op;
}

// `n` floats whose sums round differently by order.
std::vector<float> Values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng) / 3;
  return v;
}

std::vector<float> Floats(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.NumElements());
}

// The ids the tests use, over a table of `rows` rows.
struct IdCase {
  std::string name;
  int64_t rows;
  std::vector<int64_t> ids;
};

std::vector<IdCase> IdCases() {
  std::vector<IdCase> cases;
  cases.push_back({"all duplicates", 1000, std::vector<int64_t>(8192, 321)});
  std::vector<int64_t> distinct(20000);
  for (int64_t i = 0; i < 20000; ++i) distinct[i] = (i * 7919) % 50000;  // 7919 is prime
  cases.push_back({"no duplicates", 50000, distinct});
  std::mt19937_64 rng(5);
  std::vector<int64_t> random(65536);
  for (int64_t& id : random) id = rng() % 100000;  // about 28% repeats
  cases.push_back({"random with repeats", 100000, random});
  std::vector<int64_t> hot(30000);
  for (int64_t i = 0; i < 30000; ++i) hot[i] = i % 3 == 0 ? 7 : (i * 104729) % 200000;
  cases.push_back({"one hot row among random ones", 200000, hot});
  cases.push_back({"batch 1", 10, {9}});
  return cases;
}

// sgd with Grad = SelectedRows(ids, values): Param[ids[i]] += -lr *
// values[i] in order of i (the expression the kernel evaluates).
std::vector<float> NaiveSparseSgd(std::vector<float> param, const std::vector<int64_t>& ids,
                                  const std::vector<float>& values, float lr) {
  const float scale = -lr;
  for (size_t i = 0; i < ids.size(); ++i) {
    for (int64_t j = 0; j < kDim; ++j) param[ids[i] * kDim + j] += scale * values[i * kDim + j];
  }
  return param;
}

// Runs the sparse pipeline of an embedding step on the cpu: lookup_table
// of `ids`, lookup_table_grad (is_sparse) of `dout`, sgd with that
// gradient. Returns the gathered rows and the updated table.
struct StepResult {
  std::vector<float> out;
  std::vector<float> table;
};
absl::StatusOr<StepResult> SparseStep(const std::vector<float>& table, int64_t rows,
                                      const std::vector<int64_t>& ids,
                                      const std::vector<float>& dout, float lr,
                                      int64_t padding_idx) {
  const int64_t n = static_cast<int64_t>(ids.size());
  const Variable w(Tensor::FromVector<float>(Shape({rows, kDim}), table));
  const Variable ids_var(Tensor::FromVector<int64_t>(Shape({n}), ids));
  const AttrMap attrs = {{"padding_idx", padding_idx}, {"is_sparse", true}};
  ASSIGN_OR_RETURN(EagerOutputs looked, RunOpEager(Op("lookup_table", attrs), CPUPlace(),
                                                   {{"Ids", {ids_var}}, {"W", {w}}}));
  ASSIGN_OR_RETURN(
      EagerOutputs grad,
      RunOpEager(Op("lookup_table_grad", attrs), CPUPlace(),
                 {{"Ids", {ids_var}},
                  {"W", {w}},
                  {"Out@GRAD", {Variable(Tensor::FromVector<float>(Shape({n, kDim}), dout))}}}));
  ASSIGN_OR_RETURN(
      EagerOutputs updated,
      RunOpEager(Op("sgd"), CPUPlace(),
                 {{"Param", {w}},
                  {"Grad", {grad.at("W@GRAD")[0]}},
                  {"LearningRate", {Variable(Tensor::FromVector<float>(Shape({1}), {lr}))}}}));
  return StepResult{Floats(looked.at("Out")[0].tensor()),
                    Floats(updated.at("ParamOut")[0].tensor())};
}

class SparseEmbeddingTest : public ::testing::Test {
 protected:
  ~SparseEmbeddingTest() override { FLAGS_cpu_threads = saved_threads_; }
  const int saved_threads_ = FLAGS_cpu_threads;
};

TEST_F(SparseEmbeddingTest, LookupGradAndSgdMatchTheSerialOrderBitwise) {
  for (const IdCase& c : IdCases()) {
    SCOPED_TRACE(c.name);
    const int64_t n = static_cast<int64_t>(c.ids.size());
    const std::vector<float> table = Values(c.rows * kDim, 1);
    const std::vector<float> dout = Values(n * kDim, 2);
    std::vector<float> want_out(n * kDim);
    for (int64_t i = 0; i < n; ++i) {
      std::copy(table.begin() + c.ids[i] * kDim, table.begin() + (c.ids[i] + 1) * kDim,
                want_out.begin() + i * kDim);
    }
    const std::vector<float> want_table = NaiveSparseSgd(table, c.ids, dout, 0.01f);
    for (const int threads : {0, 1, 3}) {  // 0: every cpu
      SCOPED_TRACE(testing::Message() << "cpu_threads " << threads);
      FLAGS_cpu_threads = threads;
      ASSERT_OK_AND_ASSIGN(const StepResult r, SparseStep(table, c.rows, c.ids, dout, 0.01f, -1));
      EXPECT_EQ(r.out, want_out);
      EXPECT_EQ(r.table, want_table);
    }
  }
}

TEST_F(SparseEmbeddingTest, PaddingRowsReadZeroAndAreNotUpdated) {
  // Every fourth id is the padding row 3 (also given as -997: from the end).
  const int64_t rows = 1000, n = 4000;
  std::vector<int64_t> ids(n);
  for (int64_t i = 0; i < n; ++i) ids[i] = i % 4 == 0 ? 3 : (i * 31) % rows;
  const std::vector<float> table = Values(rows * kDim, 3);
  const std::vector<float> dout = Values(n * kDim, 4);
  std::vector<float> values = dout;  // the gradient's value: padding rows zero
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] == 3) std::fill(values.begin() + i * kDim, values.begin() + (i + 1) * kDim, 0.0f);
  }
  const std::vector<float> want_table = NaiveSparseSgd(table, ids, values, 0.5f);
  for (const int64_t padding_idx : {int64_t{3}, int64_t{-997}}) {
    SCOPED_TRACE(testing::Message() << "padding_idx " << padding_idx);
    ASSERT_OK_AND_ASSIGN(const StepResult r, SparseStep(table, rows, ids, dout, 0.5f, padding_idx));
    for (int64_t i = 0; i < n; ++i) {
      const float* got = r.out.data() + i * kDim;
      const float* want = ids[i] == 3 ? nullptr : table.data() + ids[i] * kDim;
      for (int64_t j = 0; j < kDim; ++j) {
        ASSERT_EQ(got[j], want == nullptr ? 0.0f : want[j]) << "position " << i << " column " << j;
      }
    }
    EXPECT_EQ(r.table, want_table);
    EXPECT_TRUE(std::equal(r.table.begin() + 3 * kDim, r.table.begin() + 4 * kDim,
                           table.begin() + 3 * kDim));
  }
}

TEST_F(SparseEmbeddingTest, MomentumMergesDuplicatesInPositionOrder) {
  // momentum (lazy): each distinct row once, with the sum of its value rows
  // in order of position.
  const int64_t rows = 5000, n = 30000;
  std::vector<int64_t> ids(n);
  for (int64_t i = 0; i < n; ++i) ids[i] = i % 5 == 0 ? 17 : (i * 7919) % rows;
  const std::vector<float> param = Values(rows * kDim, 5), velocity = Values(rows * kDim, 6);
  const std::vector<float> values = Values(n * kDim, 7);
  const float lr = 0.1f, mu = 0.9f;
  std::vector<float> want_p = param, want_v = velocity;
  std::vector<std::vector<float>> merged(rows);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<float>& m = merged[ids[i]];
    if (m.empty()) {
      m.assign(values.begin() + i * kDim, values.begin() + (i + 1) * kDim);
    } else {
      for (int64_t j = 0; j < kDim; ++j) m[j] += values[i * kDim + j];
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < static_cast<int64_t>(merged[r].size()); ++j) {
      float& v = want_v[r * kDim + j];
      v = mu * v + merged[r][j];
      want_p[r * kDim + j] -= lr * v;
    }
  }
  for (const int threads : {0, 1}) {
    SCOPED_TRACE(testing::Message() << "cpu_threads " << threads);
    FLAGS_cpu_threads = threads;
    ASSERT_OK_AND_ASSIGN(
        EagerOutputs out,
        RunOpEager(
            Op("momentum", {{"mu", 0.9}}), CPUPlace(),
            {{"Param", {Variable(Tensor::FromVector<float>(Shape({rows, kDim}), param))}},
             {"Grad",
              {Variable(
                  SelectedRows(rows, ids, Tensor::FromVector<float>(Shape({n, kDim}), values)))}},
             {"Velocity", {Variable(Tensor::FromVector<float>(Shape({rows, kDim}), velocity))}},
             {"LearningRate", {Variable(Tensor::FromVector<float>(Shape({1}), {lr}))}}}));
    EXPECT_EQ(Floats(out.at("ParamOut")[0].tensor()), want_p);
    EXPECT_EQ(Floats(out.at("VelocityOut")[0].tensor()), want_v);
  }
}

TEST_F(SparseEmbeddingTest, OutOfRangeIdsNameTheOpAndTheId) {
  const int64_t rows = 100;
  std::vector<int64_t> ids(20000, 4);
  ids[12345] = 100;
  ids[15000] = -1;
  const std::vector<float> table = Values(rows * kDim, 8);
  const std::vector<float> dout = Values(20000 * kDim, 9);
  EXPECT_THAT(SparseStep(table, rows, ids, dout, 0.1f, -1).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'lookup_table': id 100 at position 12345 is out of range [0, 100) of "
                       "table 'W_0'"));
  // sgd checks a SelectedRows gradient's rows itself.
  std::vector<int64_t> grad_rows = {0, 5, 99, 100, 3};
  EXPECT_THAT(
      RunOpEager(Op("sgd"), CPUPlace(),
                 {{"Param", {Variable(Tensor::FromVector<float>(Shape({rows, kDim}), table))}},
                  {"Grad",
                   {Variable(SelectedRows(
                       rows, grad_rows,
                       Tensor::FromVector<float>(Shape({5, kDim}), Values(5 * kDim, 10))))}},
                  {"LearningRate", {Variable(Tensor::FromVector<float>(Shape({1}), {0.1f}))}}})
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("row 100 at position 3 of Grad 'Grad_0' is out of range [0, 100)")));
}

}  // namespace
}  // namespace tandem
