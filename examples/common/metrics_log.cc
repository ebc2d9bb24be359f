#include "examples/common/metrics_log.h"

#include <cerrno>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tandem {
namespace {

// `s` as a JSON string literal.
std::string Quote(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

}  // namespace

MetricsRecord::MetricsRecord(absl::string_view kind) { Add("kind", kind); }

MetricsRecord& MetricsRecord::Add(absl::string_view key, int64_t value) {
  absl::StrAppend(&fields_, fields_.empty() ? "" : ",", Quote(key), ":", value);
  return *this;
}

MetricsRecord& MetricsRecord::Add(absl::string_view key, double value) {
  absl::StrAppend(&fields_, fields_.empty() ? "" : ",", Quote(key), ":",
                  std::isfinite(value) ? absl::StrFormat("%.9g", value) : "null");
  return *this;
}

MetricsRecord& MetricsRecord::Add(absl::string_view key, absl::string_view value) {
  absl::StrAppend(&fields_, fields_.empty() ? "" : ",", Quote(key), ":", Quote(value));
  return *this;
}

MetricsRecord& MetricsRecord::AddCopies(const RunStats& stats) {
  return Add("h2d_copies", stats.copies_h2d)
      .Add("h2d_bytes", stats.bytes_h2d)
      .Add("d2h_copies", stats.copies_d2h)
      .Add("d2h_bytes", stats.bytes_d2h);
}

std::string MetricsRecord::ToJson() const { return absl::StrCat("{", fields_, "}"); }

absl::StatusOr<std::unique_ptr<MetricsLog>> MetricsLog::Open(const std::string& path, bool append) {
  std::FILE* file = std::fopen(path.c_str(), append ? "a" : "w");
  if (file == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot open --metrics_out file '", path, "': ", std::strerror(errno)));
  }
  return std::unique_ptr<MetricsLog>(new MetricsLog(path, file));
}

MetricsLog::~MetricsLog() { std::fclose(file_); }

absl::Status MetricsLog::Write(const MetricsRecord& record) {
  const std::string line = absl::StrCat(record.ToJson(), "\n");
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    return absl::DataLossError(
        absl::StrCat("cannot write to --metrics_out file '", path_, "': ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace tandem
