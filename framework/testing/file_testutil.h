// Test helpers for files in the test's temporary directory.
//
//   const std::string path = TempPath("model.ckpt");  // <::testing::TempDir()>/model.ckpt
//   WriteFile(path, bytes);                            // replaces the file
//   EXPECT_EQ(ReadFile(path), bytes);                  // "" if it cannot be read
#ifndef TANDEM_FRAMEWORK_TESTING_FILE_TESTUTIL_H_
#define TANDEM_FRAMEWORK_TESTING_FILE_TESTUTIL_H_

#include <fstream>
#include <iterator>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tandem {

inline std::string TempPath(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/", name);
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_TESTING_FILE_TESTUTIL_H_
