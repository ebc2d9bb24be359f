// For fuzz targets whose entry point reads a file: writes the input to a
// file of this process's own (made once, rewritten per input).
//
//   const std::string& path = WriteFuzzInput(data, size);
//   (void)LoadCheckpoint(path, &scope);
#ifndef TANDEM_FRAMEWORK_TESTING_FUZZ_FILE_H_
#define TANDEM_FRAMEWORK_TESTING_FUZZ_FILE_H_

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "glog/logging.h"

namespace tandem {

inline const std::string& WriteFuzzInput(const uint8_t* data, size_t size) {
  static const std::string* path = [] {
    const char* dir = std::getenv("TEST_TMPDIR");
    std::string p = std::string(dir != nullptr ? dir : "/tmp") + "/fuzz_input_" +
                    std::to_string(getpid());
    return new std::string(p);
  }();
  std::ofstream out(*path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  CHECK(out.good()) << "cannot write " << *path;
  return *path;
}

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_TESTING_FUZZ_FILE_H_
