// Fuzz target: the safetensors reader (ReadSafetensors, LoadSafetensors).
// Any bytes read without crashing, as OK or an error; a failed load leaves
// the scope as it was; a file it accepts loads into the scope with the same
// tensors, writes again (WriteSafetensors) and reads back to the same names,
// dtypes, shapes, bytes and metadata.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "framework/persistence/safetensors.h"
#include "framework/testing/fuzz_file.h"
#include "glog/logging.h"

namespace {

bool SameTensor(const tandem::Tensor& a, const tandem::Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.NumBytes() == b.NumBytes() &&
         (a.NumBytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.NumBytes()) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = tandem::WriteFuzzInput(data, size);
  absl::StatusOr<tandem::SafetensorsContents> read = tandem::ReadSafetensors(path);
  tandem::Scope scope;
  const absl::Status loaded = tandem::LoadSafetensors(path, &scope);
  CHECK_EQ(read.ok(), loaded.ok()) << read.status() << " vs " << loaded;
  if (!loaded.ok()) {
    CHECK(scope.Names().empty()) << loaded;
    return 0;
  }
  std::vector<std::pair<std::string, tandem::Tensor>> tensors;
  for (const tandem::SafetensorsTensor& t : read->tensors) {
    const tandem::Variable* v = scope.Find(t.name);
    CHECK(v != nullptr && v->data_tensor() != nullptr) << t.name << " was not loaded";
    CHECK(SameTensor(*v->data_tensor(), t.tensor)) << t.name << " loaded differently";
    tensors.push_back({t.name, t.tensor});
  }
  CHECK_EQ(scope.Names().size(), tensors.size());
  const std::string again = path + ".saved";
  const absl::Status written = tandem::WriteSafetensors(tensors, again, read->metadata);
  CHECK(written.ok()) << written;
  absl::StatusOr<tandem::SafetensorsContents> back = tandem::ReadSafetensors(again);
  CHECK(back.ok()) << back.status();
  CHECK(back->metadata == read->metadata);
  CHECK_EQ(back->tensors.size(), tensors.size());
  std::map<std::string, const tandem::Tensor*> by_name;
  for (const tandem::SafetensorsTensor& t : back->tensors) by_name[t.name] = &t.tensor;
  for (const auto& [name, tensor] : tensors) {
    CHECK(by_name.count(name) > 0 && SameTensor(*by_name[name], tensor)) << name << " changed";
  }
  return 0;
}
