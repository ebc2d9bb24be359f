#include "backends/sim/sim_device.h"

#include <vector>

#include "framework/device/device_registry.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::AllOf;

SimDevice* GetSim(int index) {
  absl::StatusOr<Device*> d = DeviceRegistry::Global().GetDevice(SimPlace(index));
  CHECK(d.ok()) << d.status();
  return static_cast<SimDevice*>(*d);
}

class SimDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(ResetSimCopyCounters(SimPlace(0)));
    ASSERT_OK(ResetSimCopyCounters(SimPlace(1)));
  }
};

TEST_F(SimDeviceTest, TwoDevicesByDefaultWithTheirOwnMemory) {
  DeviceRegistry& registry = DeviceRegistry::Global();
  EXPECT_EQ(registry.DeviceCount(SimDeviceType()), 2);
  ASSERT_OK_AND_ASSIGN(Place parsed, ParsePlace("sim:1"));
  EXPECT_EQ(parsed, SimPlace(1));
  EXPECT_EQ(SimPlace(0).LogName(), "SimPlace(0)");
  EXPECT_THAT(registry.GetDevice(SimPlace(2)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("2 sim device(s) available (sim:0 .. sim:1)")));
  SimDevice* sim0 = GetSim(0);
  SimDevice* sim1 = GetSim(1);
  EXPECT_EQ(sim0->place(), SimPlace(0));
  EXPECT_EQ(sim0->Description(), "simulated accelerator sim:0 (memory limit: none)");
  EXPECT_NE(sim0->allocator(), sim1->allocator());
  EXPECT_NE(sim0->allocator(), CpuAllocator::Default());
  EXPECT_EQ(sim0->host_allocator(), CpuAllocator::Default());

  const int64_t host_before = CpuAllocator::Default()->GetStats().bytes_in_use;
  const int64_t sim1_before = sim1->allocator()->GetStats().bytes_in_use;
  ASSERT_OK_AND_ASSIGN(Tensor t, Tensor::Allocate(sim0->allocator(), DataType::kFloat32, {256}));
  EXPECT_EQ(t.place(), SimPlace(0));
  EXPECT_EQ(sim0->allocator()->GetStats().bytes_in_use, 1024);
  EXPECT_EQ(sim1->allocator()->GetStats().bytes_in_use, sim1_before);
  EXPECT_EQ(CpuAllocator::Default()->GetStats().bytes_in_use, host_before);
  EXPECT_TRUE(sim0->sim_allocator()->Owns(t.raw_data(), t.NumBytes()));
}

TEST_F(SimDeviceTest, CopyTensorToCountsEachDirectionExactly) {
  const Tensor host = Tensor::FromVector<float>({4}, {1, 2, 3, 4});
  ASSERT_OK_AND_ASSIGN(Tensor on_sim, CopyTensorTo(host, SimPlace(0)));
  ASSERT_OK_AND_ASSIGN(SimCopyCounters c, GetSimCopyCounters(SimPlace(0)));
  EXPECT_EQ(c.Sync(CopyKind::kHostToDevice).copies, 1);
  EXPECT_EQ(c.Sync(CopyKind::kHostToDevice).bytes, 16);
  EXPECT_EQ(c.TotalCopies(), 1);
  EXPECT_EQ(c.ToString(), "H2D sync 1 (16 bytes)");

  ASSERT_OK_AND_ASSIGN(Tensor again, CopyTensorTo(on_sim, SimPlace(0)));
  ASSERT_OK_AND_ASSIGN(Tensor back, CopyTensorTo(again, CPUPlace()));
  EXPECT_EQ(back.ToVector<float>(), std::vector<float>({1, 2, 3, 4}));
  ASSERT_OK_AND_ASSIGN(c, GetSimCopyCounters(SimPlace(0)));
  EXPECT_EQ(c.ToString(), "H2D sync 1 (16 bytes), D2H sync 1 (16 bytes), D2D sync 1 (16 bytes)");
  ASSERT_OK_AND_ASSIGN(SimCopyCounters other, GetSimCopyCounters(SimPlace(1)));
  EXPECT_EQ(other.TotalCopies(), 0);

  ASSERT_OK(ResetSimCopyCounters(SimPlace(0)));
  ASSERT_OK_AND_ASSIGN(c, GetSimCopyCounters(SimPlace(0)));
  EXPECT_EQ(c.ToString(), "no copies");
  EXPECT_THAT(GetSimCopyCounters(CPUPlace()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "copy counters exist for sim places only, got cpu"));
  EXPECT_THAT(GetSimCopyCounters(SimPlace(7)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("sim:7 does not exist")));
}

TEST_F(SimDeviceTest, AsyncCopiesAreCountedApartWhenIssued) {
  SimDevice* sim = GetSim(0);
  ASSERT_OK_AND_ASSIGN(void* d, sim->allocator()->Allocate(8));
  const int64_t src = 42;
  int64_t dst = 0;
  ASSERT_OK(sim->CopyAsync(CopyKind::kHostToDevice, d, &src, 8, sim->copy_stream()));
  ASSERT_OK(sim->CopyAsync(CopyKind::kDeviceToHost, &dst, d, 8, sim->copy_stream()));
  const SimCopyCounters c = sim->Counters();
  EXPECT_EQ(c.Async(CopyKind::kHostToDevice).copies, 1);
  EXPECT_EQ(c.Async(CopyKind::kDeviceToHost).bytes, 8);
  EXPECT_EQ(c.Sync(CopyKind::kHostToDevice).copies, 0);
  EXPECT_EQ(c.ToString(), "H2D async 1 (8 bytes), D2H async 1 (8 bytes)");
  ASSERT_OK(sim->SynchronizeStream(sim->copy_stream()));
  EXPECT_EQ(dst, 42);  // in stream order (sim_stream_test.cc: not before the drain)
  sim->allocator()->Deallocate(d, 8);
}

TEST_F(SimDeviceTest, CopiesRejectMemoryOfTheWrongSide) {
  SimDevice* sim0 = GetSim(0);
  SimDevice* sim1 = GetSim(1);
  ASSERT_OK_AND_ASSIGN(void* on1, sim1->allocator()->Allocate(4));
  int32_t host = 0;
  EXPECT_THAT(sim0->Copy(CopyKind::kHostToDevice, on1, &host, 4),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("SimPlace(0) H2D copy of 4 bytes: the destination"),
                             HasSubstr("is not sim:0 memory"))));
  EXPECT_THAT(sim0->Copy(CopyKind::kDeviceToHost, &host, &host, 4),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the source")));
  EXPECT_EQ(sim0->Counters().TotalCopies(), 0);
  sim1->allocator()->Deallocate(on1, 4);
}

TEST_F(SimDeviceTest, EventsRecordTheirStreamAndPosition) {
  SimDevice* sim0 = GetSim(0);
  SimDevice* sim1 = GetSim(1);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> stream, sim0->CreateStream());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> event, sim0->CreateEvent());
  auto* sim_event = static_cast<SimEvent*>(event.get());
  EXPECT_FALSE(sim_event->recorded());
  EXPECT_OK(sim0->SynchronizeEvent(event.get()));  // never recorded: no wait

  ASSERT_OK(sim0->RecordEvent(event.get(), sim0->copy_stream()));
  EXPECT_EQ(sim_event->stream(), sim0->copy_stream());
  const int64_t first = sim_event->position();
  ASSERT_OK(sim0->RecordEvent(event.get(), sim0->copy_stream()));
  EXPECT_EQ(sim_event->position(), first + 1);  // later in the same stream
  EXPECT_OK(sim0->StreamWaitEvent(stream.get(), event.get()));
  EXPECT_OK(sim1->StreamWaitEvent(sim1->compute_stream(), event.get()));  // cross-device
  EXPECT_OK(sim0->SynchronizeStream(stream.get()));
  EXPECT_OK(sim0->Synchronize());

  EXPECT_THAT(sim0->RecordEvent(event.get(), sim1->compute_stream()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "SimPlace(0) RecordEvent: the stream is not a stream of this "
                       "device (SimPlace(1))"));
  Stream foreign;
  EXPECT_THAT(sim0->SynchronizeStream(&foreign),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a sim stream")));
  Event foreign_event;
  EXPECT_THAT(sim0->SynchronizeEvent(&foreign_event),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a sim event")));
  int32_t x = 0;
  EXPECT_THAT(sim0->CopyAsync(CopyKind::kDeviceToHost, &x, &x, 0, sim1->copy_stream()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("CopyAsync")));
}

TEST_F(SimDeviceTest, DeviceGuardSetsTheCurrentSimDevice) {
  EXPECT_EQ(CurrentSimDevice(), 0);
  {
    DeviceGuard guard(SimPlace(1));
    EXPECT_EQ(CurrentSimDevice(), 1);
  }
  EXPECT_EQ(CurrentSimDevice(), 0);
}

}  // namespace
}  // namespace tandem
