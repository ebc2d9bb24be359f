// The kernel semantics suite: what a float64 comparison (conformance_test)
// cannot check, on every available place (cpu, sim:N, gpu:N): the exact
// messages of bad input, hand-computed edge values (0-d, empty, padding
// rows, clamped slices, ties), in-place updates, shared buffers, host-memory
// arguments, determinism across places and that a place stays usable after
// an error. Each TEST_P runs once per place:
//
//   TEST_P(KernelSemantics, MeanOfEmptyXIsInvalidArgument) {
//     EXPECT_THAT(RunOpEager(semantics::Op("mean"), GetParam(),
//                            {{"X", {semantics::Var<float>({0, 3}, {})}}}),
//                 StatusIs(absl::StatusCode::kInvalidArgument, "op 'mean': X is empty"));
//   }
//
// Inputs start on the host; outputs are copied back for checking. Tests run
// synchronously.
#ifndef TANDEM_TESTS_CONFORMANCE_SEMANTICS_H_
#define TANDEM_TESTS_CONFORMANCE_SEMANTICS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/kernel/eager.h"
#include "framework/op/op_desc.h"
#include "framework/place/place.h"
#include "framework/tensor/tensor.h"
#include "framework/tensor/variable.h"
#include "gtest/gtest.h"

namespace tandem {

// Parameterized by every place DeviceRegistry reports (semantics_test.cc).
class KernelSemantics : public ::testing::TestWithParam<Place> {};

// "cpu", "sim_0": a test-name-safe spelling of the place.
std::string PlaceTestName(const ::testing::TestParamInfo<Place>& info);

namespace semantics {

OpDesc Op(const std::string& type, AttrMap attrs = {});
// Op `type` with named input variables (so messages name them).
OpDesc Named(const std::string& type, std::map<std::string, std::vector<std::string>> inputs,
             AttrMap attrs = {});

// Deterministic values in [-1.5, 1.5] (k / 7 - 1.5, so integer T gets
// -1, 0 and 1), varied by `seed`.
template <typename T>
std::vector<T> Values(int64_t n, int seed) {
  std::vector<T> v(n);
  for (int64_t i = 0; i < n; ++i) {
    v[i] = static_cast<T>(((i * 37 + seed * 11) % 23) / 7.0 - 1.5);
  }
  return v;
}

// A host tensor variable.
template <typename T>
Variable Var(const Shape& shape, const std::vector<T>& values) {
  return Variable(Tensor::FromVector<T>(shape, values));
}

// Runs `op` on `place` (RunOpEager); every bound output variable, copied to
// the host, by argument. Unbound outputs are left out.
absl::StatusOr<std::map<std::string, std::vector<Tensor>>> RunAll(const Place& place,
                                                                  const OpDesc& op,
                                                                  const EagerInputs& inputs);
// The same, keeping the first variable of each output.
absl::StatusOr<std::map<std::string, Tensor>> RunFirst(const Place& place, const OpDesc& op,
                                                       const EagerInputs& inputs);

// The first variable of output `arg` as T.
template <typename T>
absl::StatusOr<std::vector<T>> RunValues(const Place& place, const OpDesc& op,
                                         const EagerInputs& inputs,
                                         const std::string& arg = "Out") {
  absl::StatusOr<std::map<std::string, Tensor>> outputs = RunFirst(place, op, inputs);
  if (!outputs.ok()) return outputs.status();
  auto it = outputs->find(arg);
  if (it == outputs->end()) return absl::InternalError(arg + " is not bound");
  return it->second.ToVector<T>();
}

}  // namespace semantics
}  // namespace tandem

#endif  // TANDEM_TESTS_CONFORMANCE_SEMANTICS_H_
