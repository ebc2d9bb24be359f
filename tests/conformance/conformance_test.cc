// Runs every registered kernel on every available place against the float64
// reference, and fails if a registered kernel has no case.
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/device/device.h"
#include "framework/device/device_registry.h"
#include "framework/kernel/eager.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"
#include "tests/conformance/cases.h"

namespace tandem {
namespace {

const KernelRegistration* KernelFor(const ConformanceCase& c, DeviceType type) {
  const std::map<std::string, DataType> bindings = c.Bindings();
  absl::StatusOr<const KernelRegistration*> k = KernelRegistry::Global().Find(
      c.op, type, [&](absl::string_view name) -> std::optional<DataType> {
        auto it = bindings.find(std::string(name));
        if (it == bindings.end()) return std::nullopt;
        return it->second;
      });
  return k.ok() ? *k : nullptr;
}

TEST(Conformance, EveryRegisteredKernelHasACase) {
  const std::vector<ConformanceCase> cases = AllConformanceCases();
  std::vector<std::string> uncovered;
  for (const KernelRegistration* k : KernelRegistry::Global().AllKernels()) {
    if (k->def.op().find("test") != std::string::npos) continue;
    for (const auto& [name, types] : k->def.type_constraints()) {
      for (DataType t : types) {
        bool covered = false;
        for (const ConformanceCase& c : cases) {
          if (c.op != k->def.op()) continue;
          auto b = c.Bindings();
          covered |= b.count(name) && b.at(name) == t;
        }
        if (!covered) {
          uncovered.push_back(
              absl::StrCat(k->def.DebugString(), " with ", name, "=", DataTypeName(t)));
        }
      }
    }
    if (k->def.type_constraints().empty()) {
      bool covered = false;
      for (const ConformanceCase& c : cases) covered |= c.op == k->def.op();
      if (!covered) uncovered.push_back(k->def.DebugString());
    }
  }
  EXPECT_TRUE(uncovered.empty()) << "registered kernels without a conformance case:\n  "
                                 << absl::StrJoin(uncovered, "\n  ");
}

// Every device type with devices has a kernel for each op the cpu has,
// with the same dtypes (the union of the op's kernels' type constraints)
// and at least the cpu kernel's host-memory arguments (a device kernel may
// read more of them on the host: the gpu lookup_table_grad's Ids). The op
// list is the registry's.
TEST(Conformance, EveryDevicePlaceHasEveryCpuKernel) {
  using Constraints = std::map<std::string, std::set<DataType>>;
  auto kernels_of = [](DeviceType type) {
    std::map<std::string, std::pair<Constraints, std::set<std::string>>> ops;
    for (const KernelRegistration* k : KernelRegistry::Global().AllKernels()) {
      if (k->def.device_type() != type || k->def.op().find("test") != std::string::npos) continue;
      auto& [types, host_args] = ops[k->def.op()];
      for (const auto& [arg, ts] : k->def.type_constraints())
        types[arg].insert(ts.begin(), ts.end());
      host_args.insert(k->def.host_memory_args().begin(), k->def.host_memory_args().end());
    }
    return ops;
  };
  const auto cpu = kernels_of(DeviceType::CPU());
  ASSERT_GT(cpu.size(), 50u);
  std::set<DeviceType> checked;
  for (const Place& place : DeviceRegistry::Global().AvailablePlaces()) {
    if (place.is_host() || !checked.insert(place.type()).second) continue;
    SCOPED_TRACE(place.type().name());
    const auto device = kernels_of(place.type());
    for (const auto& [op, want] : cpu) {
      auto it = device.find(op);
      if (it == device.end()) {
        ADD_FAILURE() << op << " has a cpu kernel but none on " << place.type().name();
        continue;
      }
      EXPECT_EQ(it->second.first, want.first) << op << ": dtypes differ from the cpu kernels'";
      for (const std::string& arg : want.second) {
        EXPECT_EQ(it->second.second.count(arg), 1u)
            << op << ": " << arg << " is host memory on cpu";
      }
    }
    for (const auto& [op, unused] : device) {
      EXPECT_EQ(cpu.count(op), 1u) << op << " on " << place.type().name() << " has no cpu kernel";
    }
  }
}

// A fresh host copy of `t`: kernels may update inputs in place (sgd), and
// every case runs on several places.
Variable Fresh(const Tensor& t) {
  absl::StatusOr<Tensor> copy = CopyTensorTo(t, CPUPlace());
  CHECK(copy.ok()) << copy.status();
  return Variable(*std::move(copy));
}

// The output `arg` as float64 values with its dtype, densified if it holds
// SelectedRows (which the case must expect).
absl::StatusOr<std::pair<DataType, reference::Array>> Values(const ConformanceCase& c,
                                                             const std::string& arg,
                                                             const Variable& v) {
  const bool sparse = c.selected_rows_outputs.count(arg) > 0;
  if (sparse != v.is_selected_rows()) {
    return absl::InternalError(
        absl::StrCat(arg, sparse ? " is not" : " is", " SelectedRows, expected the opposite"));
  }
  const Tensor* t = v.data_tensor();
  if (t == nullptr) return absl::InternalError(absl::StrCat(arg, " was not written"));
  reference::Array got{t->shape(), ToDoubles(*t)};
  if (sparse) {
    const SelectedRows& r = v.selected_rows();
    got = reference::Densify(r.height(), r.rows(), got);
  }
  return std::make_pair(t->dtype(), got);
}

void ExpectClose(const ConformanceCase& c, const std::string& arg,
                 const std::pair<DataType, reference::Array>& expected,
                 const std::pair<DataType, reference::Array>& got, const Place& place) {
  const auto& [dtype, want] = expected;
  ASSERT_EQ(got.first, dtype) << arg;
  ASSERT_EQ(got.second.shape, want.shape) << arg;
  const std::vector<double>& values = got.second.values;
  int bad = 0;
  for (size_t i = 0; i < values.size() && bad < 5; ++i) {
    const double tol = c.atol + c.rtol * std::abs(want.values[i]);
    // Equal values match, infinities and NaN included (check_finite_and_unscale).
    const bool same =
        values[i] == want.values[i] || (std::isnan(values[i]) && std::isnan(want.values[i]));
    if (!same && !(std::abs(values[i] - want.values[i]) <= tol)) {
      ++bad;
      ADD_FAILURE() << c.label << " on " << place << ": " << arg << "[" << i << "] = " << values[i]
                    << ", reference " << want.values[i] << " (tol " << tol << ")";
    }
  }
}

TEST(Conformance, EveryKernelOnEveryPlaceMatchesReference) {
  const std::vector<ConformanceCase> cases = AllConformanceCases();
  std::set<const KernelRegistration*> exercised;
  for (const Place& place : DeviceRegistry::Global().AvailablePlaces()) {
    int ran = 0;
    for (const ConformanceCase& c : cases) {
      const KernelRegistration* k = KernelFor(c, place.type());
      if (k == nullptr) continue;
      exercised.insert(k);
      SCOPED_TRACE(absl::StrCat(c.label, " on ", place.ToString()));
      OpDesc op;
      op.type = c.op;
      op.attrs = c.attrs;
      for (const auto& [arg, unused] : c.expected) op.outputs[arg] = {arg + "_out"};
      for (const auto& [arg, list] : c.expected_lists) {
        for (size_t i = 0; i < list.size(); ++i) {
          op.outputs[arg].push_back(absl::StrCat(arg, "_out", i));
        }
      }
      EagerInputs inputs;
      for (const auto& [arg, t] : c.inputs) inputs[arg].push_back(Fresh(t));
      for (const auto& [arg, r] : c.selected_rows_inputs) {
        inputs[arg].push_back(
            Variable(SelectedRows(r.height(), r.rows(), Fresh(r.value()).tensor())));
      }
      ASSERT_OK_AND_ASSIGN(EagerOutputs out, RunOpEager(op, place, inputs));
      for (const auto& [arg, unused] : c.expected) {
        ASSERT_EQ(out[arg].size(), 1u);
        ASSERT_OK_AND_ASSIGN(auto got, Values(c, arg, out[arg][0]));
        const Place want_place = k->def.IsHostMemory(arg) ? CPUPlace() : place;
        EXPECT_EQ(out[arg][0].data_tensor()->place(), want_place) << arg;
        ExpectClose(c, arg, c.expected.at(arg), got, place);
      }
      for (const auto& [arg, list] : c.expected_lists) {
        ASSERT_EQ(out[arg].size(), list.size()) << arg;
        for (size_t i = 0; i < list.size(); ++i) {
          const std::string name = absl::StrCat(arg, "[", i, "]");
          ASSERT_OK_AND_ASSIGN(auto got, Values(c, arg, out[arg][i]));
          EXPECT_EQ(out[arg][i].data_tensor()->place(), place) << name;
          ExpectClose(c, name, list[i], got, place);
        }
      }
      for (const auto& [arg, vars] : out) {
        if (c.expected.count(arg) == 0 && c.expected_lists.count(arg) == 0) {
          EXPECT_TRUE(vars.empty() || vars[0].empty()) << "unbound output " << arg << " written";
        }
      }
      ++ran;
    }
    EXPECT_GT(ran, 0) << "no kernel ran on " << place;
    LOG(INFO) << ran << " conformance cases on " << place;
  }
  // A case no cpu kernel takes (an op or dtype left unregistered) would be
  // skipped on every place: that is a failure, not a pass.
  for (const ConformanceCase& c : cases) {
    EXPECT_NE(KernelFor(c, DeviceType::CPU()), nullptr) << "no cpu kernel runs " << c.label;
  }
  std::set<DeviceType> available;
  for (const Place& p : DeviceRegistry::Global().AvailablePlaces()) available.insert(p.type());
  for (const KernelRegistration* k : KernelRegistry::Global().AllKernels()) {
    if (available.count(k->def.device_type()) == 0) continue;
    EXPECT_TRUE(exercised.count(k)) << "kernel never exercised: " << k->def.DebugString();
  }
}

}  // namespace
}  // namespace tandem
