// Writes the interop tensors (safetensors_testdata.h) to the path given, for
// tools/make_safetensors_testdata.py --verify:
//
//   bazel run //framework/persistence:safetensors_interop_writer -- /tmp/tandem.safetensors
#include <cstdio>

#include "framework/persistence/safetensors.h"
#include "framework/persistence/safetensors_testdata.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.safetensors\n", argv[0]);
    return 2;
  }
  const absl::Status s =
      tandem::WriteSafetensors(tandem::InteropTensors(), argv[1], tandem::InteropMetadata());
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("wrote %s\n", argv[1]);
  return 0;
}
