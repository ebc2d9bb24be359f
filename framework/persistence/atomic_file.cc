#include "framework/persistence/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace tandem {
namespace {

absl::Status ErrnoError(int error, const std::string& what, const std::string& path) {
  return absl::ErrnoToStatus(error, absl::StrCat(what, " '", path, "'"));
}

std::atomic<const AtomicFileWriteHook*> write_hook{nullptr};

}  // namespace

void SetAtomicFileWriteHookForTesting(const AtomicFileWriteHook* hook) { write_hook.store(hook); }

AtomicFileWriter::AtomicFileWriter(std::string path, std::string what)
    : path_(std::move(path)), tmp_(path_ + ".tmp"), what_(std::move(what)) {}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) close(fd_);
  if (created_) unlink(tmp_.c_str());
}

absl::Status AtomicFileWriter::Open() {
  CHECK_LT(fd_, 0) << "AtomicFileWriter::Open called twice for " << path_;
  // "" would write ".tmp" in the working directory, then fail to rename it.
  if (path_.empty()) return absl::InvalidArgumentError(absl::StrCat(what_, " path is empty"));
  fd_ = open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) return ErrnoError(errno, absl::StrCat("cannot create ", what_), tmp_);
  created_ = true;
  return absl::OkStatus();
}

absl::Status AtomicFileWriter::Write(const void* data, size_t n) {
  CHECK_GE(fd_, 0) << "AtomicFileWriter::Write before a successful Open for " << path_;
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    size_t chunk = std::min<size_t>(n, size_t{1} << 30);
    int injected = 0;
    if (const AtomicFileWriteHook* hook = write_hook.load()) {
      injected = (*hook)(tmp_, written_, &chunk);
      chunk = std::min(chunk, n);
    }
    const ssize_t w = chunk > 0 ? write(fd_, p, chunk) : 0;
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return ErrnoError(errno, absl::StrCat("cannot write ", what_), tmp_);
    p += w;
    n -= static_cast<size_t>(w);
    written_ += w;
    if (injected != 0) return ErrnoError(injected, absl::StrCat("cannot write ", what_), tmp_);
  }
  return absl::OkStatus();
}

absl::Status AtomicFileWriter::Commit() {
  CHECK_GE(fd_, 0) << "AtomicFileWriter::Commit before a successful Open for " << path_;
  if (fsync(fd_) != 0) return ErrnoError(errno, absl::StrCat("cannot fsync ", what_), tmp_);
  const int fd = fd_;
  fd_ = -1;
  if (close(fd) != 0) return ErrnoError(errno, absl::StrCat("cannot close ", what_), tmp_);
  if (rename(tmp_.c_str(), path_.c_str()) != 0) {
    return ErrnoError(errno, absl::StrCat("cannot rename '", tmp_, "' to"), path_);
  }
  created_ = false;
  const size_t slash = path_.find_last_of('/');
  const std::string dir =
      slash == std::string::npos ? "." : path_.substr(0, std::max<size_t>(slash, 1));
  const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return ErrnoError(errno, "cannot open directory", dir);
  const int synced = fsync(dir_fd);
  const int error = errno;
  close(dir_fd);
  if (synced != 0) return ErrnoError(error, "cannot fsync directory", dir);
  return absl::OkStatus();
}

}  // namespace tandem
