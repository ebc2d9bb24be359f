#include <cstdint>
#include <map>
#include <utility>

#include "absl/status/statusor.h"
#include "framework/base/status_macros.h"
#include "framework/device/device.h"
#include "framework/kernel/eager.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/tensor/selected_rows.h"
#include "framework/tensor/tensor.h"
#include "framework/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "tests/conformance/semantics.h"

namespace tandem {

namespace {

using semantics::Named;
using semantics::Op;
using semantics::Var;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

// The values of `t` (any place) as T on the host.
template <typename T>
std::vector<T> HostValues(const Tensor& t) {
  absl::StatusOr<Tensor> host = CopyTensorTo(t, CPUPlace());
  CHECK(host.ok()) << host.status();
  return host->ToVector<T>();
}

// Runs `op` on the test's place and returns output `arg`.
absl::StatusOr<Variable> RunFor(const Place& place, const OpDesc& op, const EagerInputs& in,
                                const std::string& arg = "Out") {
  ASSIGN_OR_RETURN(EagerOutputs out, RunOpEager(op, place, in));
  if (out[arg].empty()) return absl::InternalError(arg + " is not bound");
  return out[arg][0];
}

TEST_P(KernelSemantics, HostMemoryArgumentsAreDeclared) {
  const std::vector<std::pair<std::string, std::string>> host_args = {{"shape", "Out"},
                                                                      {"crop_tensor", "Shape"},
                                                                      {"crop_tensor_grad", "Shape"},
                                                                      {"sgd", "LearningRate"}};
  for (const auto& [op, arg] : host_args) {
    bool found = false;
    for (const KernelRegistration* k : KernelRegistry::Global().KernelsFor(op)) {
      if (k->def.device_type() != GetParam().type()) continue;
      found = true;
      EXPECT_TRUE(k->def.IsHostMemory(arg)) << k->def.DebugString();
    }
    EXPECT_TRUE(found) << op;
  }
}

// ----------------------------------------------------------------- lookup_table

const OpDesc kLookup = Named("lookup_table", {{"Ids", {"ids"}}, {"W", {"emb_w"}}});

TEST_P(KernelSemantics, LookupTableGathersRowsWithPadding) {
  const Variable w = Var<float>({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  ASSERT_OK_AND_ASSIGN(
      Variable out,
      RunFor(GetParam(), kLookup, {{"Ids", {Var<int64_t>({2, 2}, {3, 0, 3, 1})}}, {"W", {w}}}));
  EXPECT_EQ(out.tensor().shape(), Shape({2, 2, 2}));
  EXPECT_THAT(HostValues<float>(out.tensor()), ElementsAre(30, 31, 0, 1, 30, 31, 10, 11));
  // Rank-0 Ids give [dim]; padding_idx -1 means none, -2 is row 2.
  ASSERT_OK_AND_ASSIGN(out,
                       RunFor(GetParam(), kLookup, {{"Ids", {Var<int64_t>({}, {2})}}, {"W", {w}}}));
  EXPECT_EQ(out.tensor().shape(), Shape({2}));
  EXPECT_THAT(HostValues<float>(out.tensor()), ElementsAre(20, 21));
  OpDesc padded = kLookup;
  padded.attrs["padding_idx"] = int64_t{-2};
  ASSERT_OK_AND_ASSIGN(
      out, RunFor(GetParam(), padded, {{"Ids", {Var<int64_t>({3}, {2, 1, 2})}}, {"W", {w}}}));
  EXPECT_THAT(HostValues<float>(out.tensor()), ElementsAre(0, 0, 10, 11, 0, 0));
}

TEST_P(KernelSemantics, LookupTableIdOutOfRangeNamesOpIdPositionRangeAndTable) {
  const Variable w = Var<float>({10, 2}, std::vector<float>(20, 1));
  for (const std::string type : {"lookup_table", "lookup_table_grad"}) {
    OpDesc op = kLookup;
    op.type = type;
    EagerInputs in = {{"Ids", {Var<int64_t>({5}, {0, 9, 2, 10, 4})}}, {"W", {w}}};
    if (type == "lookup_table_grad") {
      in["Out@GRAD"] = {Var<float>({5, 2}, std::vector<float>(10, 1))};
    }
    EXPECT_THAT(RunFor(GetParam(), op, in, type == "lookup_table" ? "Out" : "W@GRAD"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "op '" + type +
                             "': id 10 at position 3 is out of range [0, 10) of table 'emb_w'"));
  }
  EXPECT_THAT(RunFor(GetParam(), kLookup, {{"Ids", {Var<int64_t>({2}, {-1, 0})}}, {"W", {w}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("id -1 at position 0 is out of range [0, 10)")));
  EXPECT_THAT(RunFor(GetParam(), kLookup, {{"Ids", {Var<int32_t>({1}, {0})}}, {"W", {w}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'lookup_table': Ids must be int64, got int32"));
  // The place stays usable.
  EXPECT_OK(RunFor(GetParam(), kLookup, {{"Ids", {Var<int64_t>({1}, {9})}}, {"W", {w}}}));
}

TEST_P(KernelSemantics, LookupTableSparseGradKeepsIdsInOrderAndZeroesPadding) {
  OpDesc op = Named("lookup_table_grad", {{"Ids", {"ids"}}, {"W", {"emb_w"}}},
                    {{"is_sparse", true}, {"padding_idx", int64_t{1}}});
  ASSERT_OK_AND_ASSIGN(Variable g,
                       RunFor(GetParam(), op,
                              {{"Ids", {Var<int64_t>({4}, {3, 1, 3, 0})}},
                               {"W", {Var<double>({5, 2}, std::vector<double>(10, 0))}},
                               {"Out@GRAD", {Var<double>({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}}},
                              "W@GRAD"));
  ASSERT_TRUE(g.is_selected_rows());
  const SelectedRows& r = g.selected_rows();
  EXPECT_EQ(r.height(), 5);
  EXPECT_THAT(r.rows(), ElementsAre(3, 1, 3, 0));
  EXPECT_EQ(r.value().shape(), Shape({4, 2}));
  EXPECT_EQ(r.value().place(), GetParam());
  EXPECT_THAT(HostValues<double>(r.value()), ElementsAre(1, 2, 0, 0, 5, 6, 7, 8));

  // Dense: duplicates accumulate, the padding row stays zero.
  op.attrs["is_sparse"] = false;
  ASSERT_OK_AND_ASSIGN(Variable d,
                       RunFor(GetParam(), op,
                              {{"Ids", {Var<int64_t>({4}, {3, 1, 3, 0})}},
                               {"W", {Var<double>({5, 2}, std::vector<double>(10, 0))}},
                               {"Out@GRAD", {Var<double>({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}}},
                              "W@GRAD"));
  ASSERT_TRUE(d.is_tensor());
  EXPECT_THAT(HostValues<double>(d.tensor()), ElementsAre(7, 8, 0, 0, 0, 0, 6, 8, 0, 0));
}

TEST_P(KernelSemantics, LookupTableSparseGradSharesOutGradUnlessAPaddingRowIsHit) {
  // Out@GRAD already on the place, so the kernel sees this very buffer.
  ASSERT_OK_AND_ASSIGN(
      Tensor dout,
      CopyTensorTo(Tensor::FromVector<float>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), GetParam()));
  OpDesc op = Named("lookup_table_grad", {{"Ids", {"ids"}}, {"W", {"emb_w"}}},
                    {{"is_sparse", true}, {"padding_idx", int64_t{4}}});
  auto run = [&](std::vector<int64_t> ids) {
    return RunFor(GetParam(), op,
                  {{"Ids", {Var<int64_t>({2, 2}, std::move(ids))}},
                   {"W", {Var<float>({5, 2}, std::vector<float>(10, 0))}},
                   {"Out@GRAD", {Variable(dout)}}},
                  "W@GRAD");
  };
  // No id is the padding row 4: the value is Out@GRAD as [4, 2], not a copy.
  ASSERT_OK_AND_ASSIGN(Variable shared, run({3, 1, 3, 0}));
  EXPECT_EQ(shared.selected_rows().value().raw_data(), dout.raw_data());
  EXPECT_EQ(shared.selected_rows().value().shape(), Shape({4, 2}));
  EXPECT_THAT(shared.selected_rows().rows(), ElementsAre(3, 1, 3, 0));
  // Position 1 is the padding row: a copy with that row zero; Out@GRAD keeps its values.
  ASSERT_OK_AND_ASSIGN(Variable copied, run({3, 4, 3, 0}));
  EXPECT_NE(copied.selected_rows().value().raw_data(), dout.raw_data());
  EXPECT_THAT(HostValues<float>(copied.selected_rows().value()),
              ElementsAre(1, 2, 0, 0, 5, 6, 7, 8));
  EXPECT_THAT(HostValues<float>(dout), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
}

// ------------------------------------------------------------------ l2_normalize

TEST_P(KernelSemantics, L2NormalizeHandComputedAndBadAxis) {
  ASSERT_OK_AND_ASSIGN(Variable out, RunFor(GetParam(), Op("l2_normalize", {{"epsilon", 0.0}}),
                                            {{"X", {Var<float>({2, 2}, {3, 4, 0, 5})}}}));
  EXPECT_THAT(HostValues<float>(out.tensor()), ElementsAre(0.6f, 0.8f, 0, 1));
  EXPECT_THAT(RunFor(GetParam(), Op("l2_normalize", {{"axis", int64_t{-3}}}),
                     {{"X", {Var<float>({2, 2}, {3, 4, 0, 5})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'l2_normalize': axis -3 is out of range for X [2, 2] "
                       "(need -2 <= axis < 2)"));
}

// ------------------------------------------------------------------------- loss

TEST_P(KernelSemantics, SquareErrorCostShapesMustMatch) {
  EXPECT_THAT(RunFor(GetParam(), Op("square_error_cost"),
                     {{"X", {Var<float>({2, 3}, std::vector<float>(6, 1))}},
                      {"Y", {Var<float>({3, 2}, std::vector<float>(6, 1))}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'square_error_cost': X is float32[2, 3] but Y is float32[3, 2]; "
                       "they must have the same dtype and shape"));
  // Only Y@GRAD bound: X@GRAD is not written.
  OpDesc grad = Op("square_error_cost_grad");
  grad.outputs["X@GRAD"] = {};
  grad.outputs["Y@GRAD"] = {"y@GRAD"};
  ASSERT_OK_AND_ASSIGN(EagerOutputs out, RunOpEager(grad, GetParam(),
                                                    {{"X", {Var<double>({2}, {3, 1})}},
                                                     {"Y", {Var<double>({2}, {1, 1})}},
                                                     {"Out@GRAD", {Var<double>({2}, {1, 5})}}}));
  EXPECT_TRUE(out["X@GRAD"].empty());
  EXPECT_THAT(HostValues<double>(out["Y@GRAD"][0].tensor()), ElementsAre(-4, 0));
}

TEST_P(KernelSemantics, MeanOfEmptyXIsInvalidArgument) {
  EXPECT_THAT(RunFor(GetParam(), Op("mean"), {{"X", {Var<float>({0, 3}, {})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument, "op 'mean': X is empty"));
  ASSERT_OK_AND_ASSIGN(Variable out,
                       RunFor(GetParam(), Op("mean"), {{"X", {Var<double>({}, {2.5})}}}));
  EXPECT_EQ(out.tensor().shape(), Shape({1}));
  EXPECT_THAT(HostValues<double>(out.tensor()), ElementsAre(2.5));
  ASSERT_OK_AND_ASSIGN(Variable dx, RunFor(GetParam(), Op("mean_grad"),
                                           {{"X", {Var<float>({2, 2}, {1, 2, 3, 4})}},
                                            {"Out@GRAD", {Var<float>({1}, {2})}}},
                                           "X@GRAD"));
  EXPECT_THAT(HostValues<float>(dx.tensor()), ElementsAre(0.5f, 0.5f, 0.5f, 0.5f));
}

// -------------------------------------------------------------------------- sgd

const OpDesc kSgd =
    Named("sgd", {{"Param", {"w"}}, {"Grad", {"w@GRAD"}}, {"LearningRate", {"lr"}}});

TEST_P(KernelSemantics, SgdUpdatesParamInPlace) {
  // Param already on the place, so the kernel sees this very buffer.
  ASSERT_OK_AND_ASSIGN(Tensor param,
                       CopyTensorTo(Tensor::FromVector<float>({3}, {1, 2, 3}), GetParam()));
  ASSERT_OK_AND_ASSIGN(Variable out, RunFor(GetParam(), kSgd,
                                            {{"Param", {Variable(param)}},
                                             {"Grad", {Var<float>({3}, {2, 4, -2})}},
                                             {"LearningRate", {Var<float>({1}, {0.5f})}}},
                                            "ParamOut"));
  EXPECT_EQ(out.tensor().raw_data(), param.raw_data());
  EXPECT_THAT(HostValues<float>(param), ElementsAre(0, 0, 4));
}

TEST_P(KernelSemantics, SgdSparseDuplicateRowsAccumulateAcrossThreads) {
  // 4096 updates of 64-wide rows into a 1000-row table: enough work for
  // every thread of a threaded backend. Integer values and lr = 1 keep
  // every sum exact, so a lost update (a race) shows.
  const int64_t height = 1000, width = 64, n = 4096;
  std::vector<int64_t> rows(n);
  for (int64_t i = 0; i < n; ++i) rows[i] = i % 3 == 0 ? 7 : (i * 131) % height;
  std::vector<float> value(n * width);
  for (int64_t i = 0; i < n * width; ++i) value[i] = static_cast<float>(i % 5);
  std::vector<float> want(height * width, 100.0f);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < width; ++j) want[rows[i] * width + j] -= value[i * width + j];
  }
  ASSERT_OK_AND_ASSIGN(
      Tensor param, CopyTensorTo(Tensor::FromVector<float>({height, width},
                                                           std::vector<float>(height * width, 100)),
                                 GetParam()));
  ASSERT_OK_AND_ASSIGN(Tensor grad_value,
                       CopyTensorTo(Tensor::FromVector<float>({n, width}, value), GetParam()));
  ASSERT_OK(RunFor(GetParam(), kSgd,
                   {{"Param", {Variable(param)}},
                    {"Grad", {Variable(SelectedRows(height, rows, grad_value))}},
                    {"LearningRate", {Var<float>({1}, {1})}}},
                   "ParamOut")
                .status());
  EXPECT_EQ(HostValues<float>(param), want);
}

TEST_P(KernelSemantics, SgdBadSparseRowsAndLearningRate) {
  const Variable param = Var<double>({6, 2}, std::vector<double>(12, 0));
  const Variable lr = Var<float>({1}, {0.1f});
  EXPECT_THAT(
      RunFor(
          GetParam(), kSgd,
          {{"Param", {param}},
           {"Grad",
            {Variable(SelectedRows(6, {2, 6}, Tensor::FromVector<double>({2, 2}, {1, 1, 1, 1})))}},
           {"LearningRate", {lr}}},
          "ParamOut"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "op 'sgd': row 6 at position 1 of Grad 'w@GRAD' is out of range [0, 6) of "
               "Param 'w'"));
  EXPECT_THAT(
      RunFor(GetParam(), kSgd,
             {{"Param", {param}},
              {"Grad",
               {Variable(SelectedRows(6, {2}, Tensor::FromVector<double>({2, 2}, {1, 1, 1, 1})))}},
              {"LearningRate", {lr}}},
             "ParamOut"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "op 'sgd': Grad 'w@GRAD' has 1 rows but a value of shape [2, 2]"));
  EXPECT_THAT(
      RunFor(GetParam(), kSgd,
             {{"Param", {param}}, {"Grad", {param}}, {"LearningRate", {Var<double>({1}, {0.1})}}},
             "ParamOut"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "op 'sgd': LearningRate 'lr' must be float32 with one element, got "
               "float64[1]"));
  EXPECT_THAT(RunFor(GetParam(), kSgd,
                     {{"Param", {param}},
                      {"Grad", {Var<double>({12}, std::vector<double>(12, 0))}},
                      {"LearningRate", {lr}}},
                     "ParamOut"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Grad 'w@GRAD' is float64[12] but Param 'w' is float64[6, 2]")));
}

// ---------------------------------------------------------------- shape, slice

TEST_P(KernelSemantics, ShapeWritesInt32DimsOnTheHost) {
  ASSERT_OK_AND_ASSIGN(Variable out,
                       RunFor(GetParam(), Op("shape"),
                              {{"Input", {Var<bool>({1, 3, 5, 5}, std::vector<bool>(75))}}}));
  EXPECT_TRUE(out.tensor().place().is_host());
  EXPECT_EQ(out.tensor().dtype(), DataType::kInt32);
  EXPECT_THAT(out.tensor().ToVector<int32_t>(), ElementsAre(1, 3, 5, 5));
  ASSERT_OK_AND_ASSIGN(out, RunFor(GetParam(), Op("shape"), {{"Input", {Var<float>({}, {1})}}}));
  EXPECT_EQ(out.tensor().shape(), Shape({0}));
}

absl::StatusOr<std::vector<int64_t>> SliceOf(const Place& place, std::vector<int64_t> x,
                                             std::vector<int64_t> axes, std::vector<int64_t> starts,
                                             std::vector<int64_t> ends) {
  const int64_t n = static_cast<int64_t>(x.size());
  ASSIGN_OR_RETURN(Variable out,
                   RunFor(place, Op("slice", {{"axes", axes}, {"starts", starts}, {"ends", ends}}),
                          {{"Input", {Var<int64_t>({n}, x)}}}));
  return HostValues<int64_t>(out.tensor());
}

TEST_P(KernelSemantics, SliceClampsNegativeAndOutOfRangeBounds) {
  const std::vector<int64_t> x = {0, 1, 2, 3, 4};
  EXPECT_THAT(SliceOf(GetParam(), x, {0}, {1}, {3}), IsOkAndHolds(ElementsAre(1, 2)));
  EXPECT_THAT(SliceOf(GetParam(), x, {0}, {-2}, {5}), IsOkAndHolds(ElementsAre(3, 4)));
  EXPECT_THAT(SliceOf(GetParam(), x, {0}, {1}, {-1}), IsOkAndHolds(ElementsAre(1, 2, 3)));
  EXPECT_THAT(SliceOf(GetParam(), x, {0}, {-100}, {100}), IsOkAndHolds(ElementsAreArray(x)));
  EXPECT_THAT(SliceOf(GetParam(), x, {0}, {int64_t{1} << 40}, {int64_t{1} << 41}),
              IsOkAndHolds(ElementsAre()));
  EXPECT_THAT(SliceOf(GetParam(), x, {-1}, {3}, {1}), IsOkAndHolds(ElementsAre()));
  EXPECT_THAT(SliceOf(GetParam(), x, {0}, {-3}, {-4}), IsOkAndHolds(ElementsAre()));
  EXPECT_THAT(SliceOf(GetParam(), x, {0, 0}, {0, 1}, {1, 2}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'slice': axis 0 appears twice in axes [0, 0] for Input [5]"));
  EXPECT_THAT(SliceOf(GetParam(), x, {1}, {0}, {1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("op 'slice': axis 1 is out of range for Input [5]")));
  EXPECT_THAT(SliceOf(GetParam(), x, {0}, {0}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("axes, starts and ends must have the same length")));
}

// ------------------------------------------------------------------ crop_tensor

TEST_P(KernelSemantics, CropTensorReadsShapeOnTheHostAndRejectsTooLargeCrops) {
  std::vector<float> x(1 * 3 * 8 * 8);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  const Variable xv = Var<float>({1, 3, 8, 8}, x);
  ASSERT_OK_AND_ASSIGN(
      Variable out,
      RunFor(GetParam(), Op("crop_tensor", {{"offsets", std::vector<int64_t>{0, 1, 2, 3}}}),
             {{"X", {xv}}, {"Shape", {Var<int32_t>({4}, {1, -1, 1, 2})}}}));
  EXPECT_EQ(out.tensor().shape(), Shape({1, 2, 1, 2}));
  // Element [0, c, 2, 3 + k] of X is c * 64 + 2 * 8 + 3 + k.
  EXPECT_THAT(HostValues<float>(out.tensor()), ElementsAre(83, 84, 147, 148));
  EXPECT_THAT(RunFor(GetParam(), Op("crop_tensor"),
                     {{"X", {xv}}, {"Shape", {Var<int32_t>({4}, {1, 9, 8, 8})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'crop_tensor': crop of size 9 at offset 0 exceeds dim 1 of X "
                       "[1, 3, 8, 8]"));
  EXPECT_THAT(RunFor(GetParam(), Op("crop_tensor"),
                     {{"X", {xv}}, {"Shape", {Var<int64_t>({4}, {1, 3, 5, 5})}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'crop_tensor': Shape must be a 1-D int32 tensor, got int64[4]"));
  EXPECT_THAT(RunFor(GetParam(), Op("crop_tensor_grad"),
                     {{"X", {xv}},
                      {"Shape", {Var<int32_t>({4}, {1, 3, 5, 5})}},
                      {"Out@GRAD", {Var<float>({1, 3, 5, 4}, std::vector<float>(60))}}},
                     "X@GRAD"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'crop_tensor_grad': Out@GRAD is float32[1, 3, 5, 4], expected "
                       "float32[1, 3, 5, 5]"));
}

// --------------------------------------------------------------- uniform_random

absl::StatusOr<std::vector<double>> Uniform(const Place& place, int64_t n, int64_t seed) {
  ASSIGN_OR_RETURN(Variable out, RunFor(place,
                                        Op("uniform_random", {{"shape", std::vector<int64_t>{n}},
                                                              {"dtype", DataType::kFloat64},
                                                              {"min", -0.05},
                                                              {"max", 0.05},
                                                              {"seed", seed}}),
                                        {}));
  return HostValues<double>(out.tensor());
}

TEST_P(KernelSemantics, UniformRandomIsDeterministicInRangeAndSameOnEveryPlace) {
  // Large enough to be split across threads on a threaded backend.
  const int64_t n = int64_t{1} << 17;
  ASSERT_OK_AND_ASSIGN(std::vector<double> a, Uniform(GetParam(), n, 42));
  ASSERT_OK_AND_ASSIGN(std::vector<double> b, Uniform(GetParam(), n, 42));
  ASSERT_OK_AND_ASSIGN(std::vector<double> host, Uniform(CPUPlace(), n, 42));
  ASSERT_OK_AND_ASSIGN(std::vector<double> other, Uniform(GetParam(), n, 43));
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, host);
  EXPECT_NE(a, other);
  double sum = 0;
  for (double v : a) {
    ASSERT_GE(v, -0.05);
    ASSERT_LT(v, 0.05);
    sum += v;
  }
  EXPECT_NEAR(sum / n, 0.0, 5e-4);
}

}  // namespace
}  // namespace tandem
