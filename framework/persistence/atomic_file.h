// AtomicFileWriter: writes a file so that readers of `path` see either its
// old contents or the complete new ones, never a part (a crash or a full
// disk midway leaves the old file in place).
//
//   AtomicFileWriter out("/ckpt/model.safetensors", "safetensors file");
//   RETURN_IF_ERROR(out.Open());                       // creates "<path>.tmp"
//   RETURN_IF_ERROR(out.Write(header.data(), header.size()));
//   RETURN_IF_ERROR(out.Write(data, bytes));
//   RETURN_IF_ERROR(out.Commit());  // fsync, rename over `path`, fsync the directory
//
// Writes go to "<path>.tmp"; Commit() fsyncs and closes it, renames it over
// `path` and fsyncs the directory. If the writer is destroyed before Commit()
// succeeded, the temporary file is removed. Errors carry the errno's code
// (NotFound, PermissionDenied, ResourceExhausted, ...) and name the file:
// "cannot create <what> '/ckpt/model.safetensors.tmp'". Not thread-safe.
#ifndef TANDEM_FRAMEWORK_PERSISTENCE_ATOMIC_FILE_H_
#define TANDEM_FRAMEWORK_PERSISTENCE_ATOMIC_FILE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"

namespace tandem {

// Fault injection, for tests only: when set, every AtomicFileWriter calls
// it before each write(2) with the temporary file's path, the bytes written
// to it so far and, in *n, the bytes about to be written. It may shorten *n;
// a non-zero errno it returns (ENOSPC, EIO) fails the write as the system
// would, after the first *n bytes were written (a disk filling up midway).
// nullptr (the default) removes it; the caller keeps it alive meanwhile.
using AtomicFileWriteHook =
    std::function<int(const std::string& temp_path, int64_t offset, size_t* n)>;
void SetAtomicFileWriteHookForTesting(const AtomicFileWriteHook* hook);

class AtomicFileWriter {
 public:
  // `what` names the file in messages ("checkpoint file").
  AtomicFileWriter(std::string path, std::string what);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // Creates (truncates) the temporary file. An empty `path` is
  // InvalidArgument ("<what> path is empty"), and nothing is created.
  absl::Status Open();
  // Appends n bytes; Open() must have succeeded (CHECKed).
  absl::Status Write(const void* data, size_t n);
  // Makes the written bytes the contents of `path`, durably.
  absl::Status Commit();

  const std::string& temp_path() const { return tmp_; }

 private:
  std::string path_, tmp_, what_;
  int fd_ = -1;
  int64_t written_ = 0;   // bytes written to tmp_
  bool created_ = false;  // tmp_ exists and is ours to remove
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_PERSISTENCE_ATOMIC_FILE_H_
