// NCCL on one H200 (skipped without a GPU): the collectives of one rank
// (ring_id -1) through the op kernels, the communicator cache, and the
// communicator of a job across processes bootstrapped through its
// ProcessGroup (a job of one process here; mpirun jobs need a GPU each). The
// multi-rank cases run in tests/parallel (two GPUs) and through the
// conformance suite on every gpu place.
#include <cstring>
#include <memory>
#include <vector>

#include "backends/cuda/gpu_test.h"
#include "backends/cuda/nccl_comms.h"
#include "framework/device/device_registry.h"
#include "framework/kernel/eager.h"
#include "framework/parallel/collective_group.h"
#include "framework/parallel/process_group.h"
#include "framework/testing/tensor_testutil.h"

namespace tandem {
namespace cuda {
namespace {

using ::testing::HasSubstr;

OpDesc Collective(const char* type, int n_outputs) {
  OpDesc op;
  op.type = type;
  for (int i = 0; i < n_outputs; ++i) op.outputs["Out"].push_back("out" + std::to_string(i));
  return op;
}

TEST(NcclDeviceSet, MadeOncePerSetAndRefusesBadSets) {
  if (GpuCount() == 0) GTEST_SKIP() << "no GPU";
  ASSERT_OK_AND_ASSIGN(const NcclDeviceSet* a, NcclDeviceSet::For({0}));
  ASSERT_OK_AND_ASSIGN(const NcclDeviceSet* b, NcclDeviceSet::For({0}));
  EXPECT_EQ(a, b);
  EXPECT_NE(a->comm(0), nullptr);
  EXPECT_THAT(NcclDeviceSet::For({0, 0}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("one rank per GPU")));
  if (GpuCount() >= 2) {
    ASSERT_OK_AND_ASSIGN(const NcclDeviceSet* two, NcclDeviceSet::For({0, 1}));
    EXPECT_EQ(two->ordinals(), (std::vector<int>{0, 1}));
  }
}

// DestroyAll (what runs at exit) frees the communicators; a set asked for
// afterwards is made again and works.
TEST(NcclDeviceSet, DestroyAllFreesTheSetsAndLaterOnesAreMadeAgain) {
  if (GpuCount() == 0) GTEST_SKIP() << "no GPU";
  ASSERT_OK(NcclDeviceSet::For({0}).status());
  ASSERT_OK(NcclDeviceSet::DestroyAll());
  ASSERT_OK_AND_ASSIGN(const NcclDeviceSet* again, NcclDeviceSet::For({0}));
  ASSERT_NE(again->comm(0), nullptr);
  int count = 0;
  EXPECT_EQ(ncclCommCount(again->comm(0), &count), ncclSuccess);
  EXPECT_EQ(count, 1);
  ASSERT_OK_AND_ASSIGN(const NcclDeviceSet* same, NcclDeviceSet::For({0}));
  EXPECT_EQ(same, again);
}

TEST_F(GpuTest, OneRankAllReduceScalesEveryTensorOfItsList) {
  std::vector<double> v(1027);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i) - 500.5;
  const Tensor x = MakeTensor(DataType::kFloat32, Shape({1027}), v);
  ASSERT_OK_AND_ASSIGN(Tensor on_gpu, CopyTensorTo(x, GPUPlace(0)));
  OpDesc op = Collective("c_allreduce_sum", 2);
  op.attrs["scale"] = 0.5;
  ASSERT_OK_AND_ASSIGN(EagerOutputs out,
                       RunOpEager(op, GPUPlace(0), {{"X", {Variable(on_gpu), Variable(on_gpu)}}}));
  ASSERT_EQ(out["Out"].size(), 2u);
  for (const Variable& o : out["Out"]) {
    EXPECT_EQ(o.tensor().place(), GPUPlace(0));
    std::vector<double> got = ToDoubles(o.tensor());
    for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(got[i], v[i] * 0.5) << i;
  }
}

TEST_F(GpuTest, OneRankBroadcastAndAllGather) {
  const Tensor x = MakeTensor(DataType::kInt64, Shape({3, 2}), {1, 2, 3, 4, 5, 6});
  ASSERT_OK_AND_ASSIGN(Tensor on_gpu, CopyTensorTo(x, GPUPlace(0)));
  for (const char* type : {"c_broadcast", "c_allgather"}) {
    ASSERT_OK_AND_ASSIGN(EagerOutputs out,
                         RunOpEager(Collective(type, 1), GPUPlace(0), {{"X", {Variable(on_gpu)}}}));
    EXPECT_EQ(out["Out"][0].tensor().shape(), Shape({3, 2})) << type;
    EXPECT_EQ(ToDoubles(out["Out"][0].tensor()), (std::vector<double>{1, 2, 3, 4, 5, 6})) << type;
  }
}

// A job of one process: what the others would send is this one's own.
class OneProcess final : public ProcessGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  std::string name() const override { return "one-process"; }
  absl::Status AllGather(const void* in, int64_t bytes, void* out, absl::Duration,
                         const std::string&) override {
    if (bytes > 0 && in != out) std::memmove(out, in, bytes);
    return absl::OkStatus();
  }
  absl::Status Broadcast(void*, int64_t, int, absl::Duration, const std::string&) override {
    ++broadcasts;
    return absl::OkStatus();
  }
  void Abort(const absl::Status&) override {}
  absl::Status failure() const override { return absl::OkStatus(); }
  int broadcasts = 0;
};

TEST_F(GpuTest, CommunicatorAcrossProcessesIsBootstrappedOnceThroughTheProcessGroup) {
  auto processes = std::make_shared<OneProcess>();
  std::shared_ptr<CollectiveGroup> group =
      CollectiveGroup::CreateAcrossProcesses(GPUPlace(0), processes);
  ASSERT_OK_AND_ASSIGN(ncclComm_t a,
                       NcclCommAcrossProcesses(group->id(), processes.get(), 0, absl::Seconds(10)));
  ASSERT_OK_AND_ASSIGN(ncclComm_t b,
                       NcclCommAcrossProcesses(group->id(), processes.get(), 0, absl::Seconds(10)));
  EXPECT_NE(a, nullptr);
  EXPECT_EQ(a, b);
  EXPECT_EQ(processes->broadcasts, 1);  // the unique id, once

  // The op's kernel takes that communicator for the group's ring.
  const Tensor x = MakeTensor(DataType::kFloat32, Shape({4}), {2, 4, 6, 8});
  ASSERT_OK_AND_ASSIGN(Tensor on_gpu, CopyTensorTo(x, GPUPlace(0)));
  OpDesc op = Collective("c_allreduce_sum", 1);
  op.attrs["ring_id"] = group->id();
  op.attrs["nranks"] = int64_t{1};
  op.attrs["rank"] = int64_t{0};
  op.attrs["scale"] = 0.5;
  ASSERT_OK_AND_ASSIGN(EagerOutputs out, RunOpEager(op, GPUPlace(0), {{"X", {Variable(on_gpu)}}}));
  EXPECT_EQ(ToDoubles(out["Out"][0].tensor()), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(processes->broadcasts, 1);

  // Destroyed (as at exit), the group's next communicator is a new one,
  // bootstrapped again, and works.
  ASSERT_OK_AND_ASSIGN(Device * gpu, DeviceRegistry::Global().GetDevice(GPUPlace(0)));
  ASSERT_OK(gpu->Synchronize());  // no collective in flight
  ASSERT_OK(DestroyCommsAcrossProcesses());
  ASSERT_OK_AND_ASSIGN(ncclComm_t c,
                       NcclCommAcrossProcesses(group->id(), processes.get(), 0, absl::Seconds(10)));
  EXPECT_NE(c, nullptr);
  EXPECT_EQ(processes->broadcasts, 2);
  ASSERT_OK_AND_ASSIGN(EagerOutputs again,
                       RunOpEager(op, GPUPlace(0), {{"X", {Variable(on_gpu)}}}));
  EXPECT_EQ(ToDoubles(again["Out"][0].tensor()), (std::vector<double>{1, 2, 3, 4}));
}

TEST_F(GpuTest, RingWithoutGroupIsAnError) {
  const Tensor x = MakeTensor(DataType::kFloat32, Shape({2}), {1, 2});
  ASSERT_OK_AND_ASSIGN(Tensor on_gpu, CopyTensorTo(x, GPUPlace(0)));
  OpDesc op = Collective("c_allreduce_sum", 1);
  op.attrs["ring_id"] = int64_t{987654};
  op.attrs["nranks"] = int64_t{2};
  EXPECT_THAT(
      RunOpEager(op, GPUPlace(0), {{"X", {Variable(on_gpu)}}}).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no collective group 987654")));
}

}  // namespace
}  // namespace cuda
}  // namespace tandem
