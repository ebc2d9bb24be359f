#include "examples/common/metrics_log.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string TempPath(const std::string& name) {
  return testing::TempDir() + name;  // ends with a slash; set without Bazel too
}

TEST(MetricsRecordTest, FieldsInOrderAfterTheKind) {
  EXPECT_EQ(MetricsRecord("train").Add("step", 100).Add("loss", 0.25).ToJson(),
            R"({"kind":"train","step":100,"loss":0.25})");
  EXPECT_EQ(MetricsRecord("eval").Add("epoch", int64_t{3}).Add("accuracy", 0.8984375).ToJson(),
            R"({"kind":"eval","epoch":3,"accuracy":0.8984375})");
}

TEST(MetricsRecordTest, DoublesKeepNineDigitsAndLargeIntegersStayExact) {
  EXPECT_EQ(MetricsRecord("train").Add("loss", 1.0 / 3).ToJson(),
            R"({"kind":"train","loss":0.333333333})");
  EXPECT_EQ(MetricsRecord("train").Add("bytes", int64_t{6000000000}).ToJson(),
            R"({"kind":"train","bytes":6000000000})");
}

TEST(MetricsRecordTest, NonFiniteNumbersAreNull) {
  EXPECT_EQ(MetricsRecord("train")
                .Add("loss", std::nan(""))
                .Add("rate", std::numeric_limits<double>::infinity())
                .ToJson(),
            R"({"kind":"train","loss":null,"rate":null})");
}

TEST(MetricsRecordTest, StringsAreEscaped) {
  EXPECT_EQ(MetricsRecord("a\"b\\c\nd\x01").ToJson(), R"({"kind":"a\"b\\c\nd\u0001"})");
}

TEST(MetricsRecordTest, CopiesOfAStep) {
  RunStats stats;
  stats.copies_h2d = 5;
  stats.bytes_h2d = 135168;
  stats.copies_d2h = 4;
  stats.bytes_d2h = 131072;
  stats.fetch_copies = 1;  // not a placed copy
  EXPECT_EQ(MetricsRecord("train").AddCopies(stats).ToJson(),
            R"({"kind":"train","h2d_copies":5,"h2d_bytes":135168,"d2h_copies":4,)"
            R"("d2h_bytes":131072})");
}

TEST(MetricsLogTest, EachLineIsInTheFileAsSoonAsItIsWritten) {
  const std::string path = TempPath("flushed.jsonl");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsLog> log, MetricsLog::Open(path, false));
  ASSERT_OK(log->Write(MetricsRecord("train").Add("step", 1)));
  // Read while the log is still open: nothing waits in a buffer.
  EXPECT_EQ(ReadFile(path), "{\"kind\":\"train\",\"step\":1}\n");
  ASSERT_OK(log->Write(MetricsRecord("eval").Add("step", 1).Add("auc", 0.75)));
  EXPECT_EQ(ReadFile(path),
            "{\"kind\":\"train\",\"step\":1}\n{\"kind\":\"eval\",\"step\":1,\"auc\":0.75}\n");
}

TEST(MetricsLogTest, TruncatesUnlessAppending) {
  const std::string path = TempPath("resumed.jsonl");
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsLog> log, MetricsLog::Open(path, false));
    ASSERT_OK(log->Write(MetricsRecord("train").Add("step", 1)));
  }
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsLog> log, MetricsLog::Open(path, true));
    ASSERT_OK(log->Write(MetricsRecord("train").Add("step", 2)));
  }
  EXPECT_EQ(ReadFile(path), "{\"kind\":\"train\",\"step\":1}\n{\"kind\":\"train\",\"step\":2}\n");
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsLog> log, MetricsLog::Open(path, false));
    ASSERT_OK(log->Write(MetricsRecord("train").Add("step", 3)));
  }
  EXPECT_EQ(ReadFile(path), "{\"kind\":\"train\",\"step\":3}\n");
}

TEST(MetricsLogTest, UnopenableFileNamesTheFlagAndThePath) {
  absl::StatusOr<std::unique_ptr<MetricsLog>> log =
      MetricsLog::Open("/nonexistent/dir/m.jsonl", false);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(log.status().message().find("--metrics_out file '/nonexistent/dir/m.jsonl'"),
            std::string::npos)
      << log.status();
}

}  // namespace
}  // namespace tandem
