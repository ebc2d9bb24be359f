#include "framework/persistence/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include "absl/base/config.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "framework/base/json.h"
#include "framework/base/status_macros.h"
#include "framework/device/device.h"
#include "framework/device/device_registry.h"
#include "framework/persistence/atomic_file.h"
#include "framework/persistence/checkpoint.h"

#ifndef ABSL_IS_LITTLE_ENDIAN
#error "safetensors.cc copies little-endian tensor bytes as they are"
#endif

namespace tandem {
namespace {

constexpr absl::string_view kMetadataKey = "__metadata__";

// How the bytes of a file dtype become a Tandem tensor.
enum class Conversion { kNone, kI8, kU8, kI16, kU16, kU32 };

struct FileDtype {
  absl::string_view name;
  size_t size;  // bytes per element in the file
  DataType dtype;
  Conversion conversion;
};

constexpr FileDtype kFileDtypes[] = {
    {"F32", 4, DataType::kFloat32, Conversion::kNone},
    {"F64", 8, DataType::kFloat64, Conversion::kNone},
    {"I32", 4, DataType::kInt32, Conversion::kNone},
    {"I64", 8, DataType::kInt64, Conversion::kNone},
    {"BOOL", 1, DataType::kBool, Conversion::kNone},
    {"F16", 2, DataType::kFloat16, Conversion::kNone},
    {"BF16", 2, DataType::kBFloat16, Conversion::kNone},
    {"I8", 1, DataType::kInt32, Conversion::kI8},
    {"U8", 1, DataType::kInt32, Conversion::kU8},
    {"I16", 2, DataType::kInt32, Conversion::kI16},
    {"U16", 2, DataType::kInt32, Conversion::kU16},
    {"U32", 4, DataType::kInt64, Conversion::kU32},
};

// Dtypes of the format that Tandem has no exact type for.
constexpr absl::string_view kUnsupportedDtypes[] = {
    "U64", "C64",         "F8_E4M3",     "F8_E5M2", "F8_E8M0",
    "F4",  "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F6_E2M3", "F6_E3M2",
};

std::string ReadableDtypes() {
  std::vector<absl::string_view> names;
  for (const FileDtype& d : kFileDtypes) names.push_back(d.name);
  return absl::StrJoin(names, ", ");
}

template <typename From, typename To, typename Fn>
void Widen(const uint8_t* src, int64_t n, To* dst, Fn fn) {
  for (int64_t i = 0; i < n; ++i) {
    From v;
    std::memcpy(&v, src + i * sizeof(From), sizeof(From));
    dst[i] = fn(v);
  }
}

void Convert(Conversion conversion, const uint8_t* src, int64_t n, Tensor* dst) {
  auto cast = [](auto v) { return v; };
  switch (conversion) {
    case Conversion::kNone:
      std::memcpy(dst->raw_data(), src, dst->NumBytes());
      return;
    case Conversion::kI8:
      return Widen<int8_t>(src, n, dst->data<int32_t>(), cast);
    case Conversion::kU8:
      return Widen<uint8_t>(src, n, dst->data<int32_t>(), cast);
    case Conversion::kI16:
      return Widen<int16_t>(src, n, dst->data<int32_t>(), cast);
    case Conversion::kU16:
      return Widen<uint16_t>(src, n, dst->data<int32_t>(), cast);
    case Conversion::kU32:
      return Widen<uint32_t>(src, n, dst->data<int64_t>(), cast);
  }
}

// The float32 values of a host bfloat16 / float16 tensor (exact).
Tensor WidenedToFloat32(const Tensor& t) {
  absl::StatusOr<Tensor> wide =
      Tensor::Allocate(CpuAllocator::Default(), DataType::kFloat32, t.shape());
  CHECK(wide.ok()) << wide.status();  // as large as the file's tensor, which was allocated
  float* out = wide->data<float>();
  DispatchDataType(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsLowPrecisionFloat<T>) {
      const T* in = t.data<T>();
      for (int64_t i = 0; i < t.NumElements(); ++i) out[i] = static_cast<float>(in[i]);
    }
  });
  return *std::move(wide);
}

// A Json value in messages, shortened.
std::string Shown(const Json& v) {
  std::string s = v.Dump();
  if (s.size() > 80) s = absl::StrCat(s.substr(0, 77), "...");
  return s;
}

// Text that survives JSON unchanged (Json::Dump replaces invalid UTF-8).
bool IsValidUtf8(absl::string_view s) {
  absl::StatusOr<Json> back = ParseJson(Json(s).Dump());
  return back.ok() && back->is_string() && back->string_value() == s;
}

// The read side of a file: size and positioned reads.
class InputFile {
 public:
  explicit InputFile(std::string path) : path_(std::move(path)) {}
  ~InputFile() {
    if (fd_ >= 0) close(fd_);
  }

  absl::Status Open() {
    fd_ = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0 && errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat("safetensors file '", path_, "' does not exist"));
    }
    if (fd_ < 0) return Errno("cannot open");
    struct stat st;
    if (fstat(fd_, &st) != 0) return Errno("cannot stat");
    if (!S_ISREG(st.st_mode)) {
      return absl::InvalidArgumentError(
          absl::StrCat("safetensors file '", path_, "' is not a regular file"));
    }
    size_ = static_cast<uint64_t>(st.st_size);
    return absl::OkStatus();
  }

  uint64_t size() const { return size_; }

  // DataLoss "safetensors '<path>': <what>".
  absl::Status DataLoss(absl::string_view what) const {
    return absl::DataLossError(absl::StrCat("safetensors '", path_, "': ", what));
  }
  absl::Status InvalidArgument(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("safetensors '", path_, "': ", what));
  }

  // Reads [offset, offset + n), which the caller has checked lies in the file.
  absl::Status ReadAt(uint64_t offset, void* dst, uint64_t n, absl::string_view what) {
    char* p = static_cast<char*>(dst);
    while (n > 0) {
      const ssize_t r = pread(fd_, p, std::min<uint64_t>(n, 1 << 30), static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return Errno(absl::StrCat("cannot read ", what, " of"));
      if (r == 0) return DataLoss(absl::StrCat("the file shrank while reading ", what));
      p += r;
      n -= static_cast<uint64_t>(r);
      offset += static_cast<uint64_t>(r);
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Errno(absl::string_view what) const {
    return absl::ErrnoToStatus(errno, absl::StrCat(what, " safetensors file '", path_, "'"));
  }

  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// A header entry, checked against itself but not yet against the others.
struct Entry {
  std::string name;
  std::string file_dtype;
  const FileDtype* dtype;
  Shape shape;
  uint64_t begin, end;  // relative to the data
};

absl::StatusOr<uint64_t> NonNegativeInt(const Json& v) {
  if (!v.is_int() || v.int_value() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(Shown(v), " is not a non-negative integer"));
  }
  return static_cast<uint64_t>(v.int_value());
}

absl::StatusOr<Entry> ParseEntry(const InputFile& file, const std::string& name,
                                 const Json& value) {
  const std::string tensor = absl::StrCat("tensor '", name, "'");
  if (!value.is_object()) {
    return file.DataLoss(absl::StrCat(tensor, ": the entry ", Shown(value), " is not an object"));
  }
  Entry e;
  e.name = name;
  const Json* dtype = value.Find("dtype");
  const Json* shape = value.Find("shape");
  const Json* offsets = value.Find("data_offsets");
  if (dtype == nullptr || shape == nullptr || offsets == nullptr) {
    return file.DataLoss(absl::StrCat(tensor, ": the entry ", Shown(value), " lacks \"",
                                      dtype == nullptr   ? "dtype"
                                      : shape == nullptr ? "shape"
                                                         : "data_offsets",
                                      "\""));
  }
  if (!dtype->is_string()) {
    return file.DataLoss(absl::StrCat(tensor, ": \"dtype\" ", Shown(*dtype), " is not a string"));
  }
  e.file_dtype = dtype->string_value();
  e.dtype = nullptr;
  for (const FileDtype& d : kFileDtypes) {
    if (d.name == e.file_dtype) e.dtype = &d;
  }
  if (e.dtype == nullptr) {
    const bool known = std::find(std::begin(kUnsupportedDtypes), std::end(kUnsupportedDtypes),
                                 e.file_dtype) != std::end(kUnsupportedDtypes);
    return file.InvalidArgument(
        absl::StrCat(tensor, ": dtype ", Shown(*dtype),
                     known ? " has no Tandem equivalent" : " is not a safetensors dtype",
                     "; Tandem reads ", ReadableDtypes()));
  }
  if (!shape->is_array()) {
    return file.DataLoss(absl::StrCat(tensor, ": \"shape\" ", Shown(*shape), " is not an array"));
  }
  std::vector<int64_t> dims;
  for (const Json& d : shape->array()) {
    absl::StatusOr<uint64_t> dim = NonNegativeInt(d);
    if (!dim.ok()) {
      return file.DataLoss(absl::StrCat(tensor, ": \"shape\" ", Shown(*shape), ": dimension ",
                                        dim.status().message()));
    }
    dims.push_back(static_cast<int64_t>(*dim));
  }
  absl::StatusOr<Shape> made = Shape::Make(dims);
  if (!made.ok()) {
    return file.DataLoss(
        absl::StrCat(tensor, ": \"shape\" ", Shown(*shape), ": ", made.status().message()));
  }
  e.shape = *std::move(made);
  if (!offsets->is_array() || offsets->size() != 2) {
    return file.DataLoss(absl::StrCat(tensor, ": \"data_offsets\" ", Shown(*offsets),
                                      " is not an array of two integers"));
  }
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<uint64_t> at = NonNegativeInt(offsets->array()[i]);
    if (!at.ok()) {
      return file.DataLoss(absl::StrCat(tensor, ": \"data_offsets\" ", Shown(*offsets), ": ",
                                        i == 0 ? "begin " : "end ", at.status().message()));
    }
    (i == 0 ? e.begin : e.end) = *at;
  }
  if (e.end < e.begin) {
    return file.DataLoss(absl::StrCat(tensor, ": \"data_offsets\" [", e.begin, ", ", e.end,
                                      "] end before they begin"));
  }
  const uint64_t bytes = e.end - e.begin;
  const uint64_t elements = static_cast<uint64_t>(e.shape.num_elements());
  if (bytes % e.dtype->size != 0 || bytes / e.dtype->size != elements) {
    return file.DataLoss(absl::StrCat(
        tensor, ": \"data_offsets\" [", e.begin, ", ", e.end, "] hold ", bytes, " bytes, but ",
        e.file_dtype, " ", e.shape.ToString(), " is ", elements, " x ", e.dtype->size, " bytes"));
  }
  return e;
}

struct Header {
  std::vector<Entry> entries;  // in data order
  uint64_t data_at;            // file offset of the data: 8 + N
};

// Reads, parses and checks the header.
absl::StatusOr<Header> ReadHeader(InputFile* file, std::map<std::string, std::string>* metadata) {
  if (file->size() < 8) {
    return file->DataLoss(absl::StrCat("the file is ", file->size(),
                                       " bytes, too short for the 8-byte header length"));
  }
  uint8_t length_bytes[8];
  RETURN_IF_ERROR(file->ReadAt(0, length_bytes, 8, "the header length"));
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(length_bytes[i]) << (8 * i);
  if (n > kMaxSafetensorsHeaderBytes) {
    return file->DataLoss(absl::StrCat("header length ", n, " exceeds the limit of ",
                                       kMaxSafetensorsHeaderBytes, " bytes"));
  }
  if (n > file->size() - 8) {
    return file->DataLoss(absl::StrCat("header length ", n, " goes beyond the end of the ",
                                       file->size(), "-byte file"));
  }
  std::string text(n, '\0');
  RETURN_IF_ERROR(file->ReadAt(8, text.data(), n, "the header"));
  if (text.empty() || text[0] != '{') {
    return file->DataLoss(
        absl::StrCat("the header is not a JSON object: it starts with ",
                     text.empty() ? "nothing" : absl::StrFormat("byte 0x%02x", text[0] & 0xFF)));
  }
  absl::StatusOr<Json> header = ParseJson(text);
  if (!header.ok()) {
    return file->DataLoss(
        absl::StrCat("the header (", n, " bytes) is not valid JSON: ", header.status().message()));
  }
  if (!header->is_object()) {  // cannot follow a leading '{'; kept should the parser change
    return file->DataLoss("the header is not a JSON object");
  }
  const uint64_t data_size = file->size() - 8 - n;
  std::vector<Entry> entries;
  for (const auto& [key, value] : header->object()) {
    if (key == kMetadataKey) {
      if (!value.is_object()) {
        return file->DataLoss(absl::StrCat("\"__metadata__\" ", Shown(value), " is not an object"));
      }
      for (const auto& [k, v] : value.object()) {
        if (!v.is_string()) {
          return file->DataLoss(
              absl::StrCat("\"__metadata__\" key \"", k, "\": ", Shown(v), " is not a string"));
        }
        (*metadata)[k] = v.string_value();
      }
      continue;
    }
    ASSIGN_OR_RETURN(Entry e, ParseEntry(*file, key, value));
    if (e.end > data_size) {
      return file->DataLoss(absl::StrCat("tensor '", key, "': \"data_offsets\" [", e.begin, ", ",
                                         e.end, "] go beyond the ", data_size,
                                         " data bytes after the header"));
    }
    entries.push_back(std::move(e));
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::make_pair(a.begin, a.end) < std::make_pair(b.begin, b.end);
  });
  uint64_t covered = 0;  // the data before it belongs to the tensors seen
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (e.begin < covered) {
      return file->DataLoss(absl::StrCat("tensor '", e.name, "': \"data_offsets\" [", e.begin, ", ",
                                         e.end, "] overlap tensor '", entries[i - 1].name, "' [",
                                         entries[i - 1].begin, ", ", entries[i - 1].end, "]"));
    }
    if (e.begin > covered) {
      return file->DataLoss(absl::StrCat("data bytes [", covered, ", ", e.begin,
                                         ") belong to no tensor (the next is '", e.name, "')"));
    }
    covered = e.end;
  }
  if (covered != data_size) {
    return file->DataLoss(absl::StrCat("data bytes [", covered, ", ", data_size,
                                       ") after the last tensor belong to no tensor"));
  }
  return Header{std::move(entries), 8 + n};
}

}  // namespace

absl::string_view SafetensorsDtypeName(DataType dtype) {
  for (const FileDtype& d : kFileDtypes) {
    if (d.conversion == Conversion::kNone && d.dtype == dtype) return d.name;
  }
  LOG(FATAL) << "no safetensors name for " << dtype;
}

absl::StatusOr<SafetensorsContents> ReadSafetensors(const std::string& path) {
  InputFile file(path);
  RETURN_IF_ERROR(file.Open());
  SafetensorsContents contents;
  ASSIGN_OR_RETURN(Header header, ReadHeader(&file, &contents.metadata));
  const uint64_t data_at = header.data_at;
  std::vector<uint8_t> staging;
  for (Entry& e : header.entries) {
    SafetensorsTensor t;
    t.name = e.name;
    t.file_dtype = e.file_dtype;
    absl::StatusOr<Tensor> allocated =
        Tensor::Allocate(CpuAllocator::Default(), e.dtype->dtype, e.shape);
    if (!allocated.ok()) {
      return absl::Status(allocated.status().code(),
                          absl::StrCat("safetensors '", path, "': tensor '", e.name, "' ",
                                       e.shape.ToString(), ": ", allocated.status().message()));
    }
    t.tensor = *std::move(allocated);
    const uint64_t bytes = e.end - e.begin;
    const std::string what = absl::StrCat("tensor '", e.name, "'");
    if (bytes == 0) {  // empty: nothing to read (and maybe no buffer to read into)
      contents.tensors.push_back(std::move(t));
      continue;
    }
    const bool direct =
        e.dtype->conversion == Conversion::kNone && e.dtype->dtype != DataType::kBool;
    if (direct) {
      RETURN_IF_ERROR(file.ReadAt(data_at + e.begin, t.tensor.raw_data(), bytes, what));
    } else {
      staging.resize(bytes);
      RETURN_IF_ERROR(file.ReadAt(data_at + e.begin, staging.data(), bytes, what));
      if (e.dtype->dtype == DataType::kBool) {
        for (uint64_t i = 0; i < bytes; ++i) {
          if (staging[i] > 1) {
            return file.DataLoss(absl::StrFormat(
                "tensor '%s': BOOL element %d is byte 0x%02x, not 0 or 1", e.name, i, staging[i]));
          }
        }
      }
      Convert(e.dtype->conversion, staging.data(), t.tensor.NumElements(), &t.tensor);
    }
    contents.tensors.push_back(std::move(t));
  }
  return contents;
}

absl::Status WriteSafetensors(const std::vector<std::pair<std::string, Tensor>>& tensors,
                              const std::string& path,
                              const std::map<std::string, std::string>& metadata) {
  if (path.empty()) {
    return absl::InvalidArgumentError("WriteSafetensors: safetensors path is empty");
  }
  std::set<std::string> seen;
  for (const auto& [name, tensor] : tensors) {
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("safetensors '", path, "': tensor '", name, "' is given twice"));
    }
    if (name == kMetadataKey) {
      return absl::InvalidArgumentError(
          absl::StrCat("safetensors '", path, "': '", name,
                       "' is reserved for the metadata, not a tensor name"));
    }
    if (!IsValidUtf8(name)) {
      return absl::InvalidArgumentError(absl::StrCat("safetensors '", path, "': tensor name '",
                                                     absl::CHexEscape(name), "' is not UTF-8"));
    }
    if (!tensor.initialized()) {
      return absl::InvalidArgumentError(
          absl::StrCat("safetensors '", path, "': tensor '", name, "' is not initialised"));
    }
  }
  for (const auto& [key, value] : metadata) {
    if (!IsValidUtf8(key) || !IsValidUtf8(value)) {
      return absl::InvalidArgumentError(absl::StrCat("safetensors '", path, "': metadata \"",
                                                     absl::CHexEscape(key), "\": \"",
                                                     absl::CHexEscape(value), "\" is not UTF-8"));
    }
  }
  // Larger elements first, so that every tensor is aligned to its element size.
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return SizeOf(tensors[a].second.dtype()) > SizeOf(tensors[b].second.dtype());
  });
  Json::Members members;  // Json::Object(members) checks keys by hash, Set() by a scan
  if (!metadata.empty()) {
    Json::Members meta;
    for (const auto& [key, value] : metadata) meta.emplace_back(key, value);
    members.emplace_back(std::string(kMetadataKey), Json::Object(std::move(meta)));
  }
  uint64_t offset = 0;
  for (size_t i : order) {
    const Tensor& t = tensors[i].second;
    Json dims = Json::Array();
    for (int64_t d : t.shape().dims()) dims.Push(d);
    const uint64_t end = offset + t.NumBytes();
    members.emplace_back(tensors[i].first,
                         Json::Object()
                             .Set("dtype", SafetensorsDtypeName(t.dtype()))
                             .Set("shape", std::move(dims))
                             .Set("data_offsets", Json::Array().Push(offset).Push(end)));
    offset = end;
  }
  std::string text = Json::Object(std::move(members)).Dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  if (text.size() > kMaxSafetensorsHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrCat("safetensors '", path, "': the header is ",
                                                   text.size(), " bytes, more than the limit of ",
                                                   kMaxSafetensorsHeaderBytes));
  }
  std::string length;
  for (int i = 0; i < 8; ++i) length.push_back(static_cast<char>(uint64_t{text.size()} >> (8 * i)));

  AtomicFileWriter out(path, "safetensors file");
  RETURN_IF_ERROR(out.Open());
  RETURN_IF_ERROR(out.Write(length.data(), length.size()));
  RETURN_IF_ERROR(out.Write(text.data(), text.size()));
  for (size_t i : order) {
    Tensor host = tensors[i].second;
    if (!host.place().is_host()) {
      ASSIGN_OR_RETURN(host, CopyTensorTo(host, CPUPlace()));
    }
    RETURN_IF_ERROR(out.Write(host.raw_data(), host.NumBytes()));
  }
  return out.Commit();
}

absl::Status SaveSafetensors(const Scope& scope, const std::vector<std::string>& names,
                             const std::string& path,
                             const std::map<std::string, std::string>& metadata) {
  if (path.empty()) {
    return absl::InvalidArgumentError("SaveSafetensors: safetensors path is empty");
  }
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const std::string& name : names) {
    const Variable* v = scope.Find(name);
    if (v == nullptr) {
      return absl::NotFoundError(
          absl::StrCat("SaveSafetensors '", path, "': variable '", name, "' is not in the scope"));
    }
    if (!v->is_tensor() || !v->tensor().initialized()) {
      return absl::InvalidArgumentError(
          absl::StrCat("SaveSafetensors '", path, "': variable '", name,
                       "' does not hold an initialised dense tensor"));
    }
    tensors.emplace_back(name, v->tensor());
  }
  return WriteSafetensors(tensors, path, metadata);
}

absl::Status SaveSafetensors(const Program& program, const Scope& scope, const std::string& path,
                             const std::map<std::string, std::string>& metadata) {
  return SaveSafetensors(scope, PersistableVars(program), path, metadata);
}

absl::Status LoadSafetensors(const std::string& path, Scope* scope,
                             const LoadSafetensorsOptions& options) {
  ASSIGN_OR_RETURN(SafetensorsContents contents, ReadSafetensors(path));
  std::vector<Tensor> placed;
  for (SafetensorsTensor& t : contents.tensors) {
    const Variable* existing = scope->Find(t.name);
    const Tensor* current =
        existing != nullptr && existing->is_tensor() && existing->tensor().initialized()
            ? &existing->tensor()
            : nullptr;
    if (current != nullptr && current->dtype() == DataType::kFloat32 &&
        IsLowPrecisionFloat(t.tensor.dtype()) && current->shape() == t.tensor.shape()) {
      t.tensor = WidenedToFloat32(t.tensor);  // exact: the file's F16 / BF16 into a float32
    }
    if (current != nullptr && !options.allow_dtype_and_shape_change &&
        (current->dtype() != t.tensor.dtype() || current->shape() != t.tensor.shape())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "safetensors '", path, "': tensor '", t.name, "' is ", t.file_dtype, " ",
          t.tensor.shape().ToString(), " (", DataTypeName(t.tensor.dtype()), ") in the file, but ",
          "the scope's variable is ", DataTypeName(current->dtype()), " ",
          current->shape().ToString(), "; convert it, or set allow_dtype_and_shape_change"));
    }
    auto mapped = options.places.find(t.name);
    const Place place = mapped != options.places.end() ? mapped->second
                        : current != nullptr           ? current->place()
                                                       : CPUPlace();
    if (place.is_host()) {
      placed.push_back(std::move(t.tensor));
      continue;
    }
    absl::StatusOr<Device*> device = DeviceRegistry::Global().GetDevice(place);
    if (!device.ok()) {
      return absl::FailedPreconditionError(absl::StrCat("safetensors '", path, "': tensor '",
                                                        t.name, "' goes to ", place.ToString(),
                                                        ": ", device.status().message()));
    }
    ASSIGN_OR_RETURN(Tensor on_device, CopyTensorTo(t.tensor, place));
    placed.push_back(std::move(on_device));
  }
  for (size_t i = 0; i < placed.size(); ++i) {
    scope->Var(contents.tensors[i].name)->set(std::move(placed[i]));
  }
  return absl::OkStatus();
}

}  // namespace tandem
