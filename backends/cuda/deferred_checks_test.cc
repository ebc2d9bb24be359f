// Deferred input checks on a real GPU (skipped without one), through the
// id check that lookup_table launches: launches return at once; the
// stream's next synchronisation reports the first bad position of the
// first failing launch, once; slots are reused; another stream's checks
// wait for that stream; a run's checks resolve by run, leaving the next
// run's pending.
#include "backends/cuda/deferred_checks.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/gpu_test.h"
#include "backends/cuda/nn_launchers.h"

namespace tandem {
namespace cuda {
namespace {

TEST_F(GpuTest, DeferredIdChecksReportAtTheNextSynchronisationOnce) {
  std::vector<int64_t> ids(3000, 1);  // 12 blocks: the last-block report
  ids[2500] = 10;
  ids[1700] = -3;
  ids[2900] = 11;
  const size_t bytes = ids.size() * sizeof(int64_t);
  ASSERT_OK_AND_ASSIGN(void* raw, device_->allocator()->Allocate(bytes));
  ASSERT_OK(device_->Copy(CopyKind::kHostToDevice, raw, ids.data(), bytes));
  const int64_t* d_ids = static_cast<const int64_t*>(raw);
  Stream* stream = device_->compute_stream();
  const cudaStream_t s = CudaStreamOf(stream);
  DeferredChecks* checks = device_->deferred_checks();
  auto describe = [](const std::string& launch) {
    return [launch](int64_t id, int64_t position) {
      return absl::InvalidArgumentError(absl::StrCat(launch, ": id ", id, " at ", position));
    };
  };
  for (int round = 0; round < 3; ++round) {  // the same slots again
    SCOPED_TRACE(round);
    ASSERT_OK_AND_ASSIGN(CheckSlot good, checks->Arm(s, 0, describe("good")));
    ASSERT_EQ(LaunchCheckIds(d_ids, 1000, 10, good, s), cudaSuccess);
    ASSERT_OK_AND_ASSIGN(CheckSlot tail, checks->Arm(s, 0, describe("tail")));
    ASSERT_EQ(LaunchCheckIds(d_ids + 2000, 1000, 10, tail, s), cudaSuccess);
    ASSERT_OK_AND_ASSIGN(CheckSlot all, checks->Arm(s, 0, describe("all")));
    ASSERT_EQ(LaunchCheckIds(d_ids, 3000, 10, all, s), cudaSuccess);
    EXPECT_THAT(device_->SynchronizeStream(stream),
                StatusIs(absl::StatusCode::kInvalidArgument, "tail: id 10 at 500"));
    EXPECT_OK(device_->SynchronizeStream(stream));  // reported once, all resolved
  }
  ASSERT_OK_AND_ASSIGN(CheckSlot last, checks->Arm(s, 0, describe("all")));
  ASSERT_EQ(LaunchCheckIds(d_ids, 3000, 10, last, s), cudaSuccess);
  EXPECT_THAT(device_->Synchronize(),
              StatusIs(absl::StatusCode::kInvalidArgument, "all: id -3 at 1700"));

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> other, device_->CreateStream());
  const cudaStream_t o = CudaStreamOf(other.get());
  ASSERT_OK_AND_ASSIGN(CheckSlot on_other, checks->Arm(o, 0, describe("other")));
  ASSERT_EQ(LaunchCheckIds(d_ids, 3000, 10, on_other, o), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(o), cudaSuccess);
  EXPECT_OK(device_->SynchronizeStream(stream));
  EXPECT_THAT(device_->SynchronizeStream(other.get()),
              StatusIs(absl::StatusCode::kInvalidArgument, "other: id -3 at 1700"));
  device_->allocator()->Deallocate(raw, bytes);
}

// Two pipelined runs' checks on one stream: each run's end takes its own
// errors only, whatever the order of their launches, and their slots are
// reused by the runs after.
TEST_F(GpuTest, DeferredIdChecksResolveByRun) {
  std::vector<int64_t> ids(1000, 2);
  ids[700] = 99;
  const size_t bytes = ids.size() * sizeof(int64_t);
  ASSERT_OK_AND_ASSIGN(void* raw, device_->allocator()->Allocate(bytes));
  ASSERT_OK(device_->Copy(CopyKind::kHostToDevice, raw, ids.data(), bytes));
  const int64_t* d_ids = static_cast<const int64_t*>(raw);
  const cudaStream_t s = CudaStreamOf(device_->compute_stream());
  DeferredChecks* checks = device_->deferred_checks();
  ASSERT_OK(device_->Synchronize());  // nothing pending from other tests
  auto describe = [](const std::string& launch) {
    return [launch](int64_t id, int64_t position) {
      return absl::InvalidArgumentError(absl::StrCat(launch, ": id ", id, " at ", position));
    };
  };
  size_t slots = 0;
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE(round);
    const uint64_t good_run = 1000 + 2 * round, bad_run = good_run + 1;
    ASSERT_OK_AND_ASSIGN(CheckSlot a, checks->Arm(s, good_run, describe("good a")));
    ASSERT_EQ(LaunchCheckIds(d_ids, 700, 10, a, s), cudaSuccess);
    ASSERT_OK_AND_ASSIGN(CheckSlot bad, checks->Arm(s, bad_run, describe("bad")));
    ASSERT_EQ(LaunchCheckIds(d_ids, 1000, 10, bad, s), cudaSuccess);
    ASSERT_OK_AND_ASSIGN(CheckSlot b, checks->Arm(s, good_run, describe("good b")));
    ASSERT_EQ(LaunchCheckIds(d_ids + 100, 600, 10, b, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);  // the runs' end events, say
    EXPECT_OK(device_->TakeRunErrors(good_run));
    EXPECT_THAT(device_->TakeRunErrors(bad_run),
                StatusIs(absl::StatusCode::kInvalidArgument, "bad: id 99 at 700"));
    EXPECT_OK(device_->TakeRunErrors(bad_run));                        // once
    EXPECT_OK(device_->SynchronizeStream(device_->compute_stream()));  // none left pending
    if (round == 0) slots = checks->slot_count();
    EXPECT_EQ(checks->slot_count(), slots);  // reused, not allocated again
  }
  device_->allocator()->Deallocate(raw, bytes);
}

}  // namespace
}  // namespace cuda
}  // namespace tandem
