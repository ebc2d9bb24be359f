#include "backends/cpu/cpu_device.h"

#include <cstring>

#include "framework/device/device_registry.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(CpuDevice, RegisteredAsTheOneCpuDevice) {
  DeviceRegistry& registry = DeviceRegistry::Global();
  EXPECT_EQ(registry.DeviceCount(DeviceType::CPU()), 1);
  ASSERT_OK_AND_ASSIGN(Device * cpu, registry.GetDevice(CPUPlace()));
  EXPECT_EQ(cpu->place(), CPUPlace());
  EXPECT_EQ(cpu->allocator(), CpuAllocator::Default());
  EXPECT_EQ(cpu->host_allocator(), CpuAllocator::Default());
  EXPECT_THAT(cpu->Description(), HasSubstr("host CPU"));
  EXPECT_EQ(CPUPlace().LogName(), "CPUPlace");
  EXPECT_THAT(registry.GetDevice(Place(DeviceType::CPU(), 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1 cpu device(s) available")));
}

TEST(CpuDevice, CopiesAreMemcpyAndStreamsComplete) {
  CpuDevice cpu;
  const char src[] = "tandem";
  char dst[sizeof(src)] = {};
  ASSERT_OK(cpu.Copy(CopyKind::kHostToDevice, dst, src, sizeof(src)));
  EXPECT_STREQ(dst, "tandem");
  std::memset(dst, 0, sizeof(dst));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> stream, cpu.CreateStream());
  ASSERT_OK(cpu.CopyAsync(CopyKind::kDeviceToHost, dst, src, sizeof(src), stream.get()));
  EXPECT_STREQ(dst, "tandem");  // complete on return
  ASSERT_OK(cpu.Copy(CopyKind::kDeviceToDevice, nullptr, nullptr, 0));

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> event, cpu.CreateEvent());
  EXPECT_OK(cpu.RecordEvent(event.get(), stream.get()));
  EXPECT_OK(cpu.StreamWaitEvent(cpu.compute_stream(), event.get()));
  EXPECT_OK(cpu.SynchronizeEvent(event.get()));
  EXPECT_OK(cpu.SynchronizeStream(cpu.copy_stream()));
  EXPECT_OK(cpu.Synchronize());
}

TEST(CpuDevice, CopyTensorToTheHostKeepsValues) {
  const Tensor t = Tensor::FromVector<int32_t>({3}, {1, 2, 3});
  ASSERT_OK_AND_ASSIGN(Tensor copy, CopyTensorTo(t, CPUPlace()));
  EXPECT_NE(copy.raw_data(), t.raw_data());
  EXPECT_EQ(copy.ToVector<int32_t>(), std::vector<int32_t>({1, 2, 3}));
}

TEST(CpuDevice, AMissingCpuIndexIsNamedWithItsIndex) {
  absl::StatusOr<Device*> d = DeviceRegistry::Global().GetDevice(Place(DeviceType::CPU(), 1));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find("place cpu:1 does not exist: 1 cpu device(s)"),
            absl::string_view::npos)
      << d.status();
}

}  // namespace
}  // namespace tandem
