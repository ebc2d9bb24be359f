#include "framework/persistence/safetensors.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "framework/persistence/atomic_file.h"
#include "framework/persistence/safetensors_testdata.h"
#include "framework/testing/file_testutil.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;

std::string U64(uint64_t v) {
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  return s;
}

// A file: the header length, `header`, then `data`.
std::string File(const std::string& header, const std::string& data = "") {
  return absl::StrCat(U64(header.size()), header, data);
}

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

const SafetensorsTensor* FindTensor(const SafetensorsContents& c, const std::string& name) {
  for (const SafetensorsTensor& t : c.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// A scope with tensors of every dtype and shapes incl. 0-d and empty.
Scope MakeScope() {
  Scope scope;
  scope.Var("w")->set(MakeTensor(DataType::kFloat32, Shape({2, 3}), {1, -2, 3.5, 4, 5, 6}));
  scope.Var("steps")->set(MakeTensor(DataType::kInt64, Shape({3}), {7, -8, 1LL << 40}));
  scope.Var("lr")->set(MakeTensor(DataType::kFloat64, Shape(), {0.1}));
  scope.Var("ids")->set(MakeTensor(DataType::kInt32, Shape({2}), {-5, 2147483647}));
  scope.Var("mask")->set(MakeTensor(DataType::kBool, Shape({3}), {1, 0, 1}));
  scope.Var("empty")->set(MakeTensor(DataType::kFloat32, Shape({0, 5}), {}));
  return scope;
}

const std::vector<std::string> kNames = {"w", "steps", "lr", "ids", "mask", "empty"};

void ExpectSameTensor(const Tensor& got, const Tensor& want, const std::string& name) {
  EXPECT_EQ(got.dtype(), want.dtype()) << name;
  EXPECT_EQ(got.shape(), want.shape()) << name;
  ASSERT_EQ(got.NumBytes(), want.NumBytes()) << name;
  EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.NumBytes()), 0) << name;
}

TEST(Safetensors, RoundTripsScopeVariablesBitwise) {
  const std::string path = TempPath("round_trip.safetensors");
  Scope scope = MakeScope();
  ASSERT_OK(SaveSafetensors(scope, kNames, path, {{"format", "pt"}}));
  EXPECT_NE(access((path + ".tmp").c_str(), F_OK), 0);  // renamed away
  Scope loaded;
  ASSERT_OK(LoadSafetensors(path, &loaded));
  EXPECT_EQ(loaded.Names(), (std::vector<std::string>{"empty", "ids", "lr", "mask", "steps", "w"}));
  for (const std::string& name : kNames) {
    ExpectSameTensor(loaded.Find(name)->tensor(), scope.Find(name)->tensor(), name);
    EXPECT_EQ(loaded.Find(name)->tensor().place(), CPUPlace()) << name;
  }
  ASSERT_OK_AND_ASSIGN(SafetensorsContents contents, ReadSafetensors(path));
  EXPECT_EQ(contents.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
  // Stored by decreasing element size, then in the order given.
  std::vector<std::string> order;
  for (const SafetensorsTensor& t : contents.tensors) order.push_back(t.name);
  EXPECT_THAT(order, ElementsAre("steps", "lr", "w", "ids", "empty", "mask"));
  EXPECT_EQ(FindTensor(contents, "mask")->file_dtype, "BOOL");
}

TEST(Safetensors, WritesTheFormatExactly) {
  const std::string path = TempPath("exact.safetensors");
  ASSERT_OK(WriteSafetensors(
      {{"a", Tensor::FromVector<float>({2}, {1.f, -2.f})}, {"b", Tensor::Scalar<int64_t>(5)}}, path,
      {{"k", "v"}}));
  const std::string file = ReadFile(path);
  ASSERT_GE(file.size(), 8u);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<uint8_t>(file[i])) << (8 * i);
  ASSERT_EQ(file.size(), 8 + n + 16);
  const std::string header = file.substr(8, n);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(absl::StripTrailingAsciiWhitespace(header),
            R"({"__metadata__":{"k":"v"},"b":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
            R"("a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})");
  EXPECT_EQ(header.find_first_not_of(' ', header.rfind('}') + 1), std::string::npos);
  EXPECT_EQ(file.substr(8 + n), Bytes<int64_t>({5}) + Bytes<float>({1.f, -2.f}));
  // No metadata: no "__metadata__" key (as the reference writer).
  ASSERT_OK(WriteSafetensors({}, path));
  EXPECT_EQ(ReadFile(path), File("{}      "));
}

TEST(Safetensors, SavesThePersistablesOfAProgram) {
  Program program;
  ASSERT_OK(program.block().AddVar(
      VarDesc{"w", DataType::kFloat32, Shape({2, 3}), /*persistable=*/true}));
  ASSERT_OK(program.block().AddVar(VarDesc{"steps", DataType::kInt64, Shape({3}), true}));
  ASSERT_OK(program.block().AddVar(VarDesc{"tmp", DataType::kFloat32, Shape({2})}));
  Scope scope = MakeScope();
  const std::string path = TempPath("program.safetensors");
  ASSERT_OK(SaveSafetensors(program, scope, path));
  ASSERT_OK_AND_ASSIGN(SafetensorsContents contents, ReadSafetensors(path));
  ASSERT_EQ(contents.tensors.size(), 2u);
  EXPECT_EQ(contents.tensors[0].name, "steps");
  EXPECT_EQ(contents.tensors[1].name, "w");
  EXPECT_EQ(ToDoubles(contents.tensors[1].tensor), (std::vector<double>{1, -2, 3.5, 4, 5, 6}));
  EXPECT_TRUE(contents.metadata.empty());
}

// The file the reference implementation (PyPI safetensors) wrote:
// tools/make_safetensors_testdata.py, reference_tensors().
TEST(Safetensors, ReadsTheReferenceImplementationsFileExactly) {
  ASSERT_OK_AND_ASSIGN(SafetensorsContents c,
                       ReadSafetensors("framework/persistence/testdata/reference.safetensors"));
  EXPECT_EQ(c.metadata, (std::map<std::string, std::string>{
                            {"format", "pt"}, {"source", "tools/make_safetensors_testdata.py"}}));
  EXPECT_EQ(c.tensors.size(), 15u);
  auto expect = [&](const std::string& name, const std::string& file_dtype, DataType dtype,
                    const Shape& shape) -> const Tensor* {
    const SafetensorsTensor* t = FindTensor(c, name);
    EXPECT_NE(t, nullptr) << name;
    if (t == nullptr) return nullptr;
    EXPECT_EQ(t->file_dtype, file_dtype) << name;
    EXPECT_EQ(t->tensor.dtype(), dtype) << name;
    EXPECT_EQ(t->tensor.shape(), shape) << name;
    EXPECT_EQ(t->tensor.place(), CPUPlace()) << name;
    return &t->tensor;
  };
  const float kInf = std::numeric_limits<float>::infinity();
  if (const Tensor* t = expect("f32", "F32", DataType::kFloat32, Shape({2, 3}))) {
    const std::vector<float> v = t->ToVector<float>();
    EXPECT_EQ(v, (std::vector<float>{1.5f, -2.25f, 0.f, 3.4028235e38f, 1e-45f, -0.f}));
    EXPECT_TRUE(std::signbit(v[5]));
  }
  if (const Tensor* t = expect("f64", "F64", DataType::kFloat64, Shape({3}))) {
    EXPECT_EQ(t->ToVector<double>(), (std::vector<double>{0.1, -1e300, std::ldexp(1.0, -1074)}));
  }
  if (const Tensor* t = expect("i32", "I32", DataType::kInt32, Shape({2, 2}))) {
    EXPECT_EQ(t->ToVector<int32_t>(),
              (std::vector<int32_t>{std::numeric_limits<int32_t>::min(), 2147483647, 0, -7}));
  }
  if (const Tensor* t = expect("i64", "I64", DataType::kInt64, Shape({2}))) {
    EXPECT_EQ(t->ToVector<int64_t>(),
              (std::vector<int64_t>{std::numeric_limits<int64_t>::min(), int64_t{1} << 40}));
  }
  if (const Tensor* t = expect("bool", "BOOL", DataType::kBool, Shape({4}))) {
    EXPECT_EQ(t->ToVector<bool>(), (std::vector<bool>{true, false, false, true}));
  }
  if (const Tensor* t = expect("scalar", "F32", DataType::kFloat32, Shape())) {
    EXPECT_EQ(t->ToVector<float>(), std::vector<float>{42.f});
  }
  if (const Tensor* t = expect("empty", "F32", DataType::kFloat32, Shape({0, 5}))) {
    EXPECT_EQ(t->NumElements(), 0);
  }
  if (const Tensor* t = expect("f16", "F16", DataType::kFloat16, Shape({5}))) {
    EXPECT_EQ(ToDoubles(*t), (std::vector<double>{1.0, -2.5, 65504.0, std::ldexp(1.0, -24), kInf}));
  }
  if (const Tensor* t = expect("bf16", "BF16", DataType::kBFloat16, Shape({3}))) {
    EXPECT_EQ(ToDoubles(*t), (std::vector<double>{1.5, -123.5, kInf}));
  }
  if (const Tensor* t = expect("u8", "U8", DataType::kInt32, Shape({3}))) {
    EXPECT_EQ(t->ToVector<int32_t>(), (std::vector<int32_t>{0, 200, 255}));
  }
  if (const Tensor* t = expect("i8", "I8", DataType::kInt32, Shape({3}))) {
    EXPECT_EQ(t->ToVector<int32_t>(), (std::vector<int32_t>{-128, 127, -1}));
  }
  if (const Tensor* t = expect("i16", "I16", DataType::kInt32, Shape({2}))) {
    EXPECT_EQ(t->ToVector<int32_t>(), (std::vector<int32_t>{-32768, 32767}));
  }
  if (const Tensor* t = expect("u16", "U16", DataType::kInt32, Shape({2}))) {
    EXPECT_EQ(t->ToVector<int32_t>(), (std::vector<int32_t>{65535, 1}));
  }
  if (const Tensor* t = expect("u32", "U32", DataType::kInt64, Shape({2}))) {
    EXPECT_EQ(t->ToVector<int64_t>(), (std::vector<int64_t>{4294967295LL, 7}));
  }
  if (const Tensor* t = expect("emb.weight", "F32", DataType::kFloat32, Shape({3, 2}))) {
    EXPECT_EQ(t->ToVector<float>(), (std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1.f, 1.25f}));
  }
}

// testdata/tandem_written.safetensors was written by this code and checked
// with the reference reader (tools/make_safetensors_testdata.py --verify);
// the writer must still produce it byte for byte.
TEST(Safetensors, StillWritesTheFileTheReferenceReaderChecked) {
  const std::string path = TempPath("interop.safetensors");
  ASSERT_OK(WriteSafetensors(InteropTensors(), path, InteropMetadata()));
  const std::string golden = ReadFile("framework/persistence/testdata/tandem_written.safetensors");
  ASSERT_FALSE(golden.empty());
  EXPECT_TRUE(ReadFile(path) == golden)
      << "the writer's output changed; regenerate and verify the golden file as "
         "tools/make_safetensors_testdata.py describes";
  ASSERT_OK_AND_ASSIGN(SafetensorsContents back, ReadSafetensors(path));
  EXPECT_EQ(back.metadata, InteropMetadata());
  for (const auto& [name, tensor] : InteropTensors()) {
    const SafetensorsTensor* t = FindTensor(back, name);
    ASSERT_NE(t, nullptr) << name;
    ExpectSameTensor(t->tensor, tensor, name);
  }
}

TEST(Safetensors, ReadsHalfPrecisionExactly) {
  // Every binary16 bit pattern, against value = (-1)^s 2^(e-15) (1 + m/1024)
  // (subnormals: 2^-14 m/1024).
  std::vector<uint16_t> all(65536);
  for (int i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  const std::string path = TempPath("f16.safetensors");
  const std::string bf16_bits = Bytes<uint16_t>({0x0001, 0x8080, 0x7FC0, 0x3F80});
  WriteFile(path, File(R"({"h":{"dtype":"F16","shape":[65536],"data_offsets":[0,131072]},)"
                       R"("b":{"dtype":"BF16","shape":[4],"data_offsets":[131072,131080]}})",
                       Bytes(all) + bf16_bits));
  ASSERT_OK_AND_ASSIGN(SafetensorsContents c, ReadSafetensors(path));
  ASSERT_EQ(FindTensor(c, "h")->tensor.dtype(), DataType::kFloat16);
  std::vector<float> h;
  for (float16 v : FindTensor(c, "h")->tensor.ToVector<float16>()) {
    h.push_back(static_cast<float>(v));
  }
  for (int i = 0; i < 65536; ++i) {
    const int sign = i >> 15, e = (i >> 10) & 31, m = i & 1023;
    const float s = sign ? -1.f : 1.f;
    if (e == 31 && m != 0) {
      EXPECT_TRUE(std::isnan(h[i])) << i;
      continue;
    }
    const float want = e == 31  ? s * std::numeric_limits<float>::infinity()
                       : e == 0 ? s * std::ldexp(static_cast<float>(m), -24)
                                : s * std::ldexp(1.f + m / 1024.f, e - 15);
    EXPECT_EQ(h[i], want) << "bits 0x" << std::hex << i;
    EXPECT_EQ(std::signbit(h[i]), sign == 1) << i;
  }
  ASSERT_EQ(FindTensor(c, "b")->tensor.dtype(), DataType::kBFloat16);
  std::vector<float> b;
  for (bfloat16 v : FindTensor(c, "b")->tensor.ToVector<bfloat16>()) {
    b.push_back(static_cast<float>(v));
  }
  EXPECT_EQ(b[0], std::ldexp(1.f, -133));  // smallest bfloat16 subnormal
  EXPECT_EQ(b[1], -std::ldexp(1.f, -126));
  EXPECT_TRUE(std::isnan(b[2]));
  EXPECT_EQ(b[3], 1.f);
}

// bfloat16 / float16 tensors are written as BF16 / F16 and read back bit for
// bit; into a float32 variable of the same shape they widen exactly, while a
// float32 file into a 16-bit variable (which would round) is refused.
TEST(Safetensors, SixteenBitTensorsRoundTripAndWidenIntoFloat32Variables) {
  const std::string path = TempPath("bf16.safetensors");
  Tensor b = MakeTensor(DataType::kBFloat16, Shape({3}), {1.5, -3.140625, 1e30});
  Tensor h = MakeTensor(DataType::kFloat16, Shape({2}), {65504, -0.0009765625});
  ASSERT_OK(WriteSafetensors({{"b", b}, {"h", h}}, path, {}));
  ASSERT_OK_AND_ASSIGN(SafetensorsContents c, ReadSafetensors(path));
  EXPECT_EQ(FindTensor(c, "b")->file_dtype, "BF16");
  EXPECT_EQ(FindTensor(c, "h")->file_dtype, "F16");
  ExpectSameTensor(FindTensor(c, "b")->tensor, b, "b");
  ExpectSameTensor(FindTensor(c, "h")->tensor, h, "h");
  Scope scope;
  scope.Var("b")->set(MakeTensor(DataType::kFloat32, Shape({3}), {0, 0, 0}));
  ASSERT_OK(LoadSafetensors(path, &scope));
  EXPECT_EQ(scope.Find("b")->tensor().dtype(), DataType::kFloat32);
  EXPECT_EQ(ToDoubles(scope.Find("b")->tensor()), ToDoubles(b));
  EXPECT_EQ(scope.Find("h")->tensor().dtype(), DataType::kFloat16);  // no variable: as in file
  const std::string wide = TempPath("f32.safetensors");
  ASSERT_OK(
      WriteSafetensors({{"h", MakeTensor(DataType::kFloat32, Shape({2}), {1, 2})}}, wide, {}));
  EXPECT_THAT(LoadSafetensors(wide, &scope),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tensor 'h' is F32 [2] (float32) in the file, but the scope's "
                                 "variable is float16 [2]")));
}

TEST(Safetensors, LoadsIntoExistingVariablesAndChecksThem) {
  const std::string path = TempPath("existing.safetensors");
  ASSERT_OK(SaveSafetensors(MakeScope(), {"w", "lr"}, path));
  Scope scope;
  scope.Var("w")->set(MakeTensor(DataType::kFloat32, Shape({3, 2}), {0, 0, 0, 0, 0, 0}));
  scope.Var("other")->set(MakeTensor(DataType::kFloat32, Shape({1}), {9}));
  // A transposed weight is refused, and the scope is left as it was.
  EXPECT_THAT(LoadSafetensors(path, &scope),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(path), HasSubstr("tensor 'w' is F32 [2, 3] (float32) in the "
                                                        "file, but the scope's variable is "
                                                        "float32 [3, 2]"))));
  EXPECT_EQ(scope.Names(), (std::vector<std::string>{"other", "w"}));
  EXPECT_EQ(scope.Find("w")->tensor().shape(), Shape({3, 2}));
  scope.Var("w")->set(MakeTensor(DataType::kFloat64, Shape({2, 3}), {0, 0, 0, 0, 0, 0}));
  EXPECT_THAT(LoadSafetensors(path, &scope), StatusIs(absl::StatusCode::kInvalidArgument,
                                                      HasSubstr("variable is float64 [2, 3]")));
  LoadSafetensorsOptions replace;
  replace.allow_dtype_and_shape_change = true;
  ASSERT_OK(LoadSafetensors(path, &scope, replace));
  EXPECT_EQ(scope.Names(), (std::vector<std::string>{"lr", "other", "w"}));
  EXPECT_EQ(ToDoubles(scope.Find("w")->tensor()), (std::vector<double>{1, -2, 3.5, 4, 5, 6}));
  EXPECT_EQ(ToDoubles(scope.Find("other")->tensor()), std::vector<double>{9});
  // Matching variables load without the option.
  scope.Var("lr")->set(MakeTensor(DataType::kFloat64, Shape(), {5}));
  ASSERT_OK(LoadSafetensors(path, &scope));
  EXPECT_EQ(ToDoubles(scope.Find("lr")->tensor()), std::vector<double>{0.1});
  // A place whose device does not exist.
  LoadSafetensorsOptions to_gpu;
  to_gpu.places = {{"lr", GPUPlace(7)}};
  EXPECT_THAT(LoadSafetensors(path, &scope, to_gpu),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(path), HasSubstr("tensor 'lr' goes to gpu:7"))));
}

TEST(Safetensors, BadWriteArguments) {
  Scope scope = MakeScope();
  scope.Var("rows")->set(
      SelectedRows(3, {1}, MakeTensor(DataType::kFloat32, Shape({1, 2}), {1, 2})));
  scope.Var("unset");
  const std::string path = TempPath("bad.safetensors");
  unlink(path.c_str());
  EXPECT_THAT(SaveSafetensors(scope, {"w", "w"}, path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       absl::StrCat("safetensors '", path, "': tensor 'w' is given twice")));
  EXPECT_THAT(
      SaveSafetensors(scope, {"nope"}, path),
      StatusIs(absl::StatusCode::kNotFound,
               absl::StrCat("SaveSafetensors '", path, "': variable 'nope' is not in the scope")));
  EXPECT_THAT(SaveSafetensors(scope, {"rows"}, path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("variable 'rows' does not hold an initialised dense tensor")));
  EXPECT_THAT(SaveSafetensors(scope, {"unset"}, path),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'unset'")));
  const Tensor one = Tensor::Scalar<float>(1);
  EXPECT_THAT(WriteSafetensors({{"__metadata__", one}}, path),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("reserved")));
  EXPECT_THAT(WriteSafetensors({{"bad\xff", one}}, path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tensor name 'bad\\xff' is not UTF-8")));
  EXPECT_THAT(WriteSafetensors({{"ok", one}}, path, {{"k", "\xc3"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("metadata \"k\": \"\\xc3\" is not UTF-8")));
  const Tensor unset;
  EXPECT_THAT(WriteSafetensors({{"t", unset}}, path),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'t' is not initialised")));
  EXPECT_NE(access(path.c_str(), F_OK), 0);  // nothing was written
  const std::string bad_dir = TempPath("no/such/dir/x.safetensors");
  EXPECT_THAT(SaveSafetensors(scope, {"w"}, bad_dir),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(bad_dir + ".tmp")));
  // Names and metadata beyond ASCII are fine.
  ASSERT_OK(WriteSafetensors({{"größe", one}}, path, {{"ключ", "値"}}));
  ASSERT_OK_AND_ASSIGN(SafetensorsContents c, ReadSafetensors(path));
  EXPECT_EQ(c.tensors[0].name, "größe");
  EXPECT_EQ(c.metadata.at("ключ"), "値");
}

TEST(Safetensors, AnEmptyPathIsRefusedBeforeAnythingIsWritten) {
  Scope scope = MakeScope();
  int writes = 0;
  const AtomicFileWriteHook count = [&](const std::string&, int64_t, size_t*) {
    ++writes;
    return 0;
  };
  // The temporary would be ".tmp" in the working directory: use a scratch one.
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  ASSERT_EQ(chdir(::testing::TempDir().c_str()), 0);
  SetAtomicFileWriteHookForTesting(&count);
  EXPECT_THAT(
      SaveSafetensors(scope, {"w"}, ""),
      StatusIs(absl::StatusCode::kInvalidArgument, "SaveSafetensors: safetensors path is empty"));
  EXPECT_THAT(SaveSafetensors(scope, {"no_such_variable"}, ""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("safetensors path is empty")));
  EXPECT_THAT(
      WriteSafetensors({{"one", Tensor::Scalar<float>(1)}}, ""),
      StatusIs(absl::StatusCode::kInvalidArgument, "WriteSafetensors: safetensors path is empty"));
  SetAtomicFileWriteHookForTesting(nullptr);
  EXPECT_EQ(writes, 0);
  EXPECT_NE(access(".tmp", F_OK), 0);
  ASSERT_EQ(chdir(cwd), 0);
}

TEST(Safetensors, MissingFileAndDirectory) {
  Scope scope;
  const std::string missing = TempPath("missing.safetensors");
  EXPECT_THAT(LoadSafetensors(missing, &scope),
              StatusIs(absl::StatusCode::kNotFound,
                       absl::StrCat("safetensors file '", missing, "' does not exist")));
  EXPECT_THAT(ReadSafetensors(::testing::TempDir()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not a regular file")));
}

// Loads `bytes` written to a file into a scope holding "kept" = [9]; the
// scope must be unchanged on error.
absl::Status LoadBytes(const std::string& bytes) {
  const std::string path = TempPath("fuzz.safetensors");
  WriteFile(path, bytes);
  Scope scope;
  scope.Var("kept")->set(MakeTensor(DataType::kFloat32, Shape({1}), {9}));
  absl::Status s = LoadSafetensors(path, &scope);
  if (!s.ok()) {
    EXPECT_EQ(scope.Names(), std::vector<std::string>{"kept"});
    EXPECT_EQ(ToDoubles(scope.Find("kept")->tensor()), std::vector<double>{9});
  }
  return s;
}

absl::Status ReadBytes(const std::string& bytes) {
  const std::string path = TempPath("fuzz.safetensors");
  WriteFile(path, bytes);
  return ReadSafetensors(path).status();
}

// A data loss whose message names the file and holds `what`.
::testing::Matcher<absl::Status> Loss(const std::string& what) {
  return StatusIs(
      absl::StatusCode::kDataLoss,
      AllOf(HasSubstr(absl::StrCat("safetensors '", TempPath("fuzz.safetensors"), "': ")),
            HasSubstr(what)));
}

TEST(Safetensors, TruncationAnywhereIsDataLoss) {
  const std::string path = TempPath("whole.safetensors");
  ASSERT_OK(SaveSafetensors(MakeScope(), kNames, path));
  const std::string whole = ReadFile(path);
  EXPECT_THAT(LoadBytes(""), Loss("the file is 0 bytes, too short for the 8-byte header length"));
  EXPECT_THAT(LoadBytes(whole.substr(0, 7)), Loss("the file is 7 bytes"));
  const uint64_t n = whole.size() - 8 - (8 * 3 + 8 + 4 * 6 + 4 * 2 + 3);  // header length
  EXPECT_THAT(LoadBytes(whole.substr(0, 8 + n - 1)),
              Loss(absl::StrCat("header length ", n, " goes beyond the end of the ", 8 + n - 1,
                                "-byte file")));
  EXPECT_THAT(LoadBytes(whole.substr(0, whole.size() - 1)),
              Loss("tensor 'mask': \"data_offsets\" [64, 67] go beyond the 66 data bytes"));
  for (size_t cut = 0; cut < whole.size(); ++cut) {
    EXPECT_THAT(LoadBytes(whole.substr(0, cut)), StatusIs(absl::StatusCode::kDataLoss))
        << "cut at " << cut;
  }
  EXPECT_OK(LoadBytes(whole));
  EXPECT_THAT(LoadBytes(whole + "x"),
              Loss("data bytes [67, 68) after the last tensor belong to no tensor"));
}

TEST(Safetensors, HeaderLengthAndShape) {
  EXPECT_THAT(LoadBytes(U64(uint64_t{1} << 63) + "{}"),
              Loss("header length 9223372036854775808 exceeds the limit of 100000000 bytes"));
  EXPECT_THAT(LoadBytes(U64(100'000'001) + "{}"), Loss("exceeds the limit"));
  EXPECT_THAT(LoadBytes(U64(1000) + "{}"),
              Loss("header length 1000 goes beyond the end of the 10-byte file"));
  EXPECT_THAT(LoadBytes(File("")), Loss("the header is not a JSON object: it starts with nothing"));
  EXPECT_THAT(LoadBytes(File("[1, 2]")),
              Loss("the header is not a JSON object: it starts with byte 0x5b"));
  EXPECT_THAT(LoadBytes(File(" {}")), Loss("it starts with byte 0x20"));
  EXPECT_THAT(LoadBytes(File("\"text\"")), Loss("it starts with byte 0x22"));
  EXPECT_THAT(LoadBytes(File(R"({"a": })")),
              Loss("the header (7 bytes) is not valid JSON: json: line 1, column 7"));
  EXPECT_THAT(LoadBytes(File("{} []")), Loss("is not valid JSON"));
  EXPECT_THAT(LoadBytes(File("{\"a\xff\": 1}")), Loss("is not valid JSON"));
  EXPECT_OK(LoadBytes(File("{}")));                       // no tensors
  EXPECT_OK(LoadBytes(File("{}      ")));                 // padded
  EXPECT_OK(LoadBytes(File("{}\n\t ")));                  // any JSON whitespace
  EXPECT_OK(LoadBytes(File(R"({"__metadata__": {}})")));  // empty metadata
  // Empty tensors of converted dtypes: nothing to read or check.
  EXPECT_OK(LoadBytes(File(R"({"e": {"dtype": "BOOL", "shape": [0], "data_offsets": [0, 0]},)"
                           R"( "h": {"dtype": "F16", "shape": [2, 0], "data_offsets": [0, 0]}})")));
}

TEST(Safetensors, BadEntriesNameTheTensorAndValue) {
  const std::string four = Bytes<float>({1.f});
  auto entry = [&](const std::string& body, const std::string& data = "") {
    return LoadBytes(File(absl::StrCat(R"({"a": )", body, "}"), data));
  };
  EXPECT_THAT(entry("[1]"), Loss("tensor 'a': the entry [1] is not an object"));
  EXPECT_THAT(entry(R"({"shape": [], "data_offsets": [0, 4]})", four),
              Loss("tensor 'a': the entry {\"shape\":[],\"data_offsets\":[0,4]} lacks \"dtype\""));
  EXPECT_THAT(entry(R"({"dtype": "F32", "data_offsets": [0, 4]})", four), Loss("lacks \"shape\""));
  EXPECT_THAT(entry(R"({"dtype": "F32", "shape": []})", four), Loss("lacks \"data_offsets\""));
  EXPECT_THAT(entry(R"({"dtype": 4, "shape": [], "data_offsets": [0, 4]})", four),
              Loss("tensor 'a': \"dtype\" 4 is not a string"));
  EXPECT_THAT(entry(R"({"dtype": "F33", "shape": [], "data_offsets": [0, 4]})", four),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(TempPath("fuzz.safetensors")),
                             HasSubstr("tensor 'a': dtype \"F33\" is not a safetensors dtype; "
                                       "Tandem reads F32, F64, I32, I64, BOOL, F16, BF16, I8, "
                                       "U8, I16, U16, U32"))));
  EXPECT_THAT(entry(R"({"dtype": "U64", "shape": [], "data_offsets": [0, 8]})", four + four),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tensor 'a': dtype \"U64\" has no Tandem equivalent")));
  EXPECT_THAT(entry(R"({"dtype": "F32", "shape": 1, "data_offsets": [0, 4]})", four),
              Loss("tensor 'a': \"shape\" 1 is not an array"));
  EXPECT_THAT(entry(R"({"dtype": "F32", "shape": [1, -1], "data_offsets": [0, 4]})", four),
              Loss("tensor 'a': \"shape\" [1,-1]: dimension -1 is not a non-negative integer"));
  EXPECT_THAT(entry(R"({"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]})", four),
              Loss("dimension 1.5 is not a non-negative integer"));
  EXPECT_THAT(entry(R"({"dtype": "F32", "shape": ["1"], "data_offsets": [0, 4]})", four),
              Loss("dimension \"1\" is not a non-negative integer"));
  EXPECT_THAT(
      entry(R"({"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]})", four),
      Loss("tensor 'a': \"shape\" [4294967296,4294967296]: "));
  EXPECT_THAT(entry(R"({"dtype": "F32", "shape": [1e30], "data_offsets": [0, 4]})", four),
              Loss("not a non-negative integer"));
  EXPECT_THAT(entry(R"({"dtype": "F32", "shape": [], "data_offsets": [0]})", four),
              Loss("tensor 'a': \"data_offsets\" [0] is not an array of two integers"));
  EXPECT_THAT(entry(R"({"dtype": "F32", "shape": [], "data_offsets": {"0": 4}})", four),
              Loss("is not an array of two integers"));
  EXPECT_THAT(entry(R"({"dtype": "F32", "shape": [], "data_offsets": [-4, 4]})", four),
              Loss("\"data_offsets\" [-4,4]: begin -4 is not a non-negative integer"));
  EXPECT_THAT(
      entry(R"({"dtype": "F32", "shape": [], "data_offsets": [0, 18446744073709551616]})", four),
      Loss("end 1.8446744073709552e+19 is not a non-negative integer"));
  EXPECT_THAT(entry(R"({"dtype": "F32", "shape": [], "data_offsets": [4, 0]})", four),
              Loss("tensor 'a': \"data_offsets\" [4, 0] end before they begin"));
  EXPECT_THAT(entry(R"({"dtype": "F32", "shape": [], "data_offsets": [0, 8]})", four),
              Loss("tensor 'a': \"data_offsets\" [0, 8] hold 8 bytes, but F32 [] is 1 x 4 bytes"));
  EXPECT_THAT(entry(R"({"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 4]})", four),
              Loss("hold 4 bytes, but F32 [2, 2] is 4 x 4 bytes"));
  EXPECT_THAT(entry(R"({"dtype": "F64", "shape": [1], "data_offsets": [0, 4]})", four),
              Loss("hold 4 bytes, but F64 [1] is 1 x 8 bytes"));
  EXPECT_THAT(entry(R"({"dtype": "F32", "shape": [], "data_offsets": [4, 8]})", four + four),
              Loss("data bytes [0, 4) belong to no tensor (the next is 'a')"));
  EXPECT_THAT(entry(R"({"dtype": "F32", "shape": [], "data_offsets": [0, 4]})", four + four),
              Loss("data bytes [4, 8) after the last tensor belong to no tensor"));
  EXPECT_THAT(entry(R"({"dtype": "F32", "shape": [2], "data_offsets": [0, 8]})", four),
              Loss("tensor 'a': \"data_offsets\" [0, 8] go beyond the 4 data bytes"));
  EXPECT_THAT(entry(R"({"dtype": "BOOL", "shape": [3], "data_offsets": [0, 3]})",
                    std::string("\x01\x00\x02", 3)),
              Loss("tensor 'a': BOOL element 2 is byte 0x02, not 0 or 1"));
  // Extra keys in an entry are ignored, as the reference reader does.
  EXPECT_OK(entry(R"({"dtype": "F32", "shape": [], "data_offsets": [0, 4], "x": 1})", four));
}

TEST(Safetensors, OverlapsAndMetadata) {
  const std::string data = Bytes<float>({1.f, 2.f, 3.f});
  EXPECT_THAT(LoadBytes(File(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                             R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                             data)),
              Loss("tensor 'b': \"data_offsets\" [4, 12] overlap tensor 'a' [0, 8]"));
  EXPECT_THAT(LoadBytes(File(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                             R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
                             data.substr(0, 4))),
              Loss("overlap tensor 'a' [0, 4]"));
  // An empty tensor inside another one overlaps it too.
  EXPECT_THAT(LoadBytes(File(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]},)"
                             R"( "e": {"dtype": "F32", "shape": [0], "data_offsets": [4, 4]}})",
                             data)),
              Loss("tensor 'e': \"data_offsets\" [4, 4] overlap tensor 'a' [0, 12]"));
  // Empty tensors between others, in any header order, are fine.
  EXPECT_OK(LoadBytes(File(R"({"b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]},)"
                           R"( "e": {"dtype": "F32", "shape": [0, 2], "data_offsets": [8, 8]},)"
                           R"( "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})",
                           data)));
  EXPECT_THAT(LoadBytes(File(R"({"__metadata__": []})")),
              Loss("\"__metadata__\" [] is not an object"));
  EXPECT_THAT(LoadBytes(File(R"({"__metadata__": {"k": "v", "n": 1}})")),
              Loss("\"__metadata__\" key \"n\": 1 is not a string"));
}

TEST(Safetensors, CorruptingAnyByteIsAnErrorOrAValidFileNeverACrash) {
  const std::string path = TempPath("whole.safetensors");
  ASSERT_OK(SaveSafetensors(MakeScope(), kNames, path, {{"k", "v"}}));
  const std::string whole = ReadFile(path);
  int errors = 0;
  for (size_t i = 0; i < whole.size(); ++i) {
    for (uint8_t x : {0x01, 0x20, 0x80, 0xFF}) {
      std::string bytes = whole;
      bytes[i] = static_cast<char>(bytes[i] ^ x);
      const absl::Status s = ReadBytes(bytes);
      if (!s.ok()) {
        ++errors;
        EXPECT_TRUE(absl::IsDataLoss(s) || absl::IsInvalidArgument(s)) << s;
      }
    }
  }
  EXPECT_GT(errors, 0);
}

}  // namespace
}  // namespace tandem
