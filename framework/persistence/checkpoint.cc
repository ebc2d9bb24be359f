#include "framework/persistence/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "framework/base/status_macros.h"
#include "framework/device/device.h"
#include "framework/device/device_registry.h"
#include "framework/persistence/atomic_file.h"
#include "zlib.h"

namespace tandem {
namespace {

constexpr char kMagic[8] = {'T', 'N', 'D', 'M', 'C', 'K', 'P', 'T'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 20;  // magic, version, count, header CRC
constexpr uint32_t kMaxStringBytes = 4096;
constexpr uint32_t kMaxRank = 64;

// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320) through zlib.
class Crc32 {
 public:
  void Update(const void* data, size_t n) {
    value_ = crc32_z(value_, static_cast<const Bytef*>(data), n);
  }
  uint32_t value() const { return static_cast<uint32_t>(value_); }

 private:
  uLong value_ = crc32_z(0, Z_NULL, 0);
};

template <typename T>
void AppendLittleEndian(T value, std::string* out) {
  for (size_t i = 0; i < sizeof(T); ++i) {
    out->push_back(static_cast<char>(static_cast<uint64_t>(value) >> (8 * i)));
  }
}

void AppendString(const std::string& s, std::string* out) {
  AppendLittleEndian<uint32_t>(static_cast<uint32_t>(s.size()), out);
  out->append(s);
}

absl::Status ErrnoError(int error, const std::string& what, const std::string& path) {
  return absl::ErrnoToStatus(error, absl::StrCat(what, " '", path, "'"));
}

// Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code
// points above U+10FFFF).
bool IsValidUtf8(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07;
    } else {
      return false;
    }
    if (n - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

// A name for messages: printable ASCII kept, other bytes as \xNN.
std::string Escaped(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppendFormat(&out, "\\x%02x", c);
    }
  }
  return out;
}

// Reads a checkpoint sequentially, tracking the offset for messages and
// the CRC of the current record.
class FileReader {
 public:
  explicit FileReader(std::string path) : path_(std::move(path)) {}
  ~FileReader() {
    if (fd_ >= 0) close(fd_);
  }

  absl::Status Open() {
    fd_ = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0 && errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat("checkpoint '", path_, "' does not exist"));
    }
    if (fd_ < 0) return ErrnoError(errno, "cannot open checkpoint", path_);
    struct stat st;
    if (fstat(fd_, &st) != 0) return ErrnoError(errno, "cannot stat checkpoint", path_);
    size_ = static_cast<uint64_t>(st.st_size);
    return absl::OkStatus();
  }

  uint64_t offset() const { return offset_; }
  uint64_t remaining() const { return size_ - offset_; }
  void StartRecord() { crc_ = Crc32(); }
  uint32_t record_crc() const { return crc_.value(); }

  // DataLoss "checkpoint '<path>': <what> at byte offset <offset>".
  absl::Status DataLoss(const std::string& what, uint64_t at) const {
    return absl::DataLossError(
        absl::StrCat("checkpoint '", path_, "': ", what, " at byte offset ", at));
  }

  // Reads n bytes (counted in the record CRC unless `raw`); `what` names
  // what they belong to if the file ends first.
  absl::Status Read(void* dst, uint64_t n, const std::string& what, bool raw = false) {
    if (n > remaining()) {
      return DataLoss(absl::StrCat("file is truncated in ", what, " (", n, " bytes needed, ",
                                   remaining(), " left)"),
                      offset_);
    }
    char* p = static_cast<char*>(dst);
    uint64_t left = n;
    while (left > 0) {
      const ssize_t r = read(fd_, p, std::min<uint64_t>(left, 1 << 30));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return ErrnoError(errno, "cannot read checkpoint", path_);
      if (r == 0) return DataLoss(absl::StrCat("file shrank while reading ", what), offset_);
      if (!raw) crc_.Update(p, static_cast<size_t>(r));
      p += r;
      left -= static_cast<uint64_t>(r);
      offset_ += static_cast<uint64_t>(r);
    }
    return absl::OkStatus();
  }

  template <typename T>
  absl::StatusOr<T> ReadInt(const std::string& what) {
    uint8_t bytes[sizeof(T)];
    RETURN_IF_ERROR(Read(bytes, sizeof(T), what));
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(bytes[i]) << (8 * i);
    return static_cast<T>(v);
  }

  absl::StatusOr<std::string> ReadString(const std::string& what) {
    const uint64_t at = offset_;
    ASSIGN_OR_RETURN(const uint32_t n, ReadInt<uint32_t>(what));
    if (n > kMaxStringBytes) {
      return DataLoss(absl::StrCat(what, " is corrupted (length ", n, ")"), at);
    }
    std::string s(n, '\0');
    RETURN_IF_ERROR(Read(s.data(), n, what));
    return s;
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0, offset_ = 0;
  Crc32 crc_;
};

// One record read back: the tensor on the host and where it was saved from.
struct LoadedTensor {
  uint64_t offset = 0;  // of the record
  std::string name;
  Tensor host;
  std::string saved_place;
};

absl::StatusOr<LoadedTensor> ReadRecord(FileReader* in, uint32_t index) {
  in->StartRecord();
  const uint64_t start = in->offset();
  const std::string record = absl::StrCat("the record of tensor #", index);
  LoadedTensor t;
  t.offset = start;
  ASSIGN_OR_RETURN(t.name, in->ReadString(absl::StrCat("the name of tensor #", index)));
  if (t.name.empty()) {
    return in->DataLoss(absl::StrCat("tensor #", index, " is corrupted (empty name)"), start);
  }
  if (!IsValidUtf8(t.name)) {
    return in->DataLoss(absl::StrCat("tensor #", index, " is corrupted (name '", Escaped(t.name),
                                     "' is not valid UTF-8)"),
                        start);
  }
  const std::string what = absl::StrCat("tensor '", t.name, "' (#", index, ")");
  ASSIGN_OR_RETURN(const std::string dtype_name, in->ReadString(what));
  ASSIGN_OR_RETURN(t.saved_place, in->ReadString(what));
  ASSIGN_OR_RETURN(const uint32_t rank, in->ReadInt<uint32_t>(what));
  if (rank > kMaxRank)
    return in->DataLoss(absl::StrCat(what, " is corrupted (rank ", rank, ")"), start);
  std::vector<int64_t> dims(rank);
  for (int64_t& d : dims) {
    ASSIGN_OR_RETURN(d, in->ReadInt<int64_t>(what));
  }
  const uint64_t data_at = in->offset() + sizeof(uint64_t);
  ASSIGN_OR_RETURN(const uint64_t bytes, in->ReadInt<uint64_t>(what));
  const absl::StatusOr<DataType> dtype = ParseDataType(dtype_name);
  const absl::StatusOr<Shape> shape = Shape::Make(dims);
  // Saving writes the canonical dtype name ("float32", never "float") and
  // exactly the bytes the shape holds (overflow-checked: a wrapped product
  // must not match a short record).
  int64_t want_bytes = 0;
  if (!dtype.ok() || DataTypeName(*dtype) != dtype_name || !shape.ok() ||
      __builtin_mul_overflow(shape->num_elements(), static_cast<int64_t>(SizeOf(*dtype)),
                             &want_bytes) ||
      static_cast<uint64_t>(want_bytes) != bytes) {
    return in->DataLoss(absl::StrCat(what, " is corrupted (dtype '", dtype_name, "', dims [",
                                     absl::StrJoin(dims, ", "), "], ", bytes, " data bytes)"),
                        start);
  }
  if (bytes + sizeof(uint32_t) > in->remaining()) {
    return in->DataLoss(
        absl::StrCat("file is truncated in ", what, ": ", bytes,
                     " data bytes and a checksum needed, ", in->remaining(), " left"),
        data_at);
  }
  ASSIGN_OR_RETURN(t.host, Tensor::Allocate(CpuAllocator::Default(), *dtype, *shape));
  RETURN_IF_ERROR(in->Read(t.host.raw_data(), bytes, what));
  const uint32_t computed = in->record_crc();
  uint8_t stored_bytes[4];
  RETURN_IF_ERROR(in->Read(stored_bytes, 4, what, /*raw=*/true));
  uint32_t stored = 0;
  for (int i = 0; i < 4; ++i) stored |= static_cast<uint32_t>(stored_bytes[i]) << (8 * i);
  if (stored != computed) {
    return in->DataLoss(absl::StrFormat("%s is corrupted: checksum 0x%08x stored, 0x%08x computed "
                                        "over the record",
                                        what, stored, computed),
                        start);
  }
  if (*dtype == DataType::kBool) {
    const auto* b = static_cast<const uint8_t*>(t.host.raw_data());
    for (uint64_t i = 0; i < bytes; ++i) {
      if (b[i] > 1) {
        return in->DataLoss(
            absl::StrFormat("%s is corrupted: bool element %d is 0x%02x, not 0 or 1", what, i,
                            b[i]),
            data_at + i);
      }
    }
  }
  return t;
}

}  // namespace

std::vector<std::string> PersistableVars(const Program& program) {
  std::vector<std::string> names;
  for (const VarDesc& v : program.block().vars()) {
    if (v.persistable) names.push_back(v.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

absl::Status SaveCheckpoint(const Program& program, const Scope& scope, const std::string& path) {
  return SaveCheckpoint(scope, PersistableVars(program), path);
}

absl::Status SaveCheckpoint(const Scope& scope, const std::vector<std::string>& names,
                            const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("SaveCheckpoint: checkpoint path is empty");
  std::set<std::string> seen;
  std::vector<const Tensor*> tensors;
  for (const std::string& name : names) {
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("SaveCheckpoint: variable '", name, "' is listed twice"));
    }
    const Variable* v = scope.Find(name);
    if (v == nullptr) {
      return absl::NotFoundError(
          absl::StrCat("SaveCheckpoint: variable '", name, "' is not in the scope"));
    }
    if (!v->is_tensor() || !v->tensor().initialized()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "SaveCheckpoint: variable '", name, "' does not hold an initialised dense tensor"));
    }
    if (name.empty() || !IsValidUtf8(name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "SaveCheckpoint: variable name '", Escaped(name), "' is empty or not valid UTF-8"));
    }
    if (name.size() > kMaxStringBytes) {
      return absl::InvalidArgumentError(absl::StrCat("SaveCheckpoint: variable name '", name,
                                                     "' is longer than ", kMaxStringBytes));
    }
    tensors.push_back(&v->tensor());
  }

  AtomicFileWriter out(path, "checkpoint file");
  RETURN_IF_ERROR(out.Open());
  std::string header(kMagic, sizeof(kMagic));
  AppendLittleEndian<uint32_t>(kVersion, &header);
  AppendLittleEndian<uint32_t>(static_cast<uint32_t>(names.size()), &header);
  Crc32 header_crc;
  header_crc.Update(header.data(), header.size());
  AppendLittleEndian<uint32_t>(header_crc.value(), &header);
  RETURN_IF_ERROR(out.Write(header.data(), header.size()));
  for (size_t i = 0; i < names.size(); ++i) {
    const Tensor& t = *tensors[i];
    Tensor host = t;
    if (!t.place().is_host()) {
      ASSIGN_OR_RETURN(host, CopyTensorTo(t, CPUPlace()));
    }
    std::string meta;
    AppendString(names[i], &meta);
    AppendString(std::string(DataTypeName(t.dtype())), &meta);
    AppendString(t.place().ToString(), &meta);
    AppendLittleEndian<uint32_t>(static_cast<uint32_t>(t.shape().rank()), &meta);
    for (int64_t d : t.shape().dims()) AppendLittleEndian<int64_t>(d, &meta);
    AppendLittleEndian<uint64_t>(t.NumBytes(), &meta);
    Crc32 crc;
    crc.Update(meta.data(), meta.size());
    crc.Update(host.raw_data(), host.NumBytes());
    std::string crc_bytes;
    AppendLittleEndian<uint32_t>(crc.value(), &crc_bytes);
    RETURN_IF_ERROR(out.Write(meta.data(), meta.size()));
    RETURN_IF_ERROR(out.Write(host.raw_data(), host.NumBytes()));
    RETURN_IF_ERROR(out.Write(crc_bytes.data(), crc_bytes.size()));
  }
  return out.Commit();
}

absl::Status LoadCheckpoint(const std::string& path, Scope* scope,
                            const std::map<std::string, Place>& places) {
  FileReader in(path);
  RETURN_IF_ERROR(in.Open());
  uint8_t header[kHeaderBytes];
  RETURN_IF_ERROR(in.Read(header, kHeaderBytes, "the header"));
  if (std::memcmp(header, kMagic, sizeof(kMagic)) != 0) {
    return in.DataLoss("not a Tandem checkpoint (bad magic)", 0);
  }
  auto u32 = [&](size_t at) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(header[at + i]) << (8 * i);
    return v;
  };
  Crc32 header_crc;
  header_crc.Update(header, 16);
  if (header_crc.value() != u32(16)) return in.DataLoss("the header is corrupted", 0);
  if (u32(8) != kVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint '", path, "' has version ", u32(8), "; this build reads version ", kVersion));
  }
  const uint32_t count = u32(12);
  std::vector<LoadedTensor> loaded;
  std::map<std::string, uint32_t> index_of;
  for (uint32_t i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(LoadedTensor t, ReadRecord(&in, i));
    auto [it, inserted] = index_of.emplace(t.name, i);
    if (!inserted) {
      return in.DataLoss(absl::StrCat("tensor '", t.name, "' (#", i,
                                      ") is corrupted: the name repeats tensor #", it->second),
                         t.offset);
    }
    loaded.push_back(std::move(t));
  }
  if (in.remaining() != 0) {
    return in.DataLoss(absl::StrCat(in.remaining(), " unexpected bytes after the last tensor"),
                       in.offset());
  }
  std::vector<Tensor> placed;
  for (LoadedTensor& t : loaded) {
    auto mapped = places.find(t.name);
    Place place;
    if (mapped != places.end()) {
      place = mapped->second;
    } else {
      // Saving writes Place::ToString() ("gpu:0", never "GPU:0" or "gpu:00").
      absl::StatusOr<Place> saved = ParsePlace(t.saved_place);
      if (!saved.ok() || saved->ToString() != t.saved_place) {
        return in.DataLoss(absl::StrCat("tensor '", t.name, "' has a corrupted place '",
                                        Escaped(t.saved_place), "'"),
                           t.offset);
      }
      place = *saved;
    }
    if (place.is_host()) {
      placed.push_back(std::move(t.host));
      continue;
    }
    absl::StatusOr<Device*> device = DeviceRegistry::Global().GetDevice(place);
    if (!device.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("checkpoint '", path, "': tensor '", t.name, "' goes to ", place.ToString(),
                       ": ", device.status().message(), "; map it to an existing place"));
    }
    ASSIGN_OR_RETURN(Tensor on_device, CopyTensorTo(t.host, place));
    placed.push_back(std::move(on_device));
  }
  for (size_t i = 0; i < loaded.size(); ++i) scope->Var(loaded[i].name)->set(std::move(placed[i]));
  return absl::OkStatus();
}

}  // namespace tandem
