#include "framework/persistence/atomic_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "framework/testing/file_testutil.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

TEST(AtomicFileWriter, CommitReplacesTheFileWhole) {
  const std::string path = TempPath("commit.bin");
  WriteFile(path, "old contents");
  AtomicFileWriter out(path, "test file");
  ASSERT_OK(out.Open());
  EXPECT_EQ(out.temp_path(), path + ".tmp");
  ASSERT_OK(out.Write("new", 3));
  ASSERT_OK(out.Write(" bytes", 6));
  EXPECT_EQ(ReadFile(path), "old contents");  // not yet
  ASSERT_OK(out.Commit());
  EXPECT_EQ(ReadFile(path), "new bytes");
  EXPECT_FALSE(Exists(path + ".tmp"));
}

TEST(AtomicFileWriter, WithoutCommitTheOldFileStaysAndTheTemporaryGoes) {
  const std::string path = TempPath("abandoned.bin");
  WriteFile(path, "old");
  {
    AtomicFileWriter out(path, "test file");
    ASSERT_OK(out.Open());
    ASSERT_OK(out.Write("partial", 7));
    EXPECT_TRUE(Exists(path + ".tmp"));
  }
  EXPECT_EQ(ReadFile(path), "old");
  EXPECT_FALSE(Exists(path + ".tmp"));
}

TEST(AtomicFileWriter, ErrorsNameTheFileAndKeepTheErrnoCode) {
  const std::string path = TempPath("no/such/dir/x.bin");
  AtomicFileWriter out(path, "test file");
  EXPECT_THAT(out.Open(),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr(absl::StrCat("cannot create test file '", path, ".tmp'"))));
  // Renaming onto a directory fails; the temporary is removed.
  const std::string dir = TempPath("a_directory");
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((dir + "/child").c_str(), 0755), 0);  // non-empty: rename fails
  {
    AtomicFileWriter onto_dir(dir, "test file");
    ASSERT_OK(onto_dir.Open());
    EXPECT_THAT(onto_dir.Commit(),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         HasSubstr(absl::StrCat("cannot rename '", dir, ".tmp' to '", dir, "'"))));
  }
  EXPECT_FALSE(Exists(dir + ".tmp"));
}

TEST(AtomicFileWriter, AnEmptyPathIsInvalidAndCreatesNothing) {
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  ASSERT_EQ(chdir(::testing::TempDir().c_str()), 0);  // where "" would put ".tmp"
  {
    AtomicFileWriter out("", "test file");
    EXPECT_THAT(out.Open(),
                StatusIs(absl::StatusCode::kInvalidArgument, "test file path is empty"));
    EXPECT_FALSE(Exists(".tmp"));
  }
  EXPECT_FALSE(Exists(".tmp"));
  ASSERT_EQ(chdir(cwd), 0);
}

}  // namespace
}  // namespace tandem
