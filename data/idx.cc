#include "data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "framework/base/status_macros.h"

namespace tandem {
namespace {

// Larger arrays are taken as corrupt dims rather than allocated.
constexpr int64_t kMaxBytes = int64_t{1} << 40;
// Data is read in pieces of at most this many bytes.
constexpr int64_t kChunkBytes = int64_t{64} << 20;

bool KnownType(uint8_t code) {
  switch (static_cast<IdxType>(code)) {
    case IdxType::kUint8:
    case IdxType::kInt8:
    case IdxType::kInt16:
    case IdxType::kInt32:
    case IdxType::kFloat32:
    case IdxType::kFloat64:
      return true;
  }
  return false;
}

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};

// Reads a file through zlib (which passes non-gzip files through as they
// are), keeping the offset for messages.
class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  absl::Status Open() {
    errno = 0;
    file_.reset(gzopen(path_.c_str(), "rb"));
    if (file_ == nullptr) {
      const int error = errno != 0 ? errno : ENOMEM;
      if (error == ENOENT)
        return absl::NotFoundError(absl::StrCat("IDX file '", path_, "' does not exist"));
      return absl::ErrnoToStatus(error, absl::StrCat("cannot open IDX file '", path_, "'"));
    }
    return absl::OkStatus();
  }

  int64_t offset() const { return offset_; }

  absl::Status Error(absl::StatusCode code, const std::string& what, int64_t at) const {
    return absl::Status(code,
                        absl::StrCat("IDX file '", path_, "': ", what, " at byte offset ", at,
                                     gzdirect(file_.get()) ? "" : " (of the decompressed data)"));
  }

  // Reads up to n bytes; returns how many were read (fewer at the end).
  absl::StatusOr<int64_t> Read(void* dst, int64_t n) {
    char* p = static_cast<char*>(dst);
    int64_t done = 0;
    while (done < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<int64_t>(n - done, 1 << 30));
      const int r = gzread(file_.get(), p + done, chunk);
      if (r < 0) {
        int code = 0;
        const char* message = gzerror(file_.get(), &code);
        return Error(absl::StatusCode::kDataLoss,
                     absl::StrCat(code == Z_ERRNO ? std::strerror(errno) : message,
                                  " (corrupt or truncated gzip data)"),
                     offset_ + done);
      }
      if (r == 0) break;
      done += r;
    }
    offset_ += done;
    return done;
  }

  // Reads exactly n bytes of `what`; DataLoss (truncated) otherwise.
  absl::Status ReadExactly(void* dst, int64_t n, const std::string& what) {
    const int64_t at = offset_;
    ASSIGN_OR_RETURN(const int64_t got, Read(dst, n));
    if (got < n) {
      return Error(
          absl::StatusCode::kDataLoss,
          absl::StrCat("truncated: ", what, " needs ", n, " bytes, the file ends after ", got), at);
    }
    return absl::OkStatus();
  }

 private:
  std::string path_;
  std::unique_ptr<gzFile_s, GzCloser> file_;
  int64_t offset_ = 0;
};

}  // namespace

int IdxTypeSize(IdxType type) {
  switch (type) {
    case IdxType::kUint8:
    case IdxType::kInt8:
      return 1;
    case IdxType::kInt16:
      return 2;
    case IdxType::kInt32:
    case IdxType::kFloat32:
      return 4;
    case IdxType::kFloat64:
      return 8;
  }
  return 1;
}

int64_t IdxArray::item_elements() const {
  int64_t n = 1;
  for (size_t i = 1; i < dims.size(); ++i) n *= dims[i];
  return n;
}

double IdxArray::Value(int64_t i) const {
  const uint8_t* p = data.data() + i * IdxTypeSize(type);
  switch (type) {
    case IdxType::kUint8:
      return *p;
    case IdxType::kInt8:
      return static_cast<int8_t>(*p);
    case IdxType::kInt16: {
      int16_t v;
      std::memcpy(&v, p, sizeof(v));
      return v;
    }
    case IdxType::kInt32: {
      int32_t v;
      std::memcpy(&v, p, sizeof(v));
      return v;
    }
    case IdxType::kFloat32: {
      float v;
      std::memcpy(&v, p, sizeof(v));
      return v;
    }
    case IdxType::kFloat64: {
      double v;
      std::memcpy(&v, p, sizeof(v));
      return v;
    }
  }
  return 0;
}

absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path) {
  Reader in(path);
  RETURN_IF_ERROR(in.Open());
  uint8_t magic[4];
  RETURN_IF_ERROR(in.ReadExactly(magic, 4, "the magic number"));
  if (magic[0] != 0 || magic[1] != 0 || !KnownType(magic[2]) || magic[3] == 0) {
    return in.Error(absl::StatusCode::kInvalidArgument,
                    absl::StrFormat("bad magic number 0x%02x%02x%02x%02x (want 00 00, a type code "
                                    "08 09 0b 0c 0d or 0e, and at least one dim)",
                                    magic[0], magic[1], magic[2], magic[3]),
                    0);
  }
  IdxArray a;
  a.type = static_cast<IdxType>(magic[2]);
  const int elem = IdxTypeSize(a.type);
  std::vector<uint8_t> dim_bytes(4 * magic[3]);
  RETURN_IF_ERROR(in.ReadExactly(dim_bytes.data(), dim_bytes.size(),
                                 absl::StrCat("the ", static_cast<int>(magic[3]), " dims")));
  int64_t elements = 1;
  for (int d = 0; d < magic[3]; ++d) {
    const uint8_t* b = dim_bytes.data() + 4 * d;
    const int64_t dim = (int64_t{b[0]} << 24) | (b[1] << 16) | (b[2] << 8) | b[3];
    a.dims.push_back(dim);
    if (dim != 0 && elements > kMaxBytes / elem / dim) {
      return in.Error(
          absl::StatusCode::kInvalidArgument,
          absl::StrCat("dims [", absl::StrJoin(a.dims, ", "), "...] exceed ", kMaxBytes, " bytes"),
          4 + 4 * d);
    }
    elements *= dim;
  }
  // Grown as data arrives, so dims that lie cost no memory.
  const int64_t total = elements * elem;
  const int64_t data_at = in.offset();
  for (int64_t done = 0; done < total;) {
    const int64_t chunk = std::min<int64_t>(total - done, kChunkBytes);
    a.data.resize(done + chunk);
    ASSIGN_OR_RETURN(const int64_t got, in.Read(a.data.data() + done, chunk));
    done += got;
    if (got < chunk) {
      return in.Error(absl::StatusCode::kDataLoss,
                      absl::StrCat("truncated: the data of dims [", absl::StrJoin(a.dims, ", "),
                                   "] needs ", total, " bytes, the file ends after ", done),
                      data_at);
    }
  }
  uint8_t extra;
  const int64_t end = in.offset();
  ASSIGN_OR_RETURN(const int64_t more, in.Read(&extra, 1));
  if (more > 0) {
    return in.Error(absl::StatusCode::kInvalidArgument,
                    absl::StrCat("bytes after the last element of dims [",
                                 absl::StrJoin(a.dims, ", "), "] (wrong dims?)"),
                    end);
  }
  if (elem > 1) {  // big-endian to host order (little-endian hosts)
    for (size_t i = 0; i < a.data.size(); i += elem) {
      std::reverse(a.data.begin() + i, a.data.begin() + i + elem);
    }
  }
  return a;
}

}  // namespace tandem
