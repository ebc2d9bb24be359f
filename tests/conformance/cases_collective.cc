// Cases of the collective ops on one rank (ring_id -1, the op's own group):
// c_allreduce_sum of a list with and without averaging, c_broadcast, and
// c_allgather of a dense tensor and of a SelectedRows gradient. Their
// behaviour across several ranks is tested by framework/parallel and
// tests/parallel.
#include <utility>

#include "absl/strings/str_cat.h"
#include "tests/conformance/case_util.h"
#include "tests/conformance/cases.h"

namespace tandem {

using case_util::Input;
using case_util::kFloats;
using case_util::kNumeric;
using case_util::Label;
using case_util::SetTolerance;
using reference::Array;

namespace {

reference::Array Scaled(const Array& a, double scale, DataType t) {
  Array out{a.shape, {}};
  for (double v : a.values) out.values.push_back(reference::Convert(v * scale, t));
  return out;
}

void AddAllReduceAndBroadcast(std::vector<ConformanceCase>* cases) {
  uint64_t seed = 41000;
  for (DataType t : kNumeric) {
    const bool floating = t == DataType::kFloat32 || t == DataType::kFloat64;
    for (double scale : floating ? std::vector<double>{1.0, 0.5} : std::vector<double>{1.0}) {
      auto [x0, a0] = Input(t, Shape({3, 5}), ++seed);
      auto [x1, a1] = Input(t, Shape({0}), ++seed);
      auto [x2, a2] = Input(t, Shape({1027}), ++seed);
      ConformanceCase c;
      c.op = "c_allreduce_sum";
      c.label = Label(c.op, t, absl::StrCat("[3, 5], [0], [1027] scale ", scale));
      c.inputs = {{"X", x0}, {"X", x1}, {"X", x2}};
      c.attrs = {{"scale", scale}};
      c.expected_lists["Out"] = {
          {t, Scaled(a0, scale, t)}, {t, Scaled(a1, scale, t)}, {t, Scaled(a2, scale, t)}};
      SetTolerance(&c, t);
      cases->push_back(std::move(c));
    }
    auto [x, a] = Input(t, Shape({2, 3}), ++seed);
    ConformanceCase b;
    b.op = "c_broadcast";
    b.label = Label(b.op, t, "[2, 3] root 0");
    b.inputs = {{"X", x}};
    b.expected_lists["Out"] = {{t, a}};
    cases->push_back(std::move(b));
  }
}

void AddAllGather(std::vector<ConformanceCase>* cases) {
  uint64_t seed = 42000;
  for (DataType t : kNumeric) {
    auto [x, a] = Input(t, Shape({4, 3}), ++seed);
    ConformanceCase c;
    c.op = "c_allgather";
    c.label = Label(c.op, t, "[4, 3]");
    c.inputs = {{"X", x}};
    c.expected["Out"] = {t, a};
    cases->push_back(std::move(c));
  }
  for (DataType t : kFloats) {
    // Rows {4, 1, 4} of a [6, 2] table, averaged over "one rank" by 0.25.
    auto [value, va] = Input(t, Shape({3, 2}), ++seed);
    const std::vector<int64_t> rows = {4, 1, 4};
    ConformanceCase c;
    c.op = "c_allgather";
    c.label = Label(c.op, t, "SelectedRows [6, 2] rows {4, 1, 4} scale 0.25");
    c.selected_rows_inputs = {{"X", SelectedRows(6, rows, value)}};
    c.attrs = {{"scale", 0.25}};
    Array dense{Shape({6, 2}), std::vector<double>(12, 0.0)};
    for (size_t i = 0; i < rows.size(); ++i) {
      for (int j = 0; j < 2; ++j) {
        dense.values[rows[i] * 2 + j] += reference::Convert(va.values[i * 2 + j] * 0.25, t);
      }
    }
    c.expected["Out"] = {t, dense};
    c.selected_rows_outputs = {"Out"};
    SetTolerance(&c, t, 2);
    cases->push_back(std::move(c));
  }
}

}  // namespace

void AddCollectiveCases(std::vector<ConformanceCase>* cases) {
  AddAllReduceAndBroadcast(cases);
  AddAllGather(cases);
}

}  // namespace tandem
