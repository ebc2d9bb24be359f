// Fuzz target: LoadCheckpoint. Any bytes load without crashing, as OK or
// an error; a failed load leaves the scope as it was; a checkpoint it
// accepts saves again.
#include <cstddef>
#include <cstdint>

#include "framework/persistence/checkpoint.h"
#include "framework/testing/fuzz_file.h"
#include "glog/logging.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tandem::Scope scope;
  const absl::Status s = tandem::LoadCheckpoint(tandem::WriteFuzzInput(data, size), &scope,
                                                {});
  if (!s.ok()) {
    CHECK(scope.Names().empty()) << s;
    return 0;
  }
  const std::string again = tandem::WriteFuzzInput(nullptr, 0) + ".saved";
  const absl::Status saved = tandem::SaveCheckpoint(scope, scope.Names(), again);
  CHECK(saved.ok()) << saved;
  return 0;
}
