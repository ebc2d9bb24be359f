// Fuzz target: ReadIdxFile (gzip or plain). Any bytes are read without
// crashing; an array it accepts is consistent: its data holds exactly the
// elements its dims describe.
#include <cstddef>
#include <cstdint>

#include "data/idx.h"
#include "framework/testing/fuzz_file.h"
#include "glog/logging.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::StatusOr<tandem::IdxArray> a =
      tandem::ReadIdxFile(tandem::WriteFuzzInput(data, size));
  if (!a.ok()) return 0;
  int64_t elements = 1;
  for (int64_t d : a->dims) elements *= d;
  CHECK_EQ(static_cast<uint64_t>(elements) * tandem::IdxTypeSize(a->type), a->data.size());
  return 0;
}
