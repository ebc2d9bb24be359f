// A JSON Lines log of a training run (--metrics_out=FILE.jsonl): one JSON
// object per line, each written whole and flushed to the operating system
// at once, so a run that is killed keeps every line it logged.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<MetricsLog> log,
//                    MetricsLog::Open(FLAGS_metrics_out, /*append=*/FLAGS_resume));
//   RETURN_IF_ERROR(log->Write(MetricsRecord("train").Add("step", step).Add("loss", 0.25)));
//   // {"kind":"train","step":100,"loss":0.25}
//
// tools/plot_metrics.py draws the curves of one or more such files.
#ifndef TANDEM_EXAMPLES_COMMON_METRICS_LOG_H_
#define TANDEM_EXAMPLES_COMMON_METRICS_LOG_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "framework/runtime/executor.h"

namespace tandem {

// One line of the log: {"kind": KIND, then the fields in the order added}.
// Doubles are written with 9 significant digits; NaN and infinities as null
// (JSON has no literal for them).
class MetricsRecord {
 public:
  // `kind`: "train" for a logged training step, "eval" for an evaluation.
  explicit MetricsRecord(absl::string_view kind);

  MetricsRecord& Add(absl::string_view key, int64_t value);
  MetricsRecord& Add(absl::string_view key, int value) { return Add(key, int64_t{value}); }
  MetricsRecord& Add(absl::string_view key, double value);
  MetricsRecord& Add(absl::string_view key, absl::string_view value);
  MetricsRecord& Add(absl::string_view key, const char* value) {
    return Add(key, absl::string_view(value));
  }
  // The host<->device copies of one step: h2d_copies, h2d_bytes, d2h_copies,
  // d2h_bytes (placed copies; fetches of the results are not counted).
  MetricsRecord& AddCopies(const RunStats& stats);

  // The JSON object, without the newline.
  std::string ToJson() const;

 private:
  std::string fields_;  // `"key":value` pairs joined by commas
};

class MetricsLog {
 public:
  // Opens `path` for writing (truncating it) or, with `append`, for adding
  // lines after the ones there (a resumed run continues its log).
  // InvalidArgument naming --metrics_out when it cannot be opened.
  static absl::StatusOr<std::unique_ptr<MetricsLog>> Open(const std::string& path, bool append);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  // Writes `record` as one line and flushes it. DataLoss naming the file
  // when the write fails (a full disk, for one).
  absl::Status Write(const MetricsRecord& record);

  const std::string& path() const { return path_; }

 private:
  MetricsLog(std::string path, std::FILE* file) : path_(std::move(path)), file_(file) {}
  std::string path_;
  std::FILE* file_;
};

}  // namespace tandem

#endif  // TANDEM_EXAMPLES_COMMON_METRICS_LOG_H_
