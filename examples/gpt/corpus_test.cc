#include "examples/gpt/corpus.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

fs::path TempDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  fs::path dir = fs::path(base != nullptr ? base : "/tmp") / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void Write(const fs::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary) << bytes;
}

TEST(Corpus, ReadsTextFilesInNameOrderSkippingIndexesAndLinks) {
  const fs::path dir = TempDir("corpus_dir");
  Write(dir / "b", "0123456789");
  Write(dir / "a", "abcdefghij");
  Write(dir / "a.dat", std::string("\0\1\2", 3));  // fortune's index: binary, skipped
  fs::create_symlink(dir / "a", dir / "a.u8");
  ASSERT_OK_AND_ASSIGN(Corpus c, Corpus::Load(dir.string(), 0.5));
  EXPECT_EQ(c.files(), 2);
  EXPECT_EQ(c.train_bytes(), 10);
  EXPECT_EQ(c.validation_bytes(), 10);
  std::vector<int64_t> tokens, targets;
  c.ValidationWindows(/*seq=*/3, /*batch=*/1, /*index=*/0, /*count=*/1, &tokens, &targets);
  EXPECT_EQ(tokens, (std::vector<int64_t>{'0', '1', '2'}));  // "a" first, then "b"
  EXPECT_EQ(targets, (std::vector<int64_t>{'1', '2', '3'}));
  c.TrainWindows(3, 4, /*step=*/7, /*seed=*/1, &tokens, &targets);
  ASSERT_EQ(tokens.size(), 12u);
  for (size_t i = 0; i < tokens.size(); ++i) {
    EXPECT_GE(tokens[i], 'a');
    EXPECT_LE(targets[i], 'j');
    EXPECT_EQ(targets[i], tokens[i] + 1);  // the next byte
  }
  std::vector<int64_t> again, again_targets;
  c.TrainWindows(3, 4, 7, 1, &again, &again_targets);
  EXPECT_EQ(again, tokens);  // (seed, step) alone decide
  c.TrainWindows(3, 4, 8, 1, &again, &again_targets);
  EXPECT_NE(again, tokens);
  EXPECT_OK(c.CheckFits(8));
  EXPECT_THAT(c.CheckFits(9), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("10 training and 10 validation bytes cannot "
                                                 "fill a window of seq + 1 = 10 bytes")));
}

TEST(Corpus, ClearErrors) {
  EXPECT_THAT(Corpus::Load("/no/such/corpus", 0.1).status(),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("'/no/such/corpus' does not exist (the default is Debian's "
                                 "fortunes package")));
  const fs::path dir = TempDir("corpus_binary");
  Write(dir / "data.bin", std::string("text\0more", 9));
  EXPECT_THAT(Corpus::Load((dir / "data.bin").string(), 0.1).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("data.bin' is not text: a NUL byte at offset 4")));
  const fs::path empty = TempDir("corpus_empty");
  EXPECT_THAT(Corpus::Load(empty.string(), 0.1).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("holds no text")));
  EXPECT_THAT(Corpus::Load(empty.string(), 1.0).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("validation fraction must be in (0, 1), got 1")));
}

}  // namespace
}  // namespace tandem
