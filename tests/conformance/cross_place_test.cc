// Every kernel on every place other than the host against the cpu
// backend's result for the same inputs (sim:N, gpu:N; nothing runs when
// there is none): bit for bit where the backends promise it (sgd's sparse
// updates, the random generators, dropout's mask, layout ops, pooling,
// square_error_cost), else within the stated tolerance, across the shapes
// that select each backend's code paths (a warp, a block or a thread per
// line, chunked launches, odd and empty sizes); the same status and message
// for bad input on every place, which stays usable afterwards; and the
// copies RunOpEager makes (host-memory arguments are never copied).
// tests/conformance/conformance_test.cc checks every kernel against float64;
// this suite checks that the places agree with each other.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/device/device.h"
#include "framework/device/device_registry.h"
#include "framework/kernel/eager.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/tensor/selected_rows.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "ops/array/shape_fns.h"
#include "ops/math/shape_fns.h"
#include "tests/conformance/semantics.h"

namespace tandem {
namespace {

// Every available place but the host.
std::vector<Place> DevicePlaces() {
  std::vector<Place> places;
  for (const Place& p : DeviceRegistry::Global().AvailablePlaces()) {
    if (!p.is_host()) places.push_back(p);
  }
  return places;
}

// The place the running test checks, set by CrossPlace::SetUp; the helpers
// below are called from those tests only (one at a time).
Place& TestedPlace() {
  static Place* place = new Place();
  return *place;
}

Device* TestedDevice() {
  absl::StatusOr<Device*> d = DeviceRegistry::Global().GetDevice(TestedPlace());
  CHECK(d.ok()) << d.status();
  return *d;
}

// The host-to-device copies RunOpEager makes for `inputs` (all on the host)
// on the tested place: one per input variable whose argument the place's
// kernel of `op` does not read in host memory (HostMemory args are never
// copied).
int ExpectedHostToDeviceCopies(const std::string& op, const EagerInputs& inputs) {
  const KernelDef* def = nullptr;
  for (const KernelRegistration* k : KernelRegistry::Global().KernelsFor(op)) {
    if (k->def.device_type() == TestedPlace().type()) def = &k->def;
  }
  CHECK(def != nullptr) << op << " has no kernel on " << TestedPlace();
  int copies = 0;
  for (const auto& [arg, vars] : inputs) {
    if (!def->IsHostMemory(arg)) copies += static_cast<int>(vars.size());
  }
  return copies;
}

class CrossPlace : public ::testing::TestWithParam<Place> {
 protected:
  void SetUp() override {
    TestedPlace() = GetParam();
    ASSERT_OK(DeviceRegistry::Global().GetDevice(GetParam()).status());
  }
};

INSTANTIATE_TEST_SUITE_P(EveryDevice, CrossPlace, ::testing::ValuesIn(DevicePlaces()),
                         PlaceTestName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CrossPlace);

// ---------------------------------------------------------------------------
// Kernels against host computations.

// Deterministic small values, exact in every dtype (multiples of 1/4).
template <typename T>
std::vector<T> Values(int64_t n, int salt = 0) {
  std::vector<T> v(n);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = (i * 37 + salt * 11) % 23 - 11;
    if constexpr (std::is_floating_point_v<T>) {
      v[i] = static_cast<T>(k) / 4;
    } else {
      v[i] = static_cast<T>(k);
    }
  }
  return v;
}

template <typename T>
Variable HostVar(const Shape& s, const std::vector<T>& v) {
  return Variable(Tensor::FromVector<T>(s, v));
}

// Runs `op` on the tested place; returns each output copied to the host.
absl::StatusOr<std::map<std::string, Tensor>> RunOnPlace(OpDesc op, const EagerInputs& inputs) {
  absl::StatusOr<EagerOutputs> out = RunOpEager(std::move(op), TestedPlace(), inputs);
  if (!out.ok()) return out.status();
  std::map<std::string, Tensor> host;
  for (const auto& [arg, vars] : *out) {
    if (vars.empty()) continue;
    if (vars[0].tensor().place() != TestedPlace()) {
      return absl::InternalError(arg + " is not on " + TestedPlace().ToString());
    }
    absl::StatusOr<Tensor> t = CopyTensorTo(vars[0].tensor(), CPUPlace());
    if (!t.ok()) return t.status();
    host[arg] = *std::move(t);
  }
  return host;
}

OpDesc Op(const std::string& type, AttrMap attrs = {}) {
  OpDesc op;
  op.type = type;
  op.attrs = std::move(attrs);
  return op;
}

// numpy-style reference: element of `s` (right-aligned, size-1 dims
// broadcast) at output coordinates `coord`.
int64_t BroadcastIndex(const Shape& s, const Shape& out, const std::vector<int64_t>& coord) {
  int64_t offset = 0, stride = 1;
  for (int i = s.rank() - 1; i >= 0; --i) {
    if (s.dim(i) != 1) offset += coord[i + out.rank() - s.rank()] * stride;
    stride *= s.dim(i);
  }
  return offset;
}

std::vector<int64_t> Coord(const Shape& out, int64_t i) {
  std::vector<int64_t> c(out.rank());
  for (int d = out.rank() - 1; d >= 0; --d) {
    c[d] = i % out.dim(d);
    i /= out.dim(d);
  }
  return c;
}

struct AddCase {
  Shape x, y;
  int64_t axis;
};

const std::vector<AddCase>& AddCases() {
  static const auto* cases = new std::vector<AddCase>{
      {Shape({1023}), Shape({1023}), -1},     // same shape, odd size
      {Shape({4, 1023}), Shape({1023}), -1},  // row
      {Shape({3}), Shape({5, 3}), -1},        // X is the row
      {Shape({2, 3, 4}), Shape(), -1},        // scalar Y
      {Shape(), Shape(), -1},                 // 0-d
      {Shape({2, 3, 4}), Shape({3}), 1},      // axis
      {Shape({2, 3, 4}), Shape({2, 3}), 0},   // axis 0
      {Shape({4, 1, 5}), Shape({3, 1}), -1},  // both broadcast
      {Shape({2, 1, 3, 1, 2}), Shape({4, 1, 2, 1}), -1},
      {Shape({0, 3}), Shape({3}), -1},         // empty
      {Shape({600, 3}), Shape({600, 1}), -1},  // long column sums in the grad
      {Shape({300, 2}), Shape({2}), -1},       // long row sums in the grad
  };
  return *cases;
}

template <typename T>
void CheckAdd(const AddCase& c) {
  SCOPED_TRACE(absl::StrCat(DataTypeName(DataTypeOf<T>()), " ", c.x.ToString(), " + ",
                            c.y.ToString(), " axis ", c.axis));
  const std::vector<T> xv = Values<T>(c.x.num_elements(), 1);
  const std::vector<T> yv = Values<T>(c.y.num_elements(), 2);
  ASSERT_OK_AND_ASSIGN(Shape out_shape, BroadcastShapes("t", c.x, c.y, c.axis));
  ASSERT_OK_AND_ASSIGN(Shape y_aligned, AlignForBroadcast("t", c.x, c.y, c.axis));
  const EagerInputs in = {{"X", {HostVar(c.x, xv)}}, {"Y", {HostVar(c.y, yv)}}};
  ASSERT_OK_AND_ASSIGN(auto out, RunOnPlace(Op("elementwise_add", {{"axis", c.axis}}), in));
  const Tensor& o = out.at("Out");
  ASSERT_EQ(o.shape(), out_shape);
  for (int64_t i = 0; i < o.NumElements(); ++i) {
    const std::vector<int64_t> coord = Coord(out_shape, i);
    ASSERT_EQ(o.data<T>()[i], xv[BroadcastIndex(c.x, out_shape, coord)] +
                                  yv[BroadcastIndex(y_aligned, out_shape, coord)])
        << i;
  }

  // Gradient: Out@GRAD summed to each input's shape.
  const std::vector<T> g = Values<T>(out_shape.num_elements(), 3);
  EagerInputs gin = in;
  gin["Out@GRAD"] = {HostVar(out_shape, g)};
  ASSERT_OK_AND_ASSIGN(auto grads, RunOnPlace(Op("elementwise_add_grad", {{"axis", c.axis}}), gin));
  std::vector<T> dx(c.x.num_elements(), 0), dy(c.y.num_elements(), 0);
  for (int64_t i = 0; i < out_shape.num_elements(); ++i) {
    const std::vector<int64_t> coord = Coord(out_shape, i);
    dx[BroadcastIndex(c.x, out_shape, coord)] += g[i];
    dy[BroadcastIndex(y_aligned, out_shape, coord)] += g[i];
  }
  EXPECT_EQ(grads.at("X@GRAD").shape(), c.x);
  EXPECT_EQ(grads.at("Y@GRAD").shape(), c.y);
  EXPECT_EQ(grads.at("X@GRAD").ToVector<T>(), dx);
  EXPECT_EQ(grads.at("Y@GRAD").ToVector<T>(), dy);
}

TEST_P(CrossPlace, ElementwiseAddAndGradMatchHost) {
  for (const AddCase& c : AddCases()) {
    CheckAdd<float>(c);
    CheckAdd<double>(c);
    CheckAdd<int32_t>(c);
    CheckAdd<int64_t>(c);
  }
}

TEST_P(CrossPlace, ElementwiseAddGradComputesOnlyBoundOutputs) {
  OpDesc op = Op("elementwise_add_grad");
  op.outputs["X@GRAD"] = {"dx"};
  op.outputs["Y@GRAD"] = {};
  const EagerInputs in = {{"X", {HostVar<float>(Shape({2, 3}), Values<float>(6))}},
                          {"Y", {HostVar<float>(Shape({3}), Values<float>(3))}},
                          {"Out@GRAD", {HostVar<float>(Shape({2, 3}), Values<float>(6))}}};
  ASSERT_OK_AND_ASSIGN(auto out, RunOnPlace(op, in));
  EXPECT_EQ(out.count("Y@GRAD"), 0u);
  EXPECT_EQ(out.at("X@GRAD").ToVector<float>(), Values<float>(6));
}

TEST_P(CrossPlace, ElementwiseAddBadInputsAreInvalidArgument) {
  EXPECT_THAT(
      RunOnPlace(Op("elementwise_add"), {{"X", {HostVar<float>(Shape({2, 3}), Values<float>(6))}},
                                         {"Y", {HostVar<float>(Shape({4}), Values<float>(4))}}}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cannot be broadcast")));
  EXPECT_THAT(
      RunOnPlace(Op("elementwise_add"), {{"X", {HostVar<float>(Shape({2}), Values<float>(2))}},
                                         {"Y", {HostVar<double>(Shape({2}), Values<double>(2))}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("X is float32[2] but Y is float64[2]; cast one of them")));
  EXPECT_THAT(RunOnPlace(Op("elementwise_add_grad"),
                         {{"X", {HostVar<float>(Shape({2, 3}), Values<float>(6))}},
                          {"Y", {HostVar<float>(Shape({3}), Values<float>(3))}},
                          {"Out@GRAD", {HostVar<float>(Shape({3}), Values<float>(3))}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Out@GRAD is float32[3], expected float32[2, 3]")));
}

TEST_P(CrossPlace, MatmulBadInputsAreInvalidArgument) {
  EXPECT_THAT(RunOnPlace(Op("matmul"), {{"X", {HostVar<float>(Shape({2, 3}), Values<float>(6))}},
                                        {"Y", {HostVar<float>(Shape({4, 2}), Values<float>(8))}}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("inner dims differ")));
  EXPECT_THAT(
      RunOnPlace(Op("matmul"), {{"X", {HostVar<float>(Shape({2, 2, 3}), Values<float>(12))}},
                                {"Y", {HostVar<float>(Shape({3, 3, 2}), Values<float>(18))}}}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("batch dims")));
  EXPECT_THAT(
      RunOnPlace(Op("matmul"), {{"X", {HostVar<float>(Shape({2, 3}), Values<float>(6))}},
                                {"Y", {HostVar<double>(Shape({3, 2}), Values<double>(6))}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("X is float32[2, 3] but Y is float64[3, 2]")));
  EXPECT_THAT(RunOnPlace(Op("matmul_grad"),
                         {{"X", {HostVar<float>(Shape({2, 3}), Values<float>(6))}},
                          {"Y", {HostVar<float>(Shape({3, 2}), Values<float>(6))}},
                          {"Out@GRAD", {HostVar<float>(Shape({2, 3}), Values<float>(6))}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Out@GRAD is float32[2, 3], expected float32[2, 2]")));
}

template <typename T>
void CheckScale(const Shape& s, double scale, double bias, bool after) {
  SCOPED_TRACE(
      absl::StrCat(DataTypeName(DataTypeOf<T>()), s.ToString(), " ", scale, " ", bias, " ", after));
  const std::vector<T> xv = Values<T>(s.num_elements());
  ASSERT_OK_AND_ASSIGN(
      auto out,
      RunOnPlace(Op("scale", {{"scale", scale}, {"bias", bias}, {"bias_after_scale", after}}),
                 {{"X", {HostVar(s, xv)}}}));
  const Tensor& o = out.at("Out");
  ASSERT_EQ(o.shape(), s);
  for (int64_t i = 0; i < s.num_elements(); ++i) {
    // scale * x + bias is rounded once: one multiply-add (the gpu's LaunchScale).
    T want;
    if constexpr (std::is_floating_point_v<T>) {
      const T sc = static_cast<T>(scale), b = static_cast<T>(bias);
      const T sum = xv[i] + b;
      want = after ? std::fma(sc, xv[i], b) : sc * sum;
    } else {
      const double v = static_cast<double>(xv[i]), sum = v + bias;
      want = static_cast<T>(after ? std::fma(scale, v, bias) : scale * sum);
    }
    ASSERT_EQ(o.data<T>()[i], want) << i;
  }
}

TEST_P(CrossPlace, ScaleMatchesHost) {
  for (const Shape& s : {Shape({1023}), Shape(), Shape({0}), Shape({3, 4})}) {
    for (const bool after : {true, false}) {
      CheckScale<float>(s, 0.3, 1.7, after);
      CheckScale<double>(s, 0.3, 1.7, after);
      CheckScale<int32_t>(s, 0.5, 0.3, after);
      CheckScale<int64_t>(s, -2.5, 0.25, after);
    }
  }
}

// ---------------------------------------------------------------------------
// The nn, loss, optimizer, array and random kernels against the cpu
// backend's: the same op through RunOpEager on cpu and on the tested place.

// Outputs copied to the host, keyed "Out" (first variable), "Out[1]", ...:
// dense tensors, or SelectedRows whose value is on the host.
using HostOutputs = std::map<std::string, Variable>;

absl::StatusOr<HostOutputs> RunToHost(OpDesc op, const Place& place, const EagerInputs& inputs,
                                      EagerStats* stats = nullptr) {
  absl::StatusOr<EagerOutputs> out = RunOpEager(std::move(op), place, inputs, stats);
  if (!out.ok()) return out.status();
  HostOutputs host;
  for (const auto& [arg, vars] : *out) {
    for (size_t i = 0; i < vars.size(); ++i) {  // "Out", then "Out[1]", ...
      const Variable& v = vars[i];
      if (v.empty()) continue;
      const std::string key = i == 0 ? arg : absl::StrCat(arg, "[", i, "]");
      absl::StatusOr<Tensor> t = CopyTensorTo(*v.data_tensor(), CPUPlace());
      if (!t.ok()) return t.status();
      if (v.is_selected_rows()) {
        const SelectedRows& r = v.selected_rows();
        host[key] = Variable(SelectedRows(r.height(), r.rows(), *std::move(t)));
      } else {
        host[key] = Variable(*std::move(t));
      }
    }
  }
  return host;
}

std::vector<double> ToDoubles(const Tensor& t) {
  std::vector<double> v(t.NumElements());
  DispatchDataType(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < t.NumElements(); ++i) v[i] = static_cast<double>(t.data<T>()[i]);
  });
  return v;
}

// Every output alike: kind, rows, dtype, shape, and values within
// rtol * (1 + |cpu|), or bit for bit when rtol is 0.
void ExpectSameOutputs(const HostOutputs& cpu, const HostOutputs& got, double rtol) {
  ASSERT_EQ(cpu.size(), got.size());
  for (const auto& [arg, c] : cpu) {
    SCOPED_TRACE(arg);
    ASSERT_EQ(got.count(arg), 1u);
    const Variable& g = got.at(arg);
    ASSERT_EQ(g.is_selected_rows(), c.is_selected_rows());
    if (c.is_selected_rows()) {
      EXPECT_EQ(g.selected_rows().height(), c.selected_rows().height());
      EXPECT_EQ(g.selected_rows().rows(), c.selected_rows().rows());
    }
    const Tensor& ct = *c.data_tensor();
    const Tensor& gt = *g.data_tensor();
    ASSERT_EQ(gt.dtype(), ct.dtype());
    ASSERT_EQ(gt.shape(), ct.shape());
    if (rtol == 0) {
      EXPECT_EQ(std::memcmp(gt.raw_data(), ct.raw_data(), ct.NumBytes()), 0);
    }
    const std::vector<double> cv = ToDoubles(ct), gv = ToDoubles(gt);
    for (size_t i = 0; i < cv.size(); ++i) {
      ASSERT_NEAR(gv[i], cv[i], rtol * (1 + std::abs(cv[i]))) << "element " << i;
    }
  }
}

// Runs `op` on cpu and on the tested place with inputs made by `make_inputs`
// (fresh host tensors for each run, as sgd updates its Param in place) and
// compares.
template <typename MakeInputs>
void ExpectMatchesCpu(const OpDesc& op, MakeInputs&& make_inputs, double rtol) {
  ASSERT_OK_AND_ASSIGN(HostOutputs cpu, RunToHost(op, CPUPlace(), make_inputs()));
  ASSERT_OK_AND_ASSIGN(HostOutputs got, RunToHost(op, TestedPlace(), make_inputs()));
  ExpectSameOutputs(cpu, got, rtol);
}

// Both places fail alike: same code, same message.
void ExpectSameError(const OpDesc& op, const EagerInputs& in, absl::StatusCode code,
                     const std::string& message) {
  EXPECT_THAT(RunToHost(op, CPUPlace(), in), StatusIs(code, message));
  EXPECT_THAT(RunToHost(op, TestedPlace(), in), StatusIs(code, message));
}

template <typename T>
double Tol() {
  return std::is_same_v<T, float> ? 2e-6 : 1e-13;
}

Variable Ids(const Shape& s, const std::vector<int64_t>& v) {
  return Variable(Tensor::FromVector<int64_t>(s, v));
}

TEST_P(CrossPlace, LookupTableBadIdIsInvalidArgumentAndThePlaceStaysUsable) {
  const Shape w_shape({10, 3});
  const Variable w = HostVar<float>(w_shape, Values<float>(30));
  OpDesc op = Op("lookup_table");
  ExpectSameError(op, {{"Ids", {Ids(Shape({4}), {1, 2, 10, 3})}}, {"W", {w}}},
                  absl::StatusCode::kInvalidArgument,
                  "op 'lookup_table': id 10 at position 2 is out of range [0, 10) of table 'W_0'");
  // The first bad position is reported, whichever thread saw it first.
  std::vector<int64_t> many(5000, 4);
  many[4321] = -7;
  many[1234] = 12;
  many[4999] = 10;
  ExpectSameError(op, {{"Ids", {Ids(Shape({50, 100}), many)}}, {"W", {w}}},
                  absl::StatusCode::kInvalidArgument,
                  "op 'lookup_table': id 12 at position 1234 is out of range [0, 10) of table "
                  "'W_0'");
  // Named variables appear in the message.
  OpDesc named = Op("lookup_table");
  named.inputs["W"] = {"emb_w"};
  EXPECT_THAT(RunOnPlace(named, {{"Ids", {Ids(Shape({1}), {-1})}}, {"W", {w}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'lookup_table': id -1 at position 0 is out of range [0, 10) of table "
                       "'emb_w'"));
  // A table without columns still checks its ids.
  ExpectSameError(op,
                  {{"Ids", {Ids(Shape({2}), {0, 5})}}, {"W", {HostVar<float>(Shape({5, 0}), {})}}},
                  absl::StatusCode::kInvalidArgument,
                  "op 'lookup_table': id 5 at position 1 is out of range [0, 5) of table 'W_0'");
  // The gradients check their ids too, before anything else (as on the cpu).
  for (const bool sparse : {false, true}) {
    SCOPED_TRACE(sparse ? "sparse" : "dense");
    ExpectSameError(Op("lookup_table_grad", {{"is_sparse", sparse}}),
                    {{"Ids", {Ids(Shape({3}), {0, 9, 11})}},
                     {"W", {w}},
                     {"Out@GRAD", {HostVar<float>(Shape({2}), Values<float>(2))}}},
                    absl::StatusCode::kInvalidArgument,
                    "op 'lookup_table_grad': id 11 at position 2 is out of range [0, 10) of table "
                    "'W_0'");
  }

  // The place is fine afterwards: a good lookup gives the table's rows.
  ASSERT_OK_AND_ASSIGN(auto out,
                       RunOnPlace(op, {{"Ids", {Ids(Shape({4}), {1, 2, 9, 3})}}, {"W", {w}}}));
  const std::vector<float> table = Values<float>(30);
  std::vector<float> want;
  for (int64_t id : {1, 2, 9, 3}) {
    want.insert(want.end(), table.begin() + id * 3, table.begin() + id * 3 + 3);
  }
  EXPECT_EQ(out.at("Out").shape(), Shape({4, 3}));
  EXPECT_EQ(out.at("Out").ToVector<float>(), want);
  EXPECT_OK(TestedDevice()->Synchronize());
}

template <typename T>
void CheckLookup(const Shape& ids_shape, const std::vector<int64_t>& ids, const Shape& w_shape,
                 int64_t padding_idx) {
  SCOPED_TRACE(absl::StrCat(DataTypeName(DataTypeOf<T>()), " ids ", ids_shape.ToString(), " W ",
                            w_shape.ToString(), " padding_idx ", padding_idx));
  std::vector<int64_t> out_dims = ids_shape.ToVector();
  out_dims.push_back(w_shape.dim(1));
  const Shape out_shape(out_dims);
  for (const bool sparse : {false, true}) {
    const AttrMap attrs = {{"is_sparse", sparse}, {"padding_idx", padding_idx}};
    auto inputs = [&] {
      return EagerInputs{
          {"Ids", {Ids(ids_shape, ids)}},
          {"W", {HostVar<T>(w_shape, Values<T>(w_shape.num_elements(), 1))}},
          {"Out@GRAD", {HostVar<T>(out_shape, Values<T>(out_shape.num_elements(), 2))}}};
    };
    ExpectMatchesCpu(
        Op("lookup_table", attrs),
        [&] {
          EagerInputs in = inputs();
          in.erase("Out@GRAD");
          return in;
        },
        0);
    // Dense too: repeated ids add up in position order on every place.
    ExpectMatchesCpu(Op("lookup_table_grad", attrs), inputs, 0);
    // Only what the kernel reads on the place is copied: W and Out@GRAD on
    // a gpu, whose kernel reads Ids in host memory; all three on sim.
    EagerStats stats;
    ASSERT_OK(RunOpEager(Op("lookup_table_grad", attrs), TestedPlace(), inputs(), &stats).status());
    EXPECT_EQ(stats.copies_h2d, ExpectedHostToDeviceCopies("lookup_table_grad", inputs()));
  }
}

TEST_P(CrossPlace, LookupTableAndGradMatchCpu) {
  const std::vector<int64_t> ids = {3, 0, 3, 7, 2, 3};
  for (const int64_t padding_idx : {int64_t{-1}, int64_t{3}, int64_t{-5}}) {
    CheckLookup<float>(Shape({2, 3}), ids, Shape({8, 5}), padding_idx);
    CheckLookup<double>(Shape({6}), ids, Shape({8, 5}), padding_idx);
  }
  CheckLookup<float>(Shape({6}), ids, Shape({8, 5}), 6);      // padding row not hit
  CheckLookup<float>(Shape(), {4}, Shape({8, 5}), -1);        // 0-d ids
  CheckLookup<float>(Shape({0}), {}, Shape({8, 5}), -1);      // no ids
  CheckLookup<double>(Shape({0, 2}), {}, Shape({0, 3}), -1);  // empty table
  // The gpu's dense gradient orders the ids by counting over a small table's
  // rows and by sorting (id, position) pairs for a large one: both keep the
  // position order of repeated ids.
  std::vector<int64_t> tokens(4096);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = (i * 37 + i / 100) % 256;
  CheckLookup<float>(Shape({8, 512}), tokens, Shape({256, 4}), 32);
  CheckLookup<float>(Shape({7}), {19999, 5, 19999, 0, 12345, 5, 7}, Shape({20000, 2}), 5);
  CheckLookup<double>(Shape({7}), {19999, 5, 19999, 0, 12345, 5, 7}, Shape({20000, 2}), -1);
  CheckLookup<float>(Shape({3}), {1, 1, 0}, Shape({4, 0}), -1);  // no columns
  std::vector<int64_t> many(3000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = (i * 7919) % 37;  // many repeats
  CheckLookup<float>(Shape({30, 100}), many, Shape({37, 129}), 5);
  CheckLookup<double>(Shape({3000}), many, Shape({37, 33}), -1);
}

// Values whose float sums depend on the order of the additions (magnitudes
// from 1e-3 to 1e3, not multiples of a power of two).
std::vector<float> OrderSensitiveValues(int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) {
    v[i] = static_cast<float>(std::sin(0.7 * i) * std::pow(10.0, i % 7 - 3));
  }
  return v;
}

// The dense gradient of rows hit thousands of times is bit-identical to the
// host kernel's, which adds each row's updates in position order; a sum in
// another order (what atomics give) differs, so the check is sharp.
TEST_P(CrossPlace, DenseLookupGradAddsRepeatedIdsInPositionOrder) {
  constexpr int64_t kRows = 11, kDim = 67, kIds = 4000;
  std::vector<int64_t> ids(kIds);
  for (int64_t p = 0; p < kIds; ++p) ids[p] = (p * p + 3 * p) % kRows;
  const std::vector<float> dout = OrderSensitiveValues(kIds * kDim);
  const AttrMap attrs = {{"is_sparse", false}, {"padding_idx", int64_t{2}}};
  auto inputs = [&] {
    return EagerInputs{{"Ids", {Ids(Shape({kIds}), ids)}},
                       {"W", {HostVar<float>(Shape({kRows, kDim}), Values<float>(kRows * kDim))}},
                       {"Out@GRAD", {HostVar<float>(Shape({kIds, kDim}), dout)}}};
  };
  ExpectMatchesCpu(Op("lookup_table_grad", attrs), inputs, 0);

  ASSERT_OK_AND_ASSIGN(HostOutputs cpu,
                       RunToHost(Op("lookup_table_grad", attrs), CPUPlace(), inputs()));
  const float* dw = cpu.at("W@GRAD").tensor().data<float>();
  int reversed_differs = 0;
  for (int64_t row = 0; row < kRows; ++row) {
    for (int64_t j = 0; j < kDim; ++j) {
      float forward = 0, reversed = 0;
      for (int64_t p = 0; p < kIds; ++p) {
        if (ids[p] == row && row != 2) forward += dout[p * kDim + j];
        const int64_t q = kIds - 1 - p;
        if (ids[q] == row && row != 2) reversed += dout[q * kDim + j];
      }
      ASSERT_EQ(dw[row * kDim + j], forward) << "row " << row << " column " << j;
      reversed_differs += reversed != forward;
    }
  }
  EXPECT_GT(reversed_differs, kRows * kDim / 10);  // the order shows in the bits
}

template <typename T>
void CheckL2(const Shape& s, int64_t axis, double epsilon) {
  SCOPED_TRACE(absl::StrCat(DataTypeName(DataTypeOf<T>()), s.ToString(), " axis ", axis));
  const AttrMap attrs = {{"axis", axis}, {"epsilon", epsilon}};
  const int64_t n = s.num_elements();
  ExpectMatchesCpu(
      Op("l2_normalize", attrs),
      [&] {
        return EagerInputs{{"X", {HostVar<T>(s, Values<T>(n, 1))}}};
      },
      Tol<T>());
  // Out from the cpu kernel, so both gradients read the same values.
  ASSERT_OK_AND_ASSIGN(HostOutputs fwd, RunToHost(Op("l2_normalize", attrs), CPUPlace(),
                                                  {{"X", {HostVar<T>(s, Values<T>(n, 1))}}}));
  ExpectMatchesCpu(
      Op("l2_normalize_grad", attrs),
      [&] {
        return EagerInputs{{"X", {HostVar<T>(s, Values<T>(n, 1))}},
                           {"Out", {fwd.at("Out")}},
                           {"Out@GRAD", {HostVar<T>(s, Values<T>(n, 2))}}};
      },
      Tol<T>() * 10);
}

TEST_P(CrossPlace, L2NormalizeAndGradMatchCpu) {
  for (const int64_t axis : {int64_t{-1}, int64_t{0}}) {
    CheckL2<float>(Shape({4, 5}), axis, 1e-10);
    CheckL2<double>(Shape({4, 5}), axis, 1e-10);
  }
  CheckL2<float>(Shape({3, 4, 5}), 1, 1e-10);   // the gpu: warp per line, strided
  CheckL2<double>(Shape({2, 3000}), 1, 1e-10);  // block per line
  CheckL2<float>(Shape({2, 3000}), -1, 1e-10);
  CheckL2<float>(Shape({3, 40, 64}), 1, 1e-10);    // thread per line (inner 64)
  CheckL2<double>(Shape({2, 2500, 33}), 1, 1e-6);  // long and strided
  CheckL2<float>(Shape({1, 150}), -1, 1e-10);      // the embedding workload's
  CheckL2<float>(Shape({7}), 0, 1e-3);
  CheckL2<float>(Shape({0, 3}), 1, 1e-10);
  CheckL2<double>(Shape({3, 0}), 1, 1e-10);
  CheckL2<float>(Shape({4, 3}), 1, 0);
}

TEST_P(CrossPlace, SquareErrorCostAndGradMatchCpuBitwise) {
  for (const Shape& s :
       {Shape({1, 150}), Shape({1023}), Shape(), Shape({0, 4}), Shape({3, 5, 7})}) {
    SCOPED_TRACE(s.ToString());
    const int64_t n = s.num_elements();
    auto inputs = [&](auto tag) {
      using T = typename decltype(tag)::type;
      return EagerInputs{{"X", {HostVar<T>(s, Values<T>(n, 1))}},
                         {"Y", {HostVar<T>(s, Values<T>(n, 2))}},
                         {"Out@GRAD", {HostVar<T>(s, Values<T>(n, 3))}}};
    };
    for (DataType dtype : kFloatTypes) {
      DispatchDataType(dtype, [&](auto tag) {
        auto fwd_inputs = [&] {
          EagerInputs in = inputs(tag);
          in.erase("Out@GRAD");
          return in;
        };
        ExpectMatchesCpu(Op("square_error_cost"), fwd_inputs, 0);
        ExpectMatchesCpu(
            Op("square_error_cost_grad"), [&] { return inputs(tag); }, 0);
        OpDesc only_y = Op("square_error_cost_grad");
        only_y.outputs["Y@GRAD"] = {"dy"};
        ExpectMatchesCpu(
            only_y, [&] { return inputs(tag); }, 0);
      });
    }
  }
  ExpectSameError(Op("square_error_cost"),
                  {{"X", {HostVar<float>(Shape({2, 3}), Values<float>(6))}},
                   {"Y", {HostVar<float>(Shape({3, 2}), Values<float>(6))}}},
                  absl::StatusCode::kInvalidArgument,
                  "op 'square_error_cost': X is float32[2, 3] but Y is float32[3, 2]; they must "
                  "have the same dtype and shape");
}

TEST_P(CrossPlace, MeanAndGradMatchCpu) {
  for (const Shape& s : {Shape({1}), Shape(), Shape({1, 150}), Shape({1023}), Shape({300, 1001}),
                         Shape({(1 << 22) + 7})}) {
    SCOPED_TRACE(s.ToString());
    const int64_t n = s.num_elements();
    ExpectMatchesCpu(
        Op("mean"),
        [&] {
          return EagerInputs{{"X", {HostVar<float>(s, Values<float>(n, 1))}}};
        },
        1e-6);
    ExpectMatchesCpu(
        Op("mean"),
        [&] {
          return EagerInputs{{"X", {HostVar<double>(s, Values<double>(n, 1))}}};
        },
        1e-14);
    ExpectMatchesCpu(
        Op("mean_grad"),
        [&] {
          return EagerInputs{{"X", {HostVar<float>(s, Values<float>(n, 1))}},
                             {"Out@GRAD", {HostVar<float>(Shape({1}), {0.7f})}}};
        },
        0);
  }
  ExpectSameError(Op("mean"), {{"X", {HostVar<float>(Shape({3, 0}), {})}}},
                  absl::StatusCode::kInvalidArgument, "op 'mean': X is empty");
}

// Param for sgd tests: fresh host values each call (sgd updates in place).
template <typename T>
Variable Param(const Shape& s) {
  return HostVar<T>(s, Values<T>(s.num_elements(), 5));
}

Variable LearningRate(float lr) { return Variable(Tensor::FromVector<float>(Shape({1}), {lr})); }

template <typename T>
void CheckSgd(const Shape& param_shape, const std::vector<int64_t>& rows) {
  SCOPED_TRACE(absl::StrCat(DataTypeName(DataTypeOf<T>()), param_shape.ToString(), " ", rows.size(),
                            " rows"));
  const float lr = 0.37f;
  // Dense.
  ExpectMatchesCpu(
      Op("sgd"),
      [&] {
        return EagerInputs{
            {"Param", {Param<T>(param_shape)}},
            {"Grad", {HostVar<T>(param_shape, Values<T>(param_shape.num_elements(), 6))}},
            {"LearningRate", {LearningRate(lr)}}};
      },
      0);
  // Sparse: repeated rows apply in order, as on the cpu: bit for bit.
  std::vector<int64_t> value_dims = param_shape.ToVector();
  value_dims[0] = static_cast<int64_t>(rows.size());
  const Shape value_shape(value_dims);
  auto sparse_inputs = [&] {
    return EagerInputs{
        {"Param", {Param<T>(param_shape)}},
        {"Grad",
         {Variable(SelectedRows(
             param_shape.dim(0), rows,
             Tensor::FromVector<T>(value_shape, Values<T>(value_shape.num_elements(), 7))))}},
        {"LearningRate", {LearningRate(lr)}}};
  };
  ExpectMatchesCpu(Op("sgd"), sparse_inputs, 0);
  // ParamOut is Param's (device) tensor; the learning rate is not copied.
  EagerStats stats;
  ASSERT_OK_AND_ASSIGN(EagerOutputs out,
                       RunOpEager(Op("sgd"), TestedPlace(), sparse_inputs(), &stats));
  EXPECT_EQ(out.at("ParamOut")[0].tensor().place(), TestedPlace());
  EXPECT_EQ(stats.copies_h2d, 2);  // Param and Grad's value, not LearningRate
  EXPECT_EQ(stats.copies_h2d, ExpectedHostToDeviceCopies("sgd", sparse_inputs()));
}

TEST_P(CrossPlace, SgdDenseAndSparseWithRepeatedRowsMatchCpuBitwise) {
  CheckSgd<float>(Shape({8, 5}), {3, 1, 3, 3, 0});
  CheckSgd<double>(Shape({8, 5}), {3, 1, 3, 3, 0});
  CheckSgd<float>(Shape({8, 2, 3}), {7});
  CheckSgd<float>(Shape({8, 5}), {});
  CheckSgd<float>(Shape({0, 5}), {});
  CheckSgd<float>(Shape({8, 0}), {1, 1});
  // Many updates to few rows (one launch whatever their number), one row
  // throughout, and long rows.
  std::vector<int64_t> many(1000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = (i * 31) % 7;
  CheckSgd<float>(Shape({7, 300}), many);
  CheckSgd<double>(Shape({9, 3}), many);
  std::vector<int64_t> one_row(500, 4);
  CheckSgd<float>(Shape({5, 1000}), one_row);
  // The embedding-offload workload's shape: 4096 rows of 150 from a larger table, some repeated,
  // and rows that differ only in high key bits (multiples of 2^12).
  std::vector<int64_t> batch(4096);
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i] = i % 5 == 0 ? static_cast<int64_t>(i % 7) << 12 : (i * 7919) % 30011;
  }
  CheckSgd<float>(Shape({30011, 150}), batch);
}

// The sparse update alone (the gpu groups its rows on the device: sort, run
// lengths, one launch), bit for bit against the cpu.
template <typename T>
void CheckSparseSgd(const Shape& param_shape, const std::vector<int64_t>& rows) {
  std::vector<int64_t> value_dims = param_shape.ToVector();
  value_dims[0] = static_cast<int64_t>(rows.size());
  const Shape value_shape(value_dims);
  ExpectMatchesCpu(
      Op("sgd"),
      [&] {
        return EagerInputs{
            {"Param", {Param<T>(param_shape)}},
            {"Grad",
             {Variable(SelectedRows(
                 param_shape.dim(0), rows,
                 Tensor::FromVector<T>(value_shape, Values<T>(value_shape.num_elements(), 8))))}},
            {"LearningRate", {LearningRate(0.37f)}}};
      },
      0);
}

TEST_P(CrossPlace, SgdSparseRowSetsOfEveryBatchMatchCpuBitwise) {
  const int64_t height = 70001;  // room for 65536 distinct rows; ids need 17 bits
  const Shape param_shape({height, 3});
  // On the gpu 4096 rows and fewer of at most 256 columns are grouped by comparing ids,
  // wider ones by one block's sort, more rows by a device-wide sort.
  for (const int64_t batch : {1, 2, 7, 4096, 4097, 65536}) {
    std::vector<int64_t> all_same(batch, 12345), distinct(batch), random(batch), padding(batch);
    uint64_t state = 88172645463325252ull + static_cast<uint64_t>(batch);
    for (int64_t i = 0; i < batch; ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      distinct[i] = (i * 7919) % height;  // 7919 is prime to 70001: no repeats
      random[i] = static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(height));
      // Every other id the padding row (the table's last: the highest key bit set).
      padding[i] = i % 2 == 0 ? height - 1 : random[i];
    }
    const std::vector<std::pair<const char*, const std::vector<int64_t>*>> sets = {
        {"all duplicates", &all_same},
        {"no duplicates", &distinct},
        {"random", &random},
        {"padding row", &padding}};
    for (const auto& [name, rows] : sets) {
      SCOPED_TRACE(absl::StrCat("batch ", batch, ", ", name));
      CheckSparseSgd<float>(param_shape, *rows);
      CheckSparseSgd<double>(param_shape, *rows);
    }
  }
  // A one-row table (a one-bit key) and rows longer than a block of threads.
  CheckSparseSgd<float>(Shape({1, 5}), std::vector<int64_t>(300, 0));
  CheckSparseSgd<double>(Shape({3, 700}), {2, 0, 2, 1, 2});
  // 4096 rows of 300 columns (wider than the comparing path takes), repeats among them.
  std::vector<int64_t> wide(4096);
  for (int64_t i = 0; i < 4096; ++i) wide[i] = (i * 7919) % 3001;
  CheckSparseSgd<float>(Shape({3001, 300}), wide);
}

TEST_P(CrossPlace, SgdBadSparseGradientsAreInvalidArgument) {
  const Shape param_shape({4, 2});
  auto inputs = [&](std::vector<int64_t> rows, const Shape& value_shape) {
    return EagerInputs{
        {"Param", {Param<float>(param_shape)}},
        {"Grad",
         {Variable(SelectedRows(
             4, std::move(rows),
             Tensor::FromVector<float>(value_shape, Values<float>(value_shape.num_elements()))))}},
        {"LearningRate", {LearningRate(0.1f)}}};
  };
  ExpectSameError(Op("sgd"), inputs({0, 4, 1}, Shape({3, 2})), absl::StatusCode::kInvalidArgument,
                  "op 'sgd': row 4 at position 1 of Grad 'Grad_0' is out of range [0, 4) of Param "
                  "'Param_0'");
  ExpectSameError(Op("sgd"), inputs({0, 1}, Shape({3, 2})), absl::StatusCode::kInvalidArgument,
                  "op 'sgd': Grad 'Grad_0' has 2 rows but a value of shape [3, 2]");
  // Far in a long gradient, and negative.
  std::vector<int64_t> many(5000, 3);
  many[4321] = 17;
  ExpectSameError(Op("sgd"), inputs(many, Shape({5000, 2})), absl::StatusCode::kInvalidArgument,
                  "op 'sgd': row 17 at position 4321 of Grad 'Grad_0' is out of range [0, 4) of "
                  "Param 'Param_0'");
  ExpectSameError(Op("sgd"), inputs({2, -1}, Shape({2, 2})), absl::StatusCode::kInvalidArgument,
                  "op 'sgd': row -1 at position 1 of Grad 'Grad_0' is out of range [0, 4) of "
                  "Param 'Param_0'");
}

// An adam op binding its in-place outputs (and ParamCastOut, the optional
// 16-bit working copy, when `working_copy`).
OpDesc AdamOp(AttrMap attrs, bool working_copy = false) {
  OpDesc op = Op("adam", std::move(attrs));
  for (const char* arg : {"ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut"}) {
    op.outputs[arg] = {absl::StrCat(arg, "_0")};
  }
  if (working_copy) op.outputs["ParamCastOut"] = {"ParamCastOut_0"};
  return op;
}

// Momentum and adam on dense and sparse gradients: the same updates as on the
// cpu, up to how each compiler contracts multiply-adds.
template <typename T>
void CheckMomentumAndAdam(const Shape& param_shape, const std::vector<int64_t>& rows) {
  SCOPED_TRACE(absl::StrCat(DataTypeName(DataTypeOf<T>()), param_shape.ToString(), " ", rows.size(),
                            " rows"));
  const int64_t n = param_shape.num_elements();
  std::vector<int64_t> value_dims = param_shape.ToVector();
  value_dims[0] = static_cast<int64_t>(rows.size());
  const Shape value_shape(value_dims);
  for (const bool sparse : {false, true}) {
    SCOPED_TRACE(sparse ? "sparse" : "dense");
    auto grad = [&] {
      if (!sparse) return HostVar<T>(param_shape, Values<T>(n, 6));
      return Variable(SelectedRows(
          param_shape.dim(0), rows,
          Tensor::FromVector<T>(value_shape, Values<T>(value_shape.num_elements(), 7))));
    };
    for (const bool nesterov : {false, true}) {
      ExpectMatchesCpu(
          Op("momentum", {{"mu", 0.875}, {"use_nesterov", nesterov}}),
          [&] {
            return EagerInputs{{"Param", {Param<T>(param_shape)}},
                               {"Grad", {grad()}},
                               {"Velocity", {HostVar<T>(param_shape, Values<T>(n, 8))}},
                               {"LearningRate", {LearningRate(0.37f)}}};
          },
          Tol<T>());
    }
    for (const bool decoupled : {false, true}) {
      auto inputs = [&] {
        std::vector<T> m2 = Values<T>(n, 9);
        for (T& v : m2) v = std::abs(v);
        return EagerInputs{{"Param", {Param<T>(param_shape)}},
                           {"Grad", {grad()}},
                           {"LearningRate", {LearningRate(0.37f)}},
                           {"Moment1", {HostVar<T>(param_shape, Values<T>(n, 8))}},
                           {"Moment2", {HostVar<T>(param_shape, m2)}},
                           {"Beta1Pow", {HostVar<T>(Shape({1}), {T(0.729)})}},
                           {"Beta2Pow", {HostVar<T>(Shape({1}), {T(0.997)})}}};
      };
      const OpDesc adam = AdamOp({{"weight_decay", 0.25}, {"decoupled_weight_decay", decoupled}});
      ExpectMatchesCpu(adam, inputs, Tol<T>() * 4);
      // The beta powers stay in host memory and advance there.
      ASSERT_OK_AND_ASSIGN(EagerOutputs out, RunOpEager(adam, TestedPlace(), inputs()));
      const Tensor& b1p = out.at("Beta1PowOut")[0].tensor();
      EXPECT_EQ(b1p.place(), CPUPlace());
      EXPECT_EQ(b1p.data<T>()[0], T(0.729) * T(0.9));
      EXPECT_EQ(out.at("ParamOut")[0].tensor().place(), TestedPlace());
    }
  }
}

TEST_P(CrossPlace, MomentumAndAdamMatchCpu) {
  CheckMomentumAndAdam<float>(Shape({8, 5}), {3, 1, 3, 3, 0});
  CheckMomentumAndAdam<double>(Shape({8, 5}), {3, 1, 3, 3, 0});
  CheckMomentumAndAdam<float>(Shape({8, 0}), {1, 1});
  CheckMomentumAndAdam<float>(Shape({6, 3}), {});
  CheckMomentumAndAdam<double>(Shape({1023}), {5});
  // Rows whose value rows span several gpu launches (kSgdEntriesPerLaunch).
  std::vector<int64_t> many(1000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = i < 500 ? 4 : (i * 31) % 7;
  CheckMomentumAndAdam<float>(Shape({7, 130}), many);
  CheckMomentumAndAdam<double>(Shape({9, 3}), many);
}

// adam's 16-bit working copy (ParamCastOut): the updated float32 Param
// rounded as cast rounds, bit for bit, on every place (a size that is no
// multiple of a vector's width); a skipped step (SkipUpdate) rounds the
// unchanged Param; a float64 Param or a sparse Grad is refused alike.
TEST_P(CrossPlace, AdamWorkingCopyIsTheUpdatedParamRoundedAsCastRounds) {
  const Shape s({37, 5});
  const int64_t n = s.num_elements();
  std::vector<float> m2 = Values<float>(n, 9);
  for (float& v : m2) v = std::abs(v);
  for (const DataType dtype : {DataType::kBFloat16, DataType::kFloat16}) {
    for (const bool skip : {false, true}) {
      SCOPED_TRACE(absl::StrCat(DataTypeName(dtype), skip ? " skipped" : ""));
      EagerInputs in = {{"Param", {Param<float>(s)}},
                        {"Grad", {HostVar<float>(s, Values<float>(n, 6))}},
                        {"LearningRate", {LearningRate(0.37f)}},
                        {"Moment1", {HostVar<float>(s, Values<float>(n, 8))}},
                        {"Moment2", {HostVar<float>(s, m2)}},
                        {"Beta1Pow", {HostVar<float>(Shape({1}), {0.729f})}},
                        {"Beta2Pow", {HostVar<float>(Shape({1}), {0.997f})}},
                        {"GradScale", {HostVar<float>(Shape({1}), {0.5f})}}};
      if (skip) {
        in["SkipUpdate"] = {Variable(Tensor::FromVector<bool>(Shape({1}), {true}))};
      }
      ASSERT_OK_AND_ASSIGN(EagerOutputs out, RunOpEager(AdamOp({{"param_cast_dtype", dtype}}, true),
                                                        TestedPlace(), in));
      const Tensor& copy_there = out.at("ParamCastOut")[0].tensor();
      EXPECT_EQ(copy_there.place(), TestedPlace());
      ASSERT_EQ(copy_there.dtype(), dtype);
      ASSERT_OK_AND_ASSIGN(Tensor copy, CopyTensorTo(copy_there, CPUPlace()));
      ASSERT_OK_AND_ASSIGN(Tensor param, CopyTensorTo(out.at("ParamOut")[0].tensor(), CPUPlace()));
      const std::vector<float> before = Values<float>(n, 5);
      int changed = 0;
      for (int64_t i = 0; i < n; ++i) {
        const float p = param.data<float>()[i];
        changed += p != before[i];
        const uint16_t want = dtype == DataType::kBFloat16 ? bfloat16(p).bits : float16(p).bits;
        const uint16_t got = dtype == DataType::kBFloat16 ? copy.data<bfloat16>()[i].bits
                                                          : copy.data<float16>()[i].bits;
        ASSERT_EQ(got, want) << "element " << i << " of " << p;
      }
      EXPECT_EQ(changed > 0, !skip);
    }
  }
  ExpectSameError(AdamOp({}, true),
                  {{"Param", {Param<double>(s)}},
                   {"Grad", {HostVar<double>(s, Values<double>(n))}},
                   {"LearningRate", {LearningRate(0.1f)}},
                   {"Moment1", {HostVar<double>(s, Values<double>(n))}},
                   {"Moment2", {HostVar<double>(s, std::vector<double>(n, 1))}},
                   {"Beta1Pow", {HostVar<double>(Shape({1}), {0.5})}},
                   {"Beta2Pow", {HostVar<double>(Shape({1}), {0.5})}}},
                  absl::StatusCode::kInvalidArgument,
                  "op 'adam': ParamCastOut 'ParamCastOut_0' needs a float32 Param with a dense "
                  "Grad and param_cast_dtype bfloat16 or float16; got Param float64, "
                  "param_cast_dtype bfloat16");
}

TEST_P(CrossPlace, AdamBadBetaPowIsInvalidArgument) {
  const Shape s({2, 3});
  ExpectSameError(AdamOp({}),
                  {{"Param", {Param<float>(s)}},
                   {"Grad", {HostVar<float>(s, Values<float>(6))}},
                   {"LearningRate", {LearningRate(0.1f)}},
                   {"Moment1", {HostVar<float>(s, Values<float>(6))}},
                   {"Moment2", {HostVar<float>(s, std::vector<float>(6, 1))}},
                   {"Beta1Pow", {HostVar<float>(Shape({1}), {1.0f})}},
                   {"Beta2Pow", {HostVar<float>(Shape({1}), {0.5f})}}},
                  absl::StatusCode::kInvalidArgument,
                  "op 'adam': Beta1Pow 'Beta1Pow_0' is 1; it must be in [0, 1) (beta^step)");
}

TEST_P(CrossPlace, GaussianRandomMatchesCpu) {
  for (const int64_t seed : {int64_t{0}, int64_t{42}, std::numeric_limits<int64_t>::min()}) {
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{300, 257}, {1023}, {}, {3, 0}}) {
      for (DataType dtype : kFloatTypes) {
        SCOPED_TRACE(absl::StrCat(DataTypeName(dtype), " seed ", seed, " ", shape.size()));
        const AttrMap attrs = {
            {"shape", shape}, {"dtype", dtype}, {"mean", 0.5}, {"std", 2.0}, {"seed", seed}};
        // float32 bit for bit; float64 up to CUDA's log and cos.
        ExpectMatchesCpu(
            Op("gaussian_random", attrs), [] { return EagerInputs{}; },
            dtype == DataType::kFloat32 ? 0 : 1e-14);
      }
    }
  }
}

// Values without zeros (divisors).
template <typename T>
std::vector<T> NonZero(int64_t n, int salt) {
  std::vector<T> v = Values<T>(n, salt);
  for (T& x : v) {
    if (x == T(0)) x = T(3);
  }
  return v;
}

// Sums of the gradients add in another order than on the cpu.
template <typename T>
double GradTol() {
  return std::is_floating_point_v<T> ? Tol<T>() * 16 : 0;
}

template <typename T>
void CheckBinary(const std::string& op, const AddCase& c) {
  SCOPED_TRACE(absl::StrCat(op, " ", DataTypeName(DataTypeOf<T>()), " ", c.x.ToString(), " ",
                            c.y.ToString(), " axis ", c.axis));
  ASSERT_OK_AND_ASSIGN(Shape out_shape, BroadcastShapes("t", c.x, c.y, c.axis));
  auto inputs = [&] {
    return EagerInputs{{"X", {HostVar<T>(c.x, Values<T>(c.x.num_elements(), 1))}},
                       {"Y", {HostVar<T>(c.y, NonZero<T>(c.y.num_elements(), 2))}}};
  };
  const AttrMap attrs = {{"axis", c.axis}};
  ExpectMatchesCpu(Op(op, attrs), inputs, 0);  // one rounding per element, as on the cpu
  if (op == "elementwise_div" && !std::is_floating_point_v<T>) return;  // no integer gradient
  ASSERT_OK_AND_ASSIGN(HostOutputs fwd, RunToHost(Op(op, attrs), CPUPlace(), inputs()));
  ExpectMatchesCpu(
      Op(op + "_grad", attrs),
      [&] {
        EagerInputs in = inputs();
        in["Out@GRAD"] = {HostVar<T>(out_shape, Values<T>(out_shape.num_elements(), 3))};
        if (op == "elementwise_div") in["Out"] = {fwd.at("Out")};
        return in;
      },
      GradTol<T>());
}

TEST_P(CrossPlace, ElementwiseSubMulDivAndGradsMatchCpu) {
  for (const std::string op : {"elementwise_sub", "elementwise_mul", "elementwise_div"}) {
    for (const AddCase& c : AddCases()) {
      CheckBinary<float>(op, c);
      CheckBinary<double>(op, c);
      CheckBinary<int32_t>(op, c);
      CheckBinary<int64_t>(op, c);
    }
  }
  // Integer wrap-around and INT_MIN / -1, as on the cpu.
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  for (const std::string op : {"elementwise_sub", "elementwise_mul", "elementwise_div"}) {
    ExpectMatchesCpu(
        Op(op),
        [&] {
          return EagerInputs{
              {"X", {HostVar<int32_t>(Shape({3}), {kMin, std::numeric_limits<int32_t>::max(), 7})}},
              {"Y", {HostVar<int32_t>(Shape({3}), {-1, 2, -2})}}};
        },
        0);
  }
}

TEST_P(CrossPlace, IntegerDivisionByZeroIsInvalidArgumentAndThePlaceStaysUsable) {
  ExpectSameError(Op("elementwise_div"),
                  {{"X", {HostVar<int64_t>(Shape({2, 3}), Values<int64_t>(6))}},
                   {"Y", {HostVar<int64_t>(Shape({3}), {4, 0, 0})}}},
                  absl::StatusCode::kInvalidArgument,
                  "op 'elementwise_div': integer division by zero: Y 'Y_0' [3] is 0 at position 1");
  ASSERT_OK_AND_ASSIGN(
      auto out, RunOnPlace(Op("elementwise_div"), {{"X", {HostVar<int32_t>(Shape({2}), {7, -7})}},
                                                   {"Y", {HostVar<int32_t>(Shape({2}), {2, 2})}}}));
  EXPECT_EQ(out.at("Out").ToVector<int32_t>(), (std::vector<int32_t>{3, -3}));
}

TEST_P(CrossPlace, ActivationsAndGradsMatchCpu) {
  struct Activation {
    std::string op;
    AttrMap attrs;
    std::string grad_reads;  // the forward tensor the gradient reads
    std::string label;
  };
  for (const Activation& act :
       std::vector<Activation>{{"relu", {}, "Out", "relu"},
                               {"sigmoid", {}, "Out", "sigmoid"},
                               {"tanh", {}, "Out", "tanh"},
                               {"gelu", {{"approximate", false}}, "X", "gelu"},
                               {"gelu", {{"approximate", true}}, "X", "gelu approximate"}}) {
    const OpDesc op = Op(act.op, act.attrs), grad = Op(act.op + "_grad", act.attrs);
    for (const Shape& s : {Shape({1023}), Shape(), Shape({0}), Shape({3, 4})}) {
      SCOPED_TRACE(absl::StrCat(act.label, s.ToString()));
      for (DataType dtype : kFloatTypes) {
        DispatchDataType(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          const int64_t n = s.num_elements();
          auto x = [&] { return EagerInputs{{"X", {HostVar<T>(s, Values<T>(n, 1))}}}; };
          ExpectMatchesCpu(op, x, Tol<T>() * 4);
          ASSERT_OK_AND_ASSIGN(HostOutputs fwd, RunToHost(op, CPUPlace(), x()));
          ExpectMatchesCpu(
              grad,
              [&] {
                return EagerInputs{
                    {act.grad_reads, {act.grad_reads == "X" ? x().at("X")[0] : fwd.at("Out")}},
                    {"Out@GRAD", {HostVar<T>(s, Values<T>(n, 2))}}};
              },
              Tol<T>() * 4);
        });
      }
    }
  }
}

TEST_P(CrossPlace, ReduceSumAndMeanAndGradsMatchCpu) {
  struct Case {
    Shape x;
    std::vector<int64_t> dims;
    bool keep_dim, reduce_all;
  };
  const std::vector<Case> cases = {
      {Shape({2, 3, 4}), {1}, false, false},  {Shape({2, 3, 4}), {0, 2}, true, false},
      {Shape({2, 3, 4}), {-1}, false, false}, {Shape({2, 3, 4}), {}, false, true},
      {Shape({3, 1}), {1}, false, false},     {Shape({300, 1001}), {0}, false, false},
      {Shape({300, 1001}), {1}, true, false}, {Shape({5000}), {0}, false, false},
      {Shape({0, 3}), {1}, false, false},     {Shape({7}), {}, true, true},
  };
  for (const Case& c : cases) {
    for (const std::string op : {"reduce_sum", "reduce_mean"}) {
      SCOPED_TRACE(absl::StrCat(op, c.x.ToString(), " dims ", c.dims.size()));
      const AttrMap attrs = {
          {"dim", c.dims}, {"keep_dim", c.keep_dim}, {"reduce_all", c.reduce_all}};
      ASSERT_OK_AND_ASSIGN(ReduceDims r, ReduceShape(op, c.x, c.dims, c.keep_dim, c.reduce_all));
      const int64_t n = c.x.num_elements();
      for (DataType dtype : kFloatTypes) {
        DispatchDataType(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          ExpectMatchesCpu(
              Op(op, attrs),
              [&] {
                return EagerInputs{{"X", {HostVar<T>(c.x, Values<T>(n, 1))}}};
              },
              GradTol<T>());
          ExpectMatchesCpu(
              Op(op + "_grad", attrs),
              [&] {
                return EagerInputs{
                    {"X", {HostVar<T>(c.x, Values<T>(n, 1))}},
                    {"Out@GRAD", {HostVar<T>(r.out, Values<T>(r.out.num_elements(), 2))}}};
              },
              0);
        });
      }
    }
  }
  ExpectSameError(Op("reduce_mean", {{"dim", std::vector<int64_t>{1}}}),
                  {{"X", {HostVar<float>(Shape({3, 0}), {})}}}, absl::StatusCode::kInvalidArgument,
                  "op 'reduce_mean': X [3, 0] has no elements to average over dim");
}

TEST_P(CrossPlace, MulAndFcAndGradsMatchCpu) {
  const struct {
    Shape x, y;
    int64_t xn, yn;
  } muls[] = {{Shape({2, 3, 4}), Shape({12, 5}), 1, 1},
              {Shape({2, 3, 4}), Shape({4, 5}), 2, 1},
              {Shape({3, 0}), Shape({0, 4}), 1, 1},
              {Shape({33, 65}), Shape({65, 17}), 1, 1}};
  for (const auto& c : muls) {
    SCOPED_TRACE(absl::StrCat("mul ", c.x.ToString(), " ", c.y.ToString()));
    const AttrMap attrs = {{"x_num_col_dims", c.xn}, {"y_num_col_dims", c.yn}};
    ASSERT_OK_AND_ASSIGN(
        HostOutputs fwd,
        RunToHost(Op("mul", attrs), CPUPlace(),
                  {{"X", {HostVar<float>(c.x, Values<float>(c.x.num_elements()))}},
                   {"Y", {HostVar<float>(c.y, Values<float>(c.y.num_elements()))}}}));
    const Shape out = fwd.at("Out").tensor().shape();
    for (DataType dtype : kFloatTypes) {
      DispatchDataType(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        auto inputs = [&] {
          return EagerInputs{{"X", {HostVar<T>(c.x, Values<T>(c.x.num_elements(), 1))}},
                             {"Y", {HostVar<T>(c.y, Values<T>(c.y.num_elements(), 2))}},
                             {"Out@GRAD", {HostVar<T>(out, Values<T>(out.num_elements(), 3))}}};
        };
        ExpectMatchesCpu(
            Op("mul", attrs),
            [&] {
              EagerInputs in = inputs();
              in.erase("Out@GRAD");
              return in;
            },
            GradTol<T>());
        ExpectMatchesCpu(Op("mul_grad", attrs), inputs, GradTol<T>());
      });
    }
  }
  const struct {
    Shape input, w;
    int64_t in_num_col_dims;
    bool bias;
  } fcs[] = {{Shape({4, 6}), Shape({6, 3}), 1, true},
             {Shape({4, 6}), Shape({6, 3}), 1, false},
             {Shape({2, 3, 6}), Shape({6, 5}), 2, true},
             {Shape({4, 0}), Shape({0, 3}), 1, true},
             {Shape({300, 7}), Shape({7, 9}), 1, true}};
  for (const auto& c : fcs) {
    SCOPED_TRACE(absl::StrCat("fc ", c.input.ToString(), " bias ", c.bias));
    const AttrMap attrs = {{"in_num_col_dims", c.in_num_col_dims}};
    std::vector<int64_t> out_dims(c.input.dims().begin(),
                                  c.input.dims().begin() + c.in_num_col_dims);
    out_dims.push_back(c.w.dim(1));
    const Shape out(out_dims);
    for (DataType dtype : kFloatTypes) {
      DispatchDataType(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        auto inputs = [&](bool grad) {
          EagerInputs in = {{"Input", {HostVar<T>(c.input, Values<T>(c.input.num_elements(), 1))}},
                            {"W", {HostVar<T>(c.w, Values<T>(c.w.num_elements(), 2))}}};
          if (c.bias && !grad)
            in["Bias"] = {HostVar<T>(Shape({c.w.dim(1)}), Values<T>(c.w.dim(1), 4))};
          if (grad) in["Out@GRAD"] = {HostVar<T>(out, Values<T>(out.num_elements(), 3))};
          return in;
        };
        ExpectMatchesCpu(
            Op("fc", attrs), [&] { return inputs(false); }, GradTol<T>());
        OpDesc grad = Op("fc_grad", attrs);
        grad.outputs = {{"Input@GRAD", {"di"}}, {"W@GRAD", {"dw"}}};
        if (c.bias) grad.outputs["Bias@GRAD"] = {"db"};
        ExpectMatchesCpu(
            grad, [&] { return inputs(true); }, GradTol<T>());
      });
    }
  }
}

TEST_P(CrossPlace, SoftmaxAndGradMatchCpu) {
  const struct {
    Shape x;
    int64_t axis;
  } cases[] = {{Shape({4, 5}), -1},       {Shape({3, 4, 5}), 1}, {Shape({2, 3000}), 1},
               {Shape({3, 40, 64}), 1},   {Shape({0, 3}), 1},    {Shape({7}), 0},
               {Shape({2, 2500, 33}), 1}, {Shape({128, 10}), -1}};
  for (const auto& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.x.ToString(), " axis ", c.axis));
    const AttrMap attrs = {{"axis", c.axis}};
    const int64_t n = c.x.num_elements();
    for (DataType dtype : kFloatTypes) {
      DispatchDataType(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        auto x = [&] { return EagerInputs{{"X", {HostVar<T>(c.x, Values<T>(n, 1))}}}; };
        ExpectMatchesCpu(Op("softmax", attrs), x, Tol<T>());
        ASSERT_OK_AND_ASSIGN(HostOutputs fwd, RunToHost(Op("softmax", attrs), CPUPlace(), x()));
        ExpectMatchesCpu(
            Op("softmax_grad", attrs),
            [&] {
              return EagerInputs{{"Out", {fwd.at("Out")}},
                                 {"Out@GRAD", {HostVar<T>(c.x, Values<T>(n, 2))}}};
            },
            Tol<T>() * 4);
      });
    }
  }
}

TEST_P(CrossPlace, SoftmaxWithCrossEntropyAndGradMatchCpu) {
  const struct {
    Shape logits, label;
    std::vector<int64_t> labels;
  } cases[] = {{Shape({6, 5}), Shape({6, 1}), {0, 4, -100, 2, 2, 1}},
               {Shape({2, 3, 5}), Shape({2, 3}), {1, -100, -100, 0, 3, 4}},
               {Shape({3, 3000}), Shape({3, 1}), {2999, 0, 1500}},
               {Shape({0, 5}), Shape({0, 1}), {}},
               {Shape({2, 0}), Shape({2, 1}), {-100, -100}}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.logits.ToString());
    const int64_t rows = static_cast<int64_t>(c.labels.size());
    for (DataType dtype : kFloatTypes) {
      DispatchDataType(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        auto inputs = [&] {
          return EagerInputs{
              {"Logits", {HostVar<T>(c.logits, Values<T>(c.logits.num_elements(), 1))}},
              {"Label", {Ids(c.label, c.labels)}}};
        };
        ExpectMatchesCpu(Op("softmax_with_cross_entropy"), inputs, Tol<T>() * 4);
        ASSERT_OK_AND_ASSIGN(HostOutputs fwd,
                             RunToHost(Op("softmax_with_cross_entropy"), CPUPlace(), inputs()));
        ExpectMatchesCpu(
            Op("softmax_with_cross_entropy_grad"),
            [&] {
              return EagerInputs{
                  {"Softmax", {fwd.at("Softmax")}},
                  {"Label", {Ids(c.label, c.labels)}},
                  {"Loss@GRAD", {HostVar<T>(fwd.at("Loss").tensor().shape(), Values<T>(rows, 2))}}};
            },
            Tol<T>());
      });
    }
  }
}

TEST_P(CrossPlace, BadLabelsAreInvalidArgumentAndThePlaceStaysUsable) {
  const Variable logits = HostVar<float>(Shape({4, 5}), Values<float>(20));
  ExpectSameError(Op("softmax_with_cross_entropy"),
                  {{"Logits", {logits}}, {"Label", {Ids(Shape({4, 1}), {0, 7, -100, -1})}}},
                  absl::StatusCode::kInvalidArgument,
                  "op 'softmax_with_cross_entropy': label 7 at position 1 is out of range [0, 5) "
                  "(ignore_index -100)");
  ExpectSameError(Op("softmax_with_cross_entropy_grad"),
                  {{"Softmax", {logits}},
                   {"Label", {Ids(Shape({4}), {0, 1, 2, 5})}},
                   {"Loss@GRAD", {HostVar<float>(Shape({3}), Values<float>(3))}}},
                  absl::StatusCode::kInvalidArgument,
                  "op 'softmax_with_cross_entropy_grad': label 5 at position 3 is out of range "
                  "[0, 5) (ignore_index -100)");
  ExpectSameError(Op("accuracy"),
                  {{"Out", {logits}}, {"Label", {Ids(Shape({4}), {0, 1, -100, 2})}}},
                  absl::StatusCode::kInvalidArgument,
                  "op 'accuracy': label -100 at position 2 is out of range [0, 5)");
  ASSERT_OK_AND_ASSIGN(
      auto out,
      RunOnPlace(Op("accuracy"), {{"Out", {logits}}, {"Label", {Ids(Shape({4}), {0, 1, 4, 2})}}}));
  EXPECT_EQ(out.at("Total").ToVector<int64_t>(), (std::vector<int64_t>{4}));
  EXPECT_OK(TestedDevice()->Synchronize());
}

TEST_P(CrossPlace, AccuracyMatchesCpu) {
  // Ties rank by class index; k counts the classes above the label.
  std::vector<float> scores = Values<float>(8 * 5, 1);
  scores[3] = scores[0];
  std::vector<int64_t> labels = {0, 1, 2, 3, 4, 0, 1, 3};
  for (const int64_t k : {int64_t{1}, int64_t{2}, int64_t{5}}) {
    SCOPED_TRACE(k);
    ExpectMatchesCpu(
        Op("accuracy", {{"k", k}}),
        [&] {
          return EagerInputs{{"Out", {HostVar<float>(Shape({8, 5}), scores)}},
                             {"Label", {Ids(Shape({8, 1}), labels)}}};
        },
        0);
  }
  std::vector<int64_t> many(3000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = (i * 7) % 2500;
  ExpectMatchesCpu(
      Op("accuracy", {{"k", int64_t{3}}}),
      [&] {
        return EagerInputs{
            {"Out", {HostVar<double>(Shape({3000, 2500}), Values<double>(7500000, 3))}},
            {"Label", {Ids(Shape({3000}), many)}}};
      },
      0);
  ExpectMatchesCpu(
      Op("accuracy"),
      [&] {
        return EagerInputs{{"Out", {HostVar<float>(Shape({0, 5}), {})}},
                           {"Label", {Ids(Shape({0}), {})}}};
      },
      0);
}

TEST_P(CrossPlace, ReshapeSharesTheInputsBufferOnThePlace) {
  ASSERT_OK_AND_ASSIGN(Tensor x, Tensor::Allocate(TestedDevice()->allocator(), DataType::kFloat32,
                                                  Shape({2, 3, 4})));
  ASSERT_OK_AND_ASSIGN(EagerOutputs out,
                       RunOpEager(Op("reshape", {{"shape", std::vector<int64_t>{4, -1}}}),
                                  TestedPlace(), {{"X", {Variable(x)}}}));
  const Tensor& o = out.at("Out")[0].tensor();
  EXPECT_EQ(o.shape(), Shape({4, 6}));
  EXPECT_EQ(o.place(), TestedPlace());
  EXPECT_EQ(o.raw_data(), x.raw_data());
}

TEST_P(CrossPlace, TransposeConcatSplitAndGradsMatchCpuBitwise) {
  for (DataType dtype : kNumericTypes) {
    SCOPED_TRACE(DataTypeName(dtype));
    DispatchDataType(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto var = [](const Shape& s, int salt) {
        return HostVar<T>(s, Values<T>(s.num_elements(), salt));
      };
      const struct {
        Shape x;
        std::vector<int64_t> axis;
      } transposes[] = {{Shape({2, 3}), {1, 0}},
                        {Shape({2, 3, 4}), {2, 0, 1}},
                        {Shape({2, 3, 4, 5}), {0, 2, 3, 1}},
                        {Shape({1, 7, 1, 3}), {3, 2, 1, 0}},
                        {Shape({0, 3}), {1, 0}},
                        {Shape({33, 65}), {1, 0}}};
      for (const auto& c : transposes) {
        SCOPED_TRACE(c.x.ToString());
        const AttrMap attrs = {{"axis", c.axis}};
        ExpectMatchesCpu(
            Op("transpose", attrs),
            [&] {
              return EagerInputs{{"X", {var(c.x, 1)}}};
            },
            0);
        ASSERT_OK_AND_ASSIGN(Shape out, TransposeShape("t", c.x, c.axis));
        ExpectMatchesCpu(
            Op("transpose_grad", attrs),
            [&] {
              return EagerInputs{{"Out@GRAD", {var(out, 2)}}};
            },
            0);
      }
      // concat of three pieces (one empty) along axis 1, and back.
      const std::vector<Shape> pieces = {Shape({2, 1, 3}), Shape({2, 4, 3}), Shape({2, 0, 3})};
      auto xs = [&] {
        std::vector<Variable> v;
        for (size_t i = 0; i < pieces.size(); ++i) v.push_back(var(pieces[i], 3 + i));
        return v;
      };
      ExpectMatchesCpu(
          Op("concat", {{"axis", int64_t{-2}}}),
          [&] {
            return EagerInputs{{"X", xs()}};
          },
          0);
      OpDesc concat_grad =
          Op("concat_grad", {{"axis", int64_t{1}}, {"grad_positions", std::vector<int64_t>{0, 1}}});
      concat_grad.outputs["X@GRAD"] = {"d0", "d1"};
      ExpectMatchesCpu(
          concat_grad,
          [&] {
            return EagerInputs{{"X", xs()}, {"Out@GRAD", {var(Shape({2, 5, 3}), 6)}}};
          },
          0);
      // split into sections along axis 0, and back with one gradient missing.
      const AttrMap split_attrs = {{"axis", int64_t{0}},
                                   {"sections", std::vector<int64_t>{1, -1, 2}}};
      OpDesc split = Op("split", split_attrs);
      split.outputs["Out"] = {"a", "b", "c"};
      ExpectMatchesCpu(
          split,
          [&] {
            return EagerInputs{{"X", {var(Shape({6, 5}), 7)}}};
          },
          0);
      AttrMap grad_attrs = split_attrs;
      grad_attrs["grad_positions"] = std::vector<int64_t>{0, 2};
      ExpectMatchesCpu(
          Op("split_grad", grad_attrs),
          [&] {
            return EagerInputs{{"X", {var(Shape({6, 5}), 7)}},
                               {"Out@GRAD", {var(Shape({1, 5}), 8), var(Shape({2, 5}), 9)}}};
          },
          0);
      OpDesc equal = Op("split", {{"axis", int64_t{1}}, {"num", int64_t{2}}});
      equal.outputs["Out"] = {"a", "b"};
      ExpectMatchesCpu(
          equal,
          [&] {
            return EagerInputs{{"X", {var(Shape({3, 4, 2}), 10)}}};
          },
          0);
    });
  }
}

TEST_P(CrossPlace, DropoutMaskAndGradMatchCpuBitwise) {
  for (const double prob : {0.0, 0.3, 1.0}) {
    for (const bool is_test : {false, true}) {
      for (DataType dtype : kFloatTypes) {
        SCOPED_TRACE(absl::StrCat(DataTypeName(dtype), " prob ", prob, " is_test ", is_test));
        DispatchDataType(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          const AttrMap attrs = {
              {"dropout_prob", prob}, {"is_test", is_test}, {"seed", int64_t{-42}}};
          const Shape s({300, 257});
          auto x = [&] { return EagerInputs{{"X", {HostVar<T>(s, Values<T>(s.num_elements()))}}}; };
          ExpectMatchesCpu(Op("dropout", attrs), x, 0);
          ASSERT_OK_AND_ASSIGN(HostOutputs fwd, RunToHost(Op("dropout", attrs), CPUPlace(), x()));
          ExpectMatchesCpu(
              Op("dropout_grad", {{"dropout_prob", prob}, {"is_test", is_test}}),
              [&] {
                return EagerInputs{{"Mask", {fwd.at("Mask")}},
                                   {"Out@GRAD", {HostVar<T>(s, Values<T>(s.num_elements(), 2))}}};
              },
              0);
        });
      }
    }
  }
}

TEST_P(CrossPlace, Conv2DAndGradsMatchCpu) {
  const struct {
    Shape input, filter;
    std::vector<int64_t> strides, paddings, dilations;
    int64_t groups;
  } cases[] = {
      {Shape({2, 3, 7, 7}), Shape({4, 3, 3, 3}), {1, 1}, {1, 1}, {1, 1}, 1},
      {Shape({2, 3, 9, 8}), Shape({4, 3, 3, 2}), {2, 1}, {0, 1}, {2, 1}, 1},
      {Shape({2, 4, 6, 6}), Shape({6, 2, 3, 3}), {1, 1}, {1, 1}, {1, 1}, 2},
      {Shape({2, 3, 5, 5}), Shape({4, 3, 1, 1}), {1, 1}, {0, 0}, {1, 1}, 1},  // direct
      {Shape({0, 3, 5, 5}), Shape({4, 3, 3, 3}), {1, 1}, {1, 1}, {1, 1}, 1},
      {Shape({5, 1, 28, 28}), Shape({8, 1, 5, 5}), {1, 1}, {2, 2}, {1, 1}, 1},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.input.ToString(), " * ", c.filter.ToString()));
    const AttrMap attrs = {{"strides", c.strides},
                           {"paddings", c.paddings},
                           {"dilations", c.dilations},
                           {"groups", c.groups}};
    for (DataType dtype : kFloatTypes) {
      DispatchDataType(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        auto inputs = [&] {
          return EagerInputs{
              {"Input", {HostVar<T>(c.input, Values<T>(c.input.num_elements(), 1))}},
              {"Filter", {HostVar<T>(c.filter, Values<T>(c.filter.num_elements(), 2))}}};
        };
        const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
        ExpectMatchesCpu(Op("conv2d", attrs), inputs, tol);
        ASSERT_OK_AND_ASSIGN(HostOutputs fwd, RunToHost(Op("conv2d", attrs), CPUPlace(), inputs()));
        const Shape out = fwd.at("Output").tensor().shape();
        ExpectMatchesCpu(
            Op("conv2d_grad", attrs),
            [&] {
              EagerInputs in = inputs();
              in["Output@GRAD"] = {HostVar<T>(out, Values<T>(out.num_elements(), 3))};
              return in;
            },
            tol);
      });
    }
  }
}

TEST_P(CrossPlace, Pool2DAndGradMatchCpuBitwise) {
  const struct {
    Shape x;
    std::string type;
    std::vector<int64_t> ksize, strides, paddings;
    bool global, exclusive;
  } cases[] = {
      {Shape({2, 3, 8, 8}), "max", {2, 2}, {2, 2}, {0, 0}, false, true},
      {Shape({2, 3, 7, 9}), "max", {3, 3}, {1, 2}, {1, 1}, false, true},  // overlapping, ties
      {Shape({2, 3, 7, 9}), "avg", {3, 3}, {1, 2}, {1, 1}, false, true},
      {Shape({2, 3, 7, 9}), "avg", {3, 2}, {2, 1}, {1, 1}, false, false},
      {Shape({2, 3, 5, 6}), "avg", {}, {1, 1}, {0, 0}, true, true},
      {Shape({2, 3, 5, 6}), "max", {}, {1, 1}, {0, 0}, true, true},
      {Shape({0, 3, 4, 4}), "max", {2, 2}, {2, 2}, {0, 0}, false, true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.type, c.x.ToString(), " global ", c.global));
    const AttrMap attrs = {{"pooling_type", c.type},     {"ksize", c.ksize},
                           {"strides", c.strides},       {"paddings", c.paddings},
                           {"global_pooling", c.global}, {"exclusive", c.exclusive}};
    for (DataType dtype : kFloatTypes) {
      DispatchDataType(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        auto x = [&] {
          return EagerInputs{{"X", {HostVar<T>(c.x, Values<T>(c.x.num_elements(), 1))}}};
        };
        ExpectMatchesCpu(Op("pool2d", attrs), x, 0);
        ASSERT_OK_AND_ASSIGN(HostOutputs fwd, RunToHost(Op("pool2d", attrs), CPUPlace(), x()));
        const Shape out = fwd.at("Out").tensor().shape();
        ExpectMatchesCpu(
            Op("pool2d_grad", attrs),
            [&] {
              EagerInputs in = x();
              in["Out"] = {fwd.at("Out")};
              in["Out@GRAD"] = {HostVar<T>(out, Values<T>(out.num_elements(), 2))};
              return in;
            },
            // The host's float32 pooling is oneDNN's, whose average gradient
            // rounds the window shares differently in the last bit.
            c.type == "avg" && dtype == DataType::kFloat32 ? Tol<T>() : 0);
      });
    }
  }
}

TEST_P(CrossPlace, LayerNormAndGradsMatchCpu) {
  const struct {
    Shape x;
    int64_t axis;
    bool scale, bias;
  } cases[] = {
      {Shape({4, 6}), 1, true, true},      {Shape({2, 3, 4}), 1, false, false},
      {Shape({2, 3, 4}), -1, true, false}, {Shape({3, 3000}), 1, true, true},  // a block per row
      {Shape({700, 20}), 1, true, true},  // many rows: chunked column sums
      {Shape({50, 768}), 1, true, true},  // a line in registers (65..1024 columns)
      {Shape({9, 1000}), 1, true, false},  {Shape({0, 5}), 1, true, true}};
  for (const auto& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.x.ToString(), " axis ", c.axis));
    const AttrMap attrs = {{"begin_norm_axis", c.axis}, {"epsilon", 1e-5}};
    for (DataType dtype : kFloatTypes) {
      DispatchDataType(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const int64_t n = c.x.num_elements();
        const int64_t axis = c.axis < 0 ? c.axis + c.x.rank() : c.axis;
        int64_t cols = 1;
        for (int d = static_cast<int>(axis); d < c.x.rank(); ++d) cols *= c.x.dim(d);
        auto inputs = [&] {
          EagerInputs in = {{"X", {HostVar<T>(c.x, Values<T>(n, 1))}}};
          if (c.scale) in["Scale"] = {HostVar<T>(Shape({cols}), Values<T>(cols, 2))};
          if (c.bias) in["Bias"] = {HostVar<T>(Shape({cols}), Values<T>(cols, 3))};
          return in;
        };
        ExpectMatchesCpu(Op("layer_norm", attrs), inputs, Tol<T>() * 8);
        ASSERT_OK_AND_ASSIGN(HostOutputs fwd,
                             RunToHost(Op("layer_norm", attrs), CPUPlace(), inputs()));
        OpDesc grad = Op("layer_norm_grad", attrs);
        grad.outputs["X@GRAD"] = {"dx"};
        if (c.scale) grad.outputs["Scale@GRAD"] = {"ds"};
        grad.outputs["Bias@GRAD"] = {"db"};
        ExpectMatchesCpu(
            grad,
            [&] {
              EagerInputs in = inputs();
              in.erase("Bias");
              in["Mean"] = {fwd.at("Mean")};
              in["Variance"] = {fwd.at("Variance")};
              in["Y@GRAD"] = {HostVar<T>(c.x, Values<T>(n, 4))};
              return in;
            },
            Tol<T>() * 64);
      });
    }
  }
}

TEST_P(CrossPlace, ShapeWritesHostMemoryWithoutDeviceWork) {
  for (DataType dtype : AllDataTypes()) {
    SCOPED_TRACE(DataTypeName(dtype));
    ASSERT_OK_AND_ASSIGN(Tensor x,
                         Tensor::Allocate(TestedDevice()->allocator(), dtype, Shape({1, 3, 5, 5})));
    EagerStats stats;
    ASSERT_OK_AND_ASSIGN(EagerOutputs out, RunOpEager(Op("shape"), TestedPlace(),
                                                      {{"Input", {Variable(x)}}}, &stats));
    const Tensor& t = out.at("Out")[0].tensor();
    EXPECT_EQ(t.place(), CPUPlace());
    EXPECT_EQ(t.dtype(), DataType::kInt32);
    EXPECT_EQ(t.ToVector<int32_t>(), (std::vector<int32_t>{1, 3, 5, 5}));
    EXPECT_EQ(stats.copies_h2d + stats.copies_d2h, 0);
  }
  ASSERT_OK_AND_ASSIGN(Tensor scalar,
                       Tensor::Allocate(TestedDevice()->allocator(), DataType::kFloat32, Shape()));
  ASSERT_OK_AND_ASSIGN(EagerOutputs out,
                       RunOpEager(Op("shape"), TestedPlace(), {{"Input", {Variable(scalar)}}}));
  EXPECT_EQ(out.at("Out")[0].tensor().shape(), Shape({0}));
}

struct SliceCase {
  Shape x;
  std::vector<int64_t> axes, starts, ends;
};

TEST_P(CrossPlace, SliceAndGradMatchCpuBitwise) {
  const std::vector<SliceCase> cases = {
      {Shape({4}), {0}, {0}, {4}},                     // the crop workload's shape slice
      {Shape({2, 3, 8, 8}), {1}, {1}, {3}},            // merged inner dims
      {Shape({5, 6, 7}), {0, 2}, {-4, 1}, {100, -1}},  // negative and clamped
      {Shape({5, 6, 7}), {-1, 1}, {2, 5}, {4, 2}},     // end <= start: empty
      {Shape({3, 1, 4, 2, 5, 2, 3, 2, 3}), {0, 2, 4, 6, 8}, {1, 1, 1, 1, 1}, {3, 3, 4, 2, 2}},
      {Shape({9}), {}, {}, {}},        // nothing sliced
      {Shape(), {}, {}, {}},           // 0-d
      {Shape({0, 3}), {1}, {1}, {2}},  // empty input
  };
  for (const SliceCase& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.x.ToString(), " axes ", c.axes.size()));
    const AttrMap attrs = {{"axes", c.axes}, {"starts", c.starts}, {"ends", c.ends}};
    ASSERT_OK_AND_ASSIGN(Box box, SliceBox("slice", c.x, c.axes, c.starts, c.ends));
    for (DataType dtype : kNumericTypes) {
      SCOPED_TRACE(DataTypeName(dtype));
      DispatchDataType(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const int64_t n = c.x.num_elements();
        ExpectMatchesCpu(
            Op("slice", attrs),
            [&] {
              return EagerInputs{{"Input", {HostVar<T>(c.x, Values<T>(n, 1))}}};
            },
            0);
        ExpectMatchesCpu(
            Op("slice_grad", attrs),
            [&] {
              return EagerInputs{
                  {"Input", {HostVar<T>(c.x, Values<T>(n, 1))}},
                  {"Out@GRAD", {HostVar<T>(box.shape, Values<T>(box.shape.num_elements(), 2))}}};
            },
            0);
      });
    }
  }
}

TEST_P(CrossPlace, CropTensorTooLargeIsInvalidArgumentAndGoodCropsMatchCpu) {
  const Shape x({1, 3, 8, 8});
  auto shape_var = [](std::vector<int32_t> v) {
    return Variable(Tensor::FromVector<int32_t>(Shape({static_cast<int64_t>(v.size())}), v));
  };
  auto inputs = [&](std::vector<int32_t> sizes) {
    return EagerInputs{{"X", {HostVar<float>(x, Values<float>(x.num_elements(), 1))}},
                       {"Shape", {shape_var(sizes)}}};
  };
  ExpectSameError(Op("crop_tensor"), inputs({1, 3, 9, 8}), absl::StatusCode::kInvalidArgument,
                  "op 'crop_tensor': crop of size 9 at offset 0 exceeds dim 2 of X [1, 3, 8, 8]");
  ExpectSameError(Op("crop_tensor", {{"offsets", std::vector<int64_t>{0, 1, 4, 0}}}),
                  inputs({1, 3, 5, 5}), absl::StatusCode::kInvalidArgument,
                  "op 'crop_tensor': crop of size 3 at offset 1 exceeds dim 1 of X [1, 3, 8, 8]");
  ExpectSameError(Op("crop_tensor"),
                  {{"X", {HostVar<float>(x, Values<float>(x.num_elements()))}},
                   {"Shape", {Variable(Tensor::FromVector<int64_t>(Shape({4}), {1, 3, 5, 5}))}}},
                  absl::StatusCode::kInvalidArgument,
                  "op 'crop_tensor': Shape must be a 1-D int32 tensor, got int64[4]");

  const struct {
    std::vector<int32_t> sizes;
    std::vector<int64_t> offsets;
  } crops[] = {{{1, 3, 5, 5}, {}},  // the crop workload's
               {{-1, 2, -1, 3}, {0, 1, 2, 5}},
               {{1, 3, 8, 8}, {}},   // everything
               {{1, 0, 4, 4}, {}}};  // empty
  for (const auto& c : crops) {
    SCOPED_TRACE(c.offsets.size());
    const AttrMap attrs = {{"offsets", c.offsets}};
    ASSERT_OK_AND_ASSIGN(
        Box box,
        CropBox("crop_tensor", x, std::vector<int64_t>(c.sizes.begin(), c.sizes.end()), c.offsets));
    for (DataType dtype : kNumericTypes) {
      SCOPED_TRACE(DataTypeName(dtype));
      DispatchDataType(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        auto make = [&](bool grad) {
          EagerInputs in = {{"X", {HostVar<T>(x, Values<T>(x.num_elements(), 1))}},
                            {"Shape", {shape_var(c.sizes)}}};
          if (grad) {
            in["Out@GRAD"] = {HostVar<T>(box.shape, Values<T>(box.shape.num_elements(), 2))};
          }
          return in;
        };
        ExpectMatchesCpu(
            Op("crop_tensor", attrs), [&] { return make(false); }, 0);
        ExpectMatchesCpu(
            Op("crop_tensor_grad", attrs), [&] { return make(true); }, 0);
      });
    }
  }
  // Shape is read on the host: only X is copied to the place.
  EagerStats stats;
  ASSERT_OK(RunOpEager(Op("crop_tensor"), TestedPlace(), inputs({1, 3, 5, 5}), &stats).status());
  EXPECT_EQ(stats.copies_h2d, 1);
  EXPECT_EQ(stats.copies_h2d, ExpectedHostToDeviceCopies("crop_tensor", inputs({1, 3, 5, 5})));
}

TEST_P(CrossPlace, UniformRandomIsBitwiseEqualToCpu) {
  struct Case {
    std::vector<int64_t> shape;
    double min, max;
    int64_t seed;
  };
  const std::vector<Case> cases = {
      {{1000, 150}, -0.05, 0.05, 0},
      {{1023}, -1, 1, 42},
      {{3, 0}, -1, 1, 7},
      {{}, 0, 1, 1},
      {{257, 3}, 2.5, 1e6, -123},
      {{4096}, -1e-30, 3e-30, 9},
      {{77}, 1, 1, 5},
      {{5000}, -3.7, 11.1, std::numeric_limits<int64_t>::min()},
  };
  for (const Case& c : cases) {
    for (DataType dtype : kFloatTypes) {
      SCOPED_TRACE(absl::StrCat(DataTypeName(dtype), " ", c.shape.size(), " seed ", c.seed));
      const AttrMap attrs = {
          {"shape", c.shape}, {"dtype", dtype}, {"min", c.min}, {"max", c.max}, {"seed", c.seed}};
      ExpectMatchesCpu(
          Op("uniform_random", attrs), [] { return EagerInputs{}; }, 0);
    }
  }
}

}  // namespace
}  // namespace tandem
