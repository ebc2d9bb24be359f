#include "framework/persistence/checkpoint.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_format.h"
#include "framework/persistence/atomic_file.h"
#include "framework/testing/file_testutil.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"
#include "zlib.h"

namespace tandem {
namespace {

using ::testing::AllOf;

std::string Escaped(const std::string& s) {
  std::string out;
  for (unsigned char c : s) absl::StrAppendFormat(&out, "\\x%02x", c);
  return out;
}

// A scope with tensors of several dtypes and shapes (0-d and empty too).
Scope MakeScope() {
  Scope scope;
  scope.Var("a")->set(MakeTensor(DataType::kFloat32, Shape({2, 3}), {1, -2, 3.5, 4, 5, 6}));
  scope.Var("b")->set(MakeTensor(DataType::kInt64, Shape({4}), {7, -8, 9, 1LL << 40}));
  scope.Var("c")->set(MakeTensor(DataType::kFloat64, Shape(), {0.1}));
  scope.Var("empty")->set(MakeTensor(DataType::kFloat32, Shape({0, 5}), {}));
  return scope;
}

const std::vector<std::string> kNames = {"a", "b", "c", "empty"};

TEST(Checkpoint, RoundTripsEveryTensorBitwise) {
  const std::string path = TempPath("round_trip.ckpt");
  Scope scope = MakeScope();
  ASSERT_OK(SaveCheckpoint(scope, kNames, path));
  EXPECT_NE(access((path + ".tmp").c_str(), F_OK), 0);  // renamed away
  Scope loaded;
  loaded.Var("a")->set(MakeTensor(DataType::kFloat32, Shape({1}), {0}));  // overwritten
  ASSERT_OK(LoadCheckpoint(path, &loaded));
  EXPECT_EQ(loaded.Names(), kNames);
  for (const std::string& name : kNames) {
    const Tensor& want = scope.Find(name)->tensor();
    const Tensor& got = loaded.Find(name)->tensor();
    EXPECT_EQ(got.dtype(), want.dtype()) << name;
    EXPECT_EQ(got.shape(), want.shape()) << name;
    EXPECT_EQ(got.place(), CPUPlace()) << name;
    EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.NumBytes()), 0) << name;
  }
  // Saving again replaces the file whole.
  scope.Var("a")->set(MakeTensor(DataType::kFloat32, Shape({1}), {42}));
  ASSERT_OK(SaveCheckpoint(scope, {"a"}, path));
  Scope again;
  ASSERT_OK(LoadCheckpoint(path, &again));
  EXPECT_EQ(again.Names(), std::vector<std::string>{"a"});
  EXPECT_EQ(ToDoubles(again.Find("a")->tensor()), std::vector<double>{42});
}

// testdata/v1_four_tensors.ckpt was written by SaveCheckpoint(MakeScope(), kNames) with the
// table-driven CRC-32 that checkpoint.cc had before it used zlib's crc32(): files from
// earlier builds stay readable, and today's writer produces the same bytes.
constexpr char kV1File[] = "framework/persistence/testdata/v1_four_tensors.ckpt";

TEST(Checkpoint, ReadsAFileWrittenByAnEarlierBuild) {
  Scope loaded;
  ASSERT_OK(LoadCheckpoint(kV1File, &loaded));
  EXPECT_EQ(loaded.Names(), kNames);
  const Tensor& a = loaded.Find("a")->tensor();
  EXPECT_EQ(a.dtype(), DataType::kFloat32);
  EXPECT_EQ(a.shape(), Shape({2, 3}));
  EXPECT_EQ(ToDoubles(a), (std::vector<double>{1, -2, 3.5, 4, 5, 6}));
  const Tensor& b = loaded.Find("b")->tensor();
  EXPECT_EQ(b.dtype(), DataType::kInt64);
  EXPECT_EQ(b.shape(), Shape({4}));
  EXPECT_EQ(b.data<int64_t>()[3], int64_t{1} << 40);
  EXPECT_EQ(ToDoubles(b), (std::vector<double>{7, -8, 9, 1099511627776.0}));
  const Tensor& c = loaded.Find("c")->tensor();
  EXPECT_EQ(c.dtype(), DataType::kFloat64);
  EXPECT_EQ(c.shape(), Shape());
  EXPECT_EQ(ToDoubles(c), std::vector<double>{0.1});
  const Tensor& empty = loaded.Find("empty")->tensor();
  EXPECT_EQ(empty.dtype(), DataType::kFloat32);
  EXPECT_EQ(empty.shape(), Shape({0, 5}));
  EXPECT_EQ(empty.place(), CPUPlace());

  const std::string old_bytes = ReadFile(kV1File);
  ASSERT_EQ(old_bytes.size(), 282u);
  // The header's CRC-32 (bytes 16..19, little-endian): zlib.crc32(header[:16]) = 0x1219dfd1.
  EXPECT_EQ(old_bytes.substr(16, 4), std::string("\xd1\xdf\x19\x12", 4));
  const std::string path = TempPath("v1_again.ckpt");
  ASSERT_OK(SaveCheckpoint(MakeScope(), kNames, path));
  EXPECT_EQ(ReadFile(path), old_bytes);
}

TEST(Checkpoint, SavesThePersistablesOfAProgram) {
  Program program;
  ASSERT_OK(program.block().AddVar(
      VarDesc{"w", DataType::kFloat32, Shape({2, 3}), /*persistable=*/true}));
  ASSERT_OK(program.block().AddVar(VarDesc{"b", DataType::kInt64, Shape({4}), true}));
  ASSERT_OK(program.block().AddVar(VarDesc{"tmp", DataType::kFloat32, Shape({2})}));
  EXPECT_EQ(PersistableVars(program), (std::vector<std::string>{"b", "w"}));
  Scope scope = MakeScope();
  EXPECT_THAT(
      SaveCheckpoint(program, scope, TempPath("program.ckpt")),
      StatusIs(absl::StatusCode::kNotFound, "SaveCheckpoint: variable 'w' is not in the scope"));
  scope.Var("w")->set(MakeTensor(DataType::kFloat32, Shape({2, 3}), {1, 2, 3, 4, 5, 6}));
  ASSERT_OK(SaveCheckpoint(program, scope, TempPath("program.ckpt")));
  Scope loaded;
  ASSERT_OK(LoadCheckpoint(TempPath("program.ckpt"), &loaded));
  EXPECT_EQ(loaded.Names(), (std::vector<std::string>{"b", "w"}));
}

TEST(Checkpoint, BadSaveArguments) {
  Scope scope = MakeScope();
  scope.Var("rows")->set(
      SelectedRows(3, {1}, MakeTensor(DataType::kFloat32, Shape({1, 2}), {1, 2})));
  scope.Var("unset");
  EXPECT_THAT(SaveCheckpoint(scope, {"a", "a"}, TempPath("x.ckpt")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'a' is listed twice")));
  EXPECT_THAT(SaveCheckpoint(scope, {"rows"}, TempPath("x.ckpt")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "SaveCheckpoint: variable 'rows' does not hold an initialised dense "
                       "tensor"));
  EXPECT_THAT(SaveCheckpoint(scope, {"unset"}, TempPath("x.ckpt")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'unset'")));
  const std::string bad_dir = TempPath("no/such/dir/x.ckpt");
  EXPECT_THAT(SaveCheckpoint(scope, {"a"}, bad_dir),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(bad_dir + ".tmp")));
}

TEST(Checkpoint, MissingFileIsNotFound) {
  const std::string path = TempPath("missing.ckpt");
  Scope scope;
  EXPECT_THAT(LoadCheckpoint(path, &scope),
              StatusIs(absl::StatusCode::kNotFound,
                       absl::StrCat("checkpoint '", path, "' does not exist")));
}

// Loads `bytes` written to a file into a scope holding "a" = [9]; the scope
// must be unchanged on error.
absl::Status LoadBytes(const std::string& bytes, const std::string& path) {
  WriteFile(path, bytes);
  Scope scope;
  scope.Var("a")->set(MakeTensor(DataType::kFloat32, Shape({1}), {9}));
  absl::Status s = LoadCheckpoint(path, &scope);
  if (!s.ok()) {
    EXPECT_EQ(scope.Names(), std::vector<std::string>{"a"});
    EXPECT_EQ(ToDoubles(scope.Find("a")->tensor()), std::vector<double>{9});
  }
  return s;
}

TEST(Checkpoint, TruncationAnywhereIsDataLossNamingFileAndTensor) {
  const std::string path = TempPath("truncated.ckpt");
  ASSERT_OK(SaveCheckpoint(MakeScope(), kNames, TempPath("whole.ckpt")));
  const std::string whole = ReadFile(TempPath("whole.ckpt"));
  // Record 0 ('a') starts at byte 20: 4 + 1 (name) + 4 + 7 ("float32") + 4
  // + 3 ("cpu") + 4 + 16 (dims) + 8 = 51 meta bytes, then 24 data bytes.
  EXPECT_THAT(LoadBytes(whole.substr(0, 10), path),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(path), HasSubstr("truncated in the header"),
                             HasSubstr("at byte offset 0"))));
  EXPECT_THAT(
      LoadBytes(whole.substr(0, 22), path),
      StatusIs(absl::StatusCode::kDataLoss, AllOf(HasSubstr("truncated in the name of tensor #0"),
                                                  HasSubstr("at byte offset 20"))));
  EXPECT_THAT(LoadBytes(whole.substr(0, 20 + 51 + 10), path),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(path), HasSubstr("truncated in tensor 'a' (#0)"),
                             HasSubstr("24 data bytes and a checksum needed, 10 left"),
                             HasSubstr("at byte offset 71"))));
  for (size_t cut = 21; cut < whole.size(); cut += 7) {
    EXPECT_THAT(LoadBytes(whole.substr(0, cut), path),
                StatusIs(absl::StatusCode::kDataLoss, HasSubstr("truncated")))
        << "cut at " << cut;
  }
  EXPECT_THAT(LoadBytes(whole.substr(0, whole.size() - 1), path),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("truncated in tensor 'empty' (#3)")));
  EXPECT_THAT(
      LoadBytes(whole + "x", path),
      StatusIs(absl::StatusCode::kDataLoss, HasSubstr("1 unexpected bytes after the last tensor")));
}

TEST(Checkpoint, CorruptionIsDataLossNamingTheTensor) {
  const std::string path = TempPath("corrupted.ckpt");
  ASSERT_OK(SaveCheckpoint(MakeScope(), kNames, TempPath("good.ckpt")));
  const std::string good = ReadFile(TempPath("good.ckpt"));
  ASSERT_OK(LoadBytes(good, path));
  // A flipped bit in a's data, in b's data (b's record starts at 20 + 51 +
  // 24 + 4 = 99; its data at 99 + 51 = 150), in the header, in the magic.
  auto flip = [&](size_t at) {
    std::string bad = good;
    bad[at] ^= 0x10;
    return LoadBytes(bad, path);
  };
  EXPECT_THAT(flip(20 + 51 + 3),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(path), HasSubstr("tensor 'a' (#0) is corrupted: checksum"),
                             HasSubstr("at byte offset 20"))));
  EXPECT_THAT(flip(150 + 9), StatusIs(absl::StatusCode::kDataLoss,
                                      HasSubstr("tensor 'b' (#1) is corrupted: checksum")));
  EXPECT_THAT(flip(13), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("header is corrupted")));
  EXPECT_THAT(flip(0), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("bad magic")));
  // A corrupted length field: sizes that cannot be are caught before any
  // allocation.
  std::string huge = good;
  huge[20 + 51 - 2] = 0x7f;  // a's data byte count
  EXPECT_THAT(LoadBytes(huge, path), StatusIs(absl::StatusCode::kDataLoss,
                                              HasSubstr("tensor 'a' (#0) is corrupted (dtype")));
  // Every single-byte change is caught.
  for (size_t at = 0; at < good.size(); ++at) {
    EXPECT_THAT(flip(at), StatusIs(absl::StatusCode::kDataLoss)) << "byte " << at;
  }
}

// Crafted checkpoints with valid checksums (zlib's crc32, as the format
// says), for contents that SaveCheckpoint never writes.
template <typename T>
void Put(T v, std::string* out) {
  for (size_t i = 0; i < sizeof(T); ++i) {
    out->push_back(static_cast<char>(static_cast<uint64_t>(v) >> (8 * i)));
  }
}
void PutString(const std::string& s, std::string* out) {
  Put<uint32_t>(s.size(), out);
  out->append(s);
}
uint32_t Crc(const std::string& s) {
  return crc32(0, reinterpret_cast<const Bytef*>(s.data()), s.size());
}
struct Record {
  std::string name, dtype = "float32", place = "cpu";
  std::vector<int64_t> dims;
  std::string data;
  int64_t bytes = -1;  // the stored data byte count; -1: data.size()
};
std::string Craft(const std::vector<Record>& records) {
  std::string out = "TNDMCKPT";
  Put<uint32_t>(1, &out);
  Put<uint32_t>(records.size(), &out);
  Put<uint32_t>(Crc(out), &out);
  for (const Record& r : records) {
    std::string rec;
    PutString(r.name, &rec);
    PutString(r.dtype, &rec);
    PutString(r.place, &rec);
    Put<uint32_t>(r.dims.size(), &rec);
    for (int64_t d : r.dims) Put<int64_t>(d, &rec);
    Put<uint64_t>(r.bytes < 0 ? r.data.size() : r.bytes, &rec);
    rec += r.data;
    Put<uint32_t>(Crc(rec), &rec);
    out += rec;
  }
  return out;
}
const std::string kFour(16, '\0');  // four float32 zeros

TEST(Checkpoint, CraftedFilesMatchWhatSavingWrites) {
  // The crafting helper writes SaveCheckpoint's bytes, so the rejections
  // below are about the contents, not the framing.
  Scope scope;
  scope.Var("w")->set(MakeTensor(DataType::kFloat32, Shape({2, 2}), {0, 0, 0, 0}));
  ASSERT_OK(SaveCheckpoint(scope, {"w"}, TempPath("w.ckpt")));
  EXPECT_EQ(ReadFile(TempPath("w.ckpt")), Craft({{"w", "float32", "cpu", {2, 2}, kFour}}));
}

TEST(Checkpoint, LoadingRejectsADuplicateName) {
  const std::string path = TempPath("dup.ckpt");
  const std::string bytes =
      Craft({{"w", "float32", "cpu", {4}, kFour}, {"w", "float32", "cpu", {4}, kFour}});
  // The second record starts at 20 + (4+1 + 4+7 + 4+3 + 4+8 + 8) + 16 + 4 = 83.
  EXPECT_THAT(LoadBytes(bytes, path),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(path), HasSubstr("tensor 'w' (#1) is corrupted"),
                             HasSubstr("repeats tensor #0"), HasSubstr("at byte offset 83"))));
}

TEST(Checkpoint, LoadingRejectsABoolThatIsNotZeroOrOne) {
  const std::string path = TempPath("bool.ckpt");
  ASSERT_OK(LoadBytes(Craft({{"f", "bool", "cpu", {3}, std::string("\1\0\1", 3)}}), path));
  // f's data starts at 20 + 4+1 + 4+4 + 4+3 + 4+8 + 8 = 60; element 2 at 62.
  EXPECT_THAT(LoadBytes(Craft({{"f", "bool", "cpu", {3}, std::string("\1\0\7", 3)}}), path),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(path), HasSubstr("tensor 'f' (#0) is corrupted"),
                             HasSubstr("bool element 2 is 0x07, not 0 or 1"),
                             HasSubstr("at byte offset 62"))));
}

TEST(Checkpoint, LoadingRejectsAnEmptyOrNonUtf8Name) {
  const std::string path = TempPath("names.ckpt");
  EXPECT_THAT(LoadBytes(Craft({{"", "float32", "cpu", {4}, kFour}}), path),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(path), HasSubstr("tensor #0 is corrupted (empty name)"),
                             HasSubstr("at byte offset 20"))));
  for (const std::string bad : {"w\xff", "\xc0\xaf", "\xed\xa0\x80", "\xe2\x82"}) {
    EXPECT_THAT(LoadBytes(Craft({{bad, "float32", "cpu", {4}, kFour}}), path),
                StatusIs(absl::StatusCode::kDataLoss,
                         AllOf(HasSubstr("tensor #0 is corrupted (name '"),
                               HasSubstr("is not valid UTF-8"), HasSubstr("at byte offset 20"))))
        << Escaped(bad);
  }
  ASSERT_OK(LoadBytes(Craft({{"w\xc3\xa9\xe2\x82\xac", "float32", "cpu", {4}, kFour}}), path));
  // Saving refuses such names too.
  Scope scope;
  scope.Var("")->set(MakeTensor(DataType::kFloat32, Shape({1}), {1}));
  scope.Var("w\xff")->set(MakeTensor(DataType::kFloat32, Shape({1}), {1}));
  EXPECT_THAT(SaveCheckpoint(scope, {""}, path),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty or not valid UTF-8")));
  EXPECT_THAT(SaveCheckpoint(scope, {"w\xff"}, path),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'w\\xff'")));
}

TEST(Checkpoint, LoadingRejectsDtypeAndSizeMismatches) {
  const std::string path = TempPath("sizes.ckpt");
  auto corrupted = [&](const Record& r) { return LoadBytes(Craft({r}), path); };
  const auto kCorrupt = [&](const std::string& what) {
    return StatusIs(absl::StatusCode::kDataLoss,
                    AllOf(HasSubstr(path), HasSubstr("tensor 'w' (#0) is corrupted (dtype"),
                          HasSubstr(what), HasSubstr("at byte offset 20")));
  };
  EXPECT_THAT(corrupted({"w", "float32", "cpu", {4}, std::string(12, '\0')}),
              kCorrupt("12 data bytes"));
  EXPECT_THAT(corrupted({"w", "float64", "cpu", {4}, kFour}), kCorrupt("'float64'"));
  EXPECT_THAT(corrupted({"w", "float", "cpu", {4}, kFour}),
              kCorrupt("'float'"));  // an alias
  EXPECT_THAT(corrupted({"w", "complex", "cpu", {4}, kFour}), kCorrupt("'complex'"));
  EXPECT_THAT(corrupted({"w", "float32", "cpu", {-4}, kFour}), kCorrupt("dims [-4]"));
  // Element counts whose byte count wraps to the stored one: 2^62 float32
  // and 2^61 float64 are 2^64 bytes, 0 modulo 2^64.
  EXPECT_THAT(corrupted({"w", "float32", "cpu", {int64_t{1} << 62}, ""}), kCorrupt("0 data"));
  EXPECT_THAT(corrupted({"w", "float64", "cpu", {int64_t{1} << 61}, ""}), kCorrupt("0 data"));
  EXPECT_THAT(corrupted({"w", "float32", "cpu", {int64_t{1} << 30, int64_t{1} << 32}, ""}),
              kCorrupt("0 data"));
}

TEST(Checkpoint, LoadingRejectsANonCanonicalPlace) {
  const std::string path = TempPath("place.ckpt");
  for (const std::string place : {"CPU", " cpu", "cpu ", "gpu:00", "GPU:0", "", "cpu:x"}) {
    EXPECT_THAT(LoadBytes(Craft({{"w", "float32", place, {4}, kFour}}), path),
                StatusIs(absl::StatusCode::kDataLoss,
                         AllOf(HasSubstr(path), HasSubstr("tensor 'w' has a corrupted place"),
                               HasSubstr("at byte offset 20"))))
        << "'" << place << "'";
  }
}

TEST(Checkpoint, AFailedSaveLeavesNoTemporaryFile) {
  Scope scope = MakeScope();
  // A path that is a directory, with and without the trailing slash.
  const std::string dir = TempPath("save_into_dir");
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  for (const std::string& path : {dir, dir + "/"}) {
    EXPECT_FALSE(SaveCheckpoint(scope, kNames, path).ok()) << path;
    EXPECT_NE(access((path + ".tmp").c_str(), F_OK), 0) << path;
  }
  // The empty path: the temporary would be ".tmp" in the working directory.
  ASSERT_EQ(chdir(::testing::TempDir().c_str()), 0);
  EXPECT_FALSE(SaveCheckpoint(scope, kNames, "").ok());
  EXPECT_NE(access(".tmp", F_OK), 0);
}

TEST(Checkpoint, AnEmptyPathIsRefusedBeforeAnythingIsWritten) {
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
      SaveCheckpoint(scope, kNames, ""),
      StatusIs(absl::StatusCode::kInvalidArgument, "SaveCheckpoint: checkpoint path is empty"));
  // Even with names that are themselves wrong: the path is checked first.
  EXPECT_THAT(SaveCheckpoint(scope, {"no_such_variable"}, ""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("checkpoint path is empty")));
  SetAtomicFileWriteHookForTesting(nullptr);
  EXPECT_EQ(writes, 0);
  EXPECT_NE(access(".tmp", F_OK), 0);
  ASSERT_EQ(chdir(cwd), 0);
}

TEST(Checkpoint, AMissingDeviceIsFailedPreconditionUnlessMapped) {
  const std::string path = TempPath("device.ckpt");
  ASSERT_OK(SaveCheckpoint(MakeScope(), {"a"}, path));
  Scope scope;
  ASSERT_OK(LoadCheckpoint(path, &scope, {{"a", CPUPlace()}}));
  EXPECT_THAT(LoadCheckpoint(path, &scope, {{"a", GPUPlace(7)}}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("tensor 'a' goes to gpu:7"),
                             HasSubstr("map it to an existing place"))));
}

}  // namespace
}  // namespace tandem
