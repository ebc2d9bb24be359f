#include "framework/runtime/checkpoint.h"

#include <unistd.h>

#include <cstdio>

#include "framework/testing/file_testutil.h"
#include "framework/testing/status_matchers.h"
#include "framework/testing/tensor_testutil.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::AllOf;

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
constexpr char kV1File[] = "framework/runtime/testdata/v1_four_tensors.ckpt";

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
  program.block().AddVar(VarDesc{"w", DataType::kFloat32, Shape({2, 3}), /*persistable=*/true});
  program.block().AddVar(VarDesc{"b", DataType::kInt64, Shape({4}), true});
  program.block().AddVar(VarDesc{"tmp", DataType::kFloat32, Shape({2})});
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
