#include "tests/fuzz/infer_shape_fuzz_input.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "absl/strings/str_cat.h"
#include "framework/memory/cpu_allocator.h"

namespace tandem {
namespace {

constexpr int64_t kDims[16] = {2,
                               3,
                               1,
                               4,
                               -1,
                               0,
                               5,
                               6,
                               7,
                               8,
                               16,
                               10,
                               1 << 20,
                               int64_t{1} << 31,
                               int64_t{1} << 40,
                               int64_t{1} << 62};
constexpr int64_t kInts[16] = {0,
                               1,
                               2,
                               -1,
                               3,
                               4,
                               -2,
                               5,
                               8,
                               10,
                               100,
                               1 << 20,
                               int64_t{1} << 31,
                               int64_t{1} << 40,
                               std::numeric_limits<int64_t>::max(),
                               std::numeric_limits<int64_t>::min()};
constexpr double kFloats[8] = {0.0,
                               1.0,
                               0.5,
                               -1.0,
                               2.0,
                               1e-8,
                               std::numeric_limits<double>::quiet_NaN(),
                               std::numeric_limits<double>::infinity()};
constexpr uint8_t kRaw = 255;
constexpr int kMaxListLength = 8;
constexpr int kMaxValues = 64;

std::string InputName(const std::string& arg, size_t k) { return absl::StrCat(arg, ".", k); }
std::string OutputName(const std::string& arg, size_t k) { return absl::StrCat(arg, ".out.", k); }

bool IsInteger(DataType t) { return t == DataType::kInt32 || t == DataType::kInt64; }

// Reads the layout of the header comment; past the end every byte is 0.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  int64_t Raw64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{Byte()} << (8 * i);
    return static_cast<int64_t>(v);
  }
  int64_t Dim() {
    const uint8_t b = Byte();
    if (b != kRaw) return kDims[b % 16];
    const int64_t v = Raw64();
    return v < -1 ? -1 : v;
  }
  int64_t Int() {
    const uint8_t b = Byte();
    return b == kRaw ? Raw64() : kInts[b % 16];
  }
  double Float() {
    const uint8_t b = Byte();
    if (b != kRaw) return kFloats[b % 8];
    const int64_t bits = Raw64();
    double v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  std::string String() {
    const int n = Byte() % 33;
    std::string s;
    for (int i = 0; i < n; ++i) s.push_back(static_cast<char>(Byte()));
    return s;
  }
  DataType Dtype(uint8_t b) { return AllDataTypes()[(b & 7) % 5]; }
  int ListLength() { return Byte() % (kMaxListLength + 1); }

  TensorMeta Meta() {
    const uint8_t t = Byte();
    TensorMeta m;
    m.dtype = Dtype(t);
    m.selected_rows = (t & 0x10) != 0;
    const int rank = Byte() % 7;
    std::vector<int64_t> dims;
    for (int i = 0; i < rank; ++i) dims.push_back(Dim());
    m.shape = Shape(dims);
    return m;
  }

  AttrValue Attr(AttrType type) {
    switch (type) {
      case AttrType::kBool:
        return (Byte() & 1) != 0;
      case AttrType::kInt:
        return Int();
      case AttrType::kFloat:
        return Float();
      case AttrType::kString:
        return String();
      case AttrType::kDataType:
        return AllDataTypes()[Byte() % 5];
      case AttrType::kInts: {
        std::vector<int64_t> v(ListLength());
        for (int64_t& x : v) x = Int();
        return v;
      }
      case AttrType::kFloats: {
        std::vector<double> v(ListLength());
        for (double& x : v) x = Float();
        return v;
      }
      case AttrType::kStrings: {
        std::vector<std::string> v(ListLength());
        for (std::string& x : v) x = String();
        return v;
      }
    }
    return false;
  }

  // The number of variables bound to `arg` (0: left out).
  int Count(const OpSchema::ArgDef& arg) {
    const uint8_t c = Byte();
    if (arg.optional && (c & 1) != 0) return 0;
    return arg.duplicable ? (c >> 1) % kMaxListLength + 1 : 1;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Writes what Reader reads.
class Writer {
 public:
  void Byte(uint8_t b) { out_.push_back(static_cast<char>(b)); }
  void Raw64(int64_t v) {
    Byte(kRaw);
    for (int i = 0; i < 8; ++i) Byte(static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i)));
  }
  void Dim(int64_t v) {
    for (int i = 0; i < 16; ++i) {
      if (kDims[i] == v) return Byte(static_cast<uint8_t>(i));
    }
    Raw64(v);
  }
  void Int(int64_t v) {
    for (int i = 0; i < 16; ++i) {
      if (kInts[i] == v) return Byte(static_cast<uint8_t>(i));
    }
    Raw64(v);
  }
  void Float(double v) {
    int64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    Raw64(bits);
  }
  void String(const std::string& s) {
    const size_t n = std::min<size_t>(s.size(), 32);
    Byte(static_cast<uint8_t>(n));
    for (size_t i = 0; i < n; ++i) Byte(static_cast<uint8_t>(s[i]));
  }
  void Dtype(DataType t) { Byte(static_cast<uint8_t>(t)); }
  template <typename T>
  void List(const std::vector<T>& v, const std::function<void(const T&)>& element) {
    const size_t n = std::min<size_t>(v.size(), kMaxListLength);
    Byte(static_cast<uint8_t>(n));
    for (size_t i = 0; i < n; ++i) element(v[i]);
  }

  void Meta(const TensorMeta& m) {
    Byte(static_cast<uint8_t>(static_cast<uint8_t>(m.dtype) | (m.selected_rows ? 0x10 : 0)));
    const int rank = std::min(m.shape.rank(), 6);
    Byte(static_cast<uint8_t>(rank));
    for (int i = 0; i < rank; ++i) Dim(m.shape.dim(i));
  }

  void Attr(const AttrValue& value) {
    std::visit(
        [this](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, bool>) {
            Byte(v ? 1 : 0);
          } else if constexpr (std::is_same_v<T, int64_t>) {
            Int(v);
          } else if constexpr (std::is_same_v<T, double>) {
            Float(v);
          } else if constexpr (std::is_same_v<T, std::string>) {
            String(v);
          } else if constexpr (std::is_same_v<T, DataType>) {
            Dtype(v);
          } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            List<int64_t>(v, [this](const int64_t& x) { Int(x); });
          } else if constexpr (std::is_same_v<T, std::vector<double>>) {
            List<double>(v, [this](const double& x) { Float(x); });
          } else {
            List<std::string>(v, [this](const std::string& x) { String(x); });
          }
        },
        value);
  }

  // A count byte for `n` variables bound to `arg`.
  void Count(const OpSchema::ArgDef& arg, size_t n) {
    if (n == 0) return Byte(1);
    Byte(static_cast<uint8_t>((std::min<size_t>(n, kMaxListLength) - 1) << 1));
  }

  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

const OpSchema* PickSchema(const std::string& type) {
  absl::StatusOr<const OpSchema*> found = OpRegistry::Global().Find(type);
  if (found.ok()) return *found;
  const std::vector<std::string> all = OpRegistry::Global().RegisteredOps();
  if (all.empty()) return nullptr;
  return *OpRegistry::Global().Find(all[std::hash<std::string>()(type) % all.size()]);
}

// A host tensor of `meta` with the next Int()s as values, or an uninitialised
// one (no values).
Tensor Values(const TensorMeta& meta, Reader* in) {
  if (!IsInteger(meta.dtype) || meta.selected_rows) return Tensor();
  for (int64_t d : meta.shape.dims()) {
    if (d < 0 || d > kMaxValues) return Tensor();
  }
  const int64_t n = meta.shape.num_elements();
  if (n > kMaxValues || (in->Byte() & 1) == 0) return Tensor();
  Tensor t = *Tensor::Allocate(CpuAllocator::Default(), meta.dtype, meta.shape);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = in->Int();
    if (meta.dtype == DataType::kInt64) {
      t.data<int64_t>()[i] = v;
    } else {
      t.data<int32_t>()[i] = static_cast<int32_t>(v);
    }
  }
  return t;
}

}  // namespace

std::map<std::string, std::vector<const Tensor*>> FuzzOp::ValuePointers() const {
  std::map<std::string, std::vector<const Tensor*>> out;
  for (const auto& [arg, tensors] : values) {
    for (const Tensor& t : tensors) out[arg].push_back(t.initialized() ? &t : nullptr);
  }
  return out;
}

FuzzOp DecodeFuzzOp(const uint8_t* data, size_t size) {
  const void* newline = std::memchr(data, '\n', size);
  const size_t type_size = newline == nullptr ? size : static_cast<const uint8_t*>(newline) - data;
  FuzzOp fuzz;
  fuzz.schema = PickSchema(std::string(reinterpret_cast<const char*>(data), type_size));
  if (fuzz.schema == nullptr) return fuzz;
  const size_t rest = newline == nullptr ? size : type_size + 1;
  Reader in(data + rest, size - rest);
  OpDesc& op = fuzz.op;
  op.type = fuzz.schema->type();
  std::vector<std::pair<std::string, int>> counts;
  for (const OpSchema::ArgDef& arg : fuzz.schema->inputs())
    counts.push_back({arg.name, in.Count(arg)});
  for (const OpSchema::ArgDef& arg : fuzz.schema->outputs()) {
    const int n = in.Count(arg);
    for (int k = 0; k < n; ++k) op.outputs[arg.name].push_back(OutputName(arg.name, k));
  }
  for (const auto& [arg, n] : counts) {
    for (int k = 0; k < n; ++k) {
      op.inputs[arg].push_back(InputName(arg, k));
      fuzz.inputs[arg].push_back(in.Meta());
    }
  }
  for (const auto& [arg, n] : counts) {
    for (int k = 0; k < n; ++k) fuzz.values[arg].push_back(Values(fuzz.inputs[arg][k], &in));
  }
  for (const OpSchema::AttrDef& attr : fuzz.schema->attrs()) {
    const uint8_t mode = in.Byte();
    if (mode % 2 == 0 && attr.default_value.has_value()) continue;
    op.attrs[attr.name] = in.Attr(attr.type);
  }
  return fuzz;
}

std::string EncodeFuzzOp(const OpDesc& op,
                         const std::map<std::string, std::vector<TensorMeta>>& inputs) {
  const OpSchema* schema = *OpRegistry::Global().Find(op.type);
  Writer out;
  for (char c : op.type) out.Byte(static_cast<uint8_t>(c));
  out.Byte('\n');
  auto count = [](const std::map<std::string, std::vector<std::string>>& args,
                  const std::string& arg) {
    auto it = args.find(arg);
    return it == args.end() ? size_t{0} : it->second.size();
  };
  for (const OpSchema::ArgDef& arg : schema->inputs()) out.Count(arg, count(op.inputs, arg.name));
  for (const OpSchema::ArgDef& arg : schema->outputs()) {
    out.Count(arg, count(op.outputs, arg.name));
  }
  std::vector<TensorMeta> metas;  // in the order the decoder reads them
  for (const OpSchema::ArgDef& arg : schema->inputs()) {
    auto it = inputs.find(arg.name);
    const size_t n = std::min<size_t>(count(op.inputs, arg.name), kMaxListLength);
    for (size_t k = 0; k < n; ++k) {
      metas.push_back(it != inputs.end() && k < it->second.size() ? it->second[k] : TensorMeta());
      out.Meta(metas.back());
    }
  }
  for (const TensorMeta& m : metas) {
    bool small = IsInteger(m.dtype) && !m.selected_rows;
    for (int64_t d : m.shape.dims()) small &= d >= 0 && d <= kMaxValues;
    if (small && m.shape.num_elements() <= kMaxValues) out.Byte(0);  // no values
  }
  for (const OpSchema::AttrDef& attr : schema->attrs()) {
    auto it = op.attrs.find(attr.name);
    if (it == op.attrs.end() || AttrTypeOf(it->second) != attr.type) {
      out.Byte(0);
      // A required attribute always decodes; its zero value reads one 0 byte.
      if (!attr.default_value.has_value()) out.Byte(0);
      continue;
    }
    out.Byte(1);
    out.Attr(it->second);
  }
  return out.Take();
}

}  // namespace tandem
