// Test helpers: IDX files written by the tests themselves, plain or gzipped.
//
//   WriteIdx(path, IdxBytes(0x08, {2, 3}, std::string(6, '\x07')), /*gzip=*/true);
#ifndef TANDEM_DATA_IDX_TESTUTIL_H_
#define TANDEM_DATA_IDX_TESTUTIL_H_

#include <zlib.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tandem {

// The bytes of an IDX file: magic (type code, dims count), big-endian dims,
// then `payload` (already big-endian).
inline std::string IdxBytes(uint8_t type, const std::vector<uint32_t>& dims,
                            const std::string& payload) {
  std::string out = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(d >> shift));
  }
  return out + payload;
}

inline void WriteIdx(const std::string& path, const std::string& bytes, bool gzip) {
  if (!gzip) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    return;
  }
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

inline std::string TestPath(const std::string& name) { return ::testing::TempDir() + "/" + name; }

}  // namespace tandem

#endif  // TANDEM_DATA_IDX_TESTUTIL_H_
