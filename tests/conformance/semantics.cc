// PlaceTestName and semantics::Op (semantics.h).
#include "tests/conformance/semantics.h"

#include <utility>

#include "framework/device/device.h"

namespace tandem {

std::string PlaceTestName(const ::testing::TestParamInfo<Place>& info) {
  std::string name = info.param.ToString();
  for (char& c : name) {
    if (c == ':') c = '_';
  }
  return name;
}

namespace semantics {

OpDesc Op(const std::string& type, AttrMap attrs) {
  OpDesc op;
  op.type = type;
  op.attrs = std::move(attrs);
  return op;
}

OpDesc Named(const std::string& type, std::map<std::string, std::vector<std::string>> inputs,
             AttrMap attrs) {
  OpDesc op = Op(type, std::move(attrs));
  op.inputs = std::move(inputs);
  return op;
}

absl::StatusOr<std::map<std::string, std::vector<Tensor>>> RunAll(const Place& place,
                                                                  const OpDesc& op,
                                                                  const EagerInputs& inputs) {
  absl::StatusOr<EagerOutputs> outputs = RunOpEager(op, place, inputs);
  if (!outputs.ok()) return outputs.status();
  std::map<std::string, std::vector<Tensor>> host;
  for (const auto& [arg, vars] : *outputs) {
    for (const Variable& v : vars) {
      if (v.empty()) continue;  // deliberately unbound
      absl::StatusOr<Tensor> t = CopyTensorTo(v.tensor(), CPUPlace());
      if (!t.ok()) return t.status();
      host[arg].push_back(*std::move(t));
    }
  }
  return host;
}

absl::StatusOr<std::map<std::string, Tensor>> RunFirst(const Place& place, const OpDesc& op,
                                                       const EagerInputs& inputs) {
  absl::StatusOr<std::map<std::string, std::vector<Tensor>>> all = RunAll(place, op, inputs);
  if (!all.ok()) return all.status();
  std::map<std::string, Tensor> first;
  for (auto& [arg, tensors] : *all) first.emplace(arg, std::move(tensors[0]));
  return first;
}

}  // namespace semantics
}  // namespace tandem
