#include "data/idx.h"

#include <fstream>
#include <iterator>

#include "data/idx_testutil.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::AllOf;

TEST(ReadIdxFile, Uint8ImagesPlainAndGzipped) {
  std::string pixels;
  for (int i = 0; i < 2 * 3 * 4; ++i) pixels.push_back(static_cast<char>(i * 10));
  for (bool gzip : {false, true}) {
    const std::string path = TestPath(gzip ? "images.idx.gz" : "images.idx");
    WriteIdx(path, IdxBytes(0x08, {2, 3, 4}, pixels), gzip);
    ASSERT_OK_AND_ASSIGN(IdxArray a, ReadIdxFile(path));
    EXPECT_EQ(a.type, IdxType::kUint8);
    EXPECT_EQ(a.dims, (std::vector<int64_t>{2, 3, 4}));
    EXPECT_EQ(a.num_items(), 2);
    EXPECT_EQ(a.item_elements(), 12);
    ASSERT_EQ(a.data.size(), 24u);
    EXPECT_EQ(a.Value(0), 0);
    EXPECT_EQ(a.Value(23), 230);
  }
}

TEST(ReadIdxFile, MultiByteTypesAreBigEndian) {
  const std::string path = TestPath("types.idx");
  WriteIdx(path, IdxBytes(0x0B, {2}, std::string("\x01\x02\xff\xfe", 4)), false);
  ASSERT_OK_AND_ASSIGN(IdxArray i16, ReadIdxFile(path));
  EXPECT_EQ(i16.Value(0), 0x0102);
  EXPECT_EQ(i16.Value(1), -2);
  WriteIdx(path, IdxBytes(0x0C, {1}, std::string("\xff\xff\xff\xf9", 4)), false);
  ASSERT_OK_AND_ASSIGN(IdxArray i32, ReadIdxFile(path));
  EXPECT_EQ(i32.Value(0), -7);
  WriteIdx(path, IdxBytes(0x0D, {1}, std::string("\x3f\xc0\x00\x00", 4)), false);  // 1.5f
  ASSERT_OK_AND_ASSIGN(IdxArray f32, ReadIdxFile(path));
  EXPECT_EQ(f32.Value(0), 1.5);
  WriteIdx(path, IdxBytes(0x0E, {1}, std::string("\xc0\x04\x00\x00\x00\x00\x00\x00", 8)), false);
  ASSERT_OK_AND_ASSIGN(IdxArray f64, ReadIdxFile(path));
  EXPECT_EQ(f64.Value(0), -2.5);
  WriteIdx(path, IdxBytes(0x09, {1}, "\xfd"), false);
  ASSERT_OK_AND_ASSIGN(IdxArray i8, ReadIdxFile(path));
  EXPECT_EQ(i8.Value(0), -3);
}

TEST(ReadIdxFile, MissingFileIsNotFound) {
  const std::string path = TestPath("no_such.idx");
  EXPECT_THAT(ReadIdxFile(path),
              StatusIs(absl::StatusCode::kNotFound, "IDX file '" + path + "' does not exist"));
}

TEST(ReadIdxFile, BadMagicOrDimsAreInvalidArgumentNamingFileAndOffset) {
  const std::string path = TestPath("bad.idx");
  WriteIdx(path, std::string("\x00\x01\x08\x01\x00\x00\x00\x01\x05", 9), false);
  EXPECT_THAT(ReadIdxFile(path), StatusIs(absl::StatusCode::kInvalidArgument,
                                          AllOf(HasSubstr("IDX file '" + path + "'"),
                                                HasSubstr("bad magic number 0x00010801"),
                                                HasSubstr("at byte offset 0"))));
  WriteIdx(path, IdxBytes(0x0A, {1}, "\x05"), false);  // no type 0x0a
  EXPECT_THAT(ReadIdxFile(path), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("bad magic number 0x00000a01")));
  WriteIdx(path, IdxBytes(0x08, {}, ""), false);  // zero dims
  EXPECT_THAT(ReadIdxFile(path), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("bad magic number 0x00000800")));
  // Dims that claim fewer bytes than the file has.
  WriteIdx(path, IdxBytes(0x08, {2, 2}, "abcde"), true);
  EXPECT_THAT(ReadIdxFile(path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("bytes after the last element of dims [2, 2] (wrong dims?)"),
                             HasSubstr("at byte offset 16 (of the decompressed data)"))));
  // Dims too large to be real.
  WriteIdx(path, IdxBytes(0x0E, {0xffffffff, 0xffffffff}, ""), false);
  EXPECT_THAT(ReadIdxFile(path), StatusIs(absl::StatusCode::kInvalidArgument,
                                          AllOf(HasSubstr("exceed"), HasSubstr("byte offset 8"))));
}

TEST(ReadIdxFile, TruncationIsDataLossNamingFileAndOffset) {
  const std::string path = TestPath("short.idx");
  WriteIdx(path, std::string("\x00\x00", 2), false);
  EXPECT_THAT(ReadIdxFile(path),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("IDX file '" + path + "'"),
                             HasSubstr("truncated: the magic number needs 4 bytes, the file ends "
                                       "after 2"),
                             HasSubstr("at byte offset 0"))));
  WriteIdx(path, IdxBytes(0x08, {3, 28}, "").substr(0, 9), false);
  EXPECT_THAT(ReadIdxFile(path),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("the 2 dims needs 8 bytes"), HasSubstr("byte offset 4"))));
  // Dims claiming 64 GiB over 3 bytes of data: an error, not an allocation.
  WriteIdx(path, IdxBytes(0x08, {1u << 20, 1u << 16}, "abc"), false);
  EXPECT_THAT(ReadIdxFile(path),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("needs 68719476736 bytes, the file ends after 3")));
  for (bool gzip : {false, true}) {
    WriteIdx(path, IdxBytes(0x08, {3, 28}, std::string(50, 'x')), gzip);
    EXPECT_THAT(ReadIdxFile(path),
                StatusIs(absl::StatusCode::kDataLoss,
                         AllOf(HasSubstr("truncated: the data of dims [3, 28] needs 84 bytes, the "
                                         "file ends after 50"),
                               HasSubstr("at byte offset 12"))));
  }
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(ReadIdxFile, CutOrCorruptGzipIsDataLoss) {
  const std::string path = TestPath("cut.idx.gz");
  std::string pixels;
  for (int i = 0; i < 4000; ++i) pixels.push_back(static_cast<char>(i * 7919 >> 3));
  WriteIdx(path, IdxBytes(0x08, {40, 100}, pixels), true);
  const std::string gz = ReadBytes(path);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << gz.substr(0, gz.size() / 2);
  EXPECT_THAT(ReadIdxFile(path),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("IDX file '" + path + "'"), HasSubstr("byte offset"))));
  std::string corrupt = gz;
  for (size_t i = 20; i < 60; ++i) corrupt[i] ^= 0x5a;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << corrupt;
  EXPECT_THAT(ReadIdxFile(path),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("corrupt or truncated gzip data")));
}

}  // namespace
}  // namespace tandem
