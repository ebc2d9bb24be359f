// --sim_devices, --sim_memory_limit_mb and --sim_stream_delay_us, set before
// the first sim device is needed (flags are read once).
#include <gflags/gflags.h>

#include "backends/sim/sim_device.h"
#include "framework/device/device_registry.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

DECLARE_int32(sim_devices);
DECLARE_int64(sim_memory_limit_mb);
DECLARE_int64(sim_stream_delay_us);

namespace tandem {
namespace {

TEST(SimFlags, DeviceCountMemoryLimitAndStreamDelay) {
  FLAGS_sim_devices = 3;
  FLAGS_sim_memory_limit_mb = 1;
  FLAGS_sim_stream_delay_us = 1500;
  DeviceRegistry& registry = DeviceRegistry::Global();
  EXPECT_EQ(registry.DeviceCount(SimDeviceType()), 3);
  ASSERT_OK_AND_ASSIGN(Device * sim2, registry.GetDevice(SimPlace(2)));
  EXPECT_EQ(sim2->allocator()->GetStats().bytes_limit, 1 << 20);
  EXPECT_EQ(sim2->Description(),
            "simulated accelerator sim:2 (memory limit: 1048576 bytes (1.0 MiB))");
  EXPECT_THAT(Tensor::Allocate(sim2->allocator(), DataType::kFloat32, {1 << 19}),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "out of memory on sim:2: requested 2097152 bytes (2.0 MiB), "
                       "in use 0 bytes, limit 1048576 bytes (1.0 MiB)"));
  EXPECT_EQ(static_cast<SimDevice*>(sim2)->stream_delay(), absl::Microseconds(1500));
  // The count was read once; the delay is read by each device as it is created.
  FLAGS_sim_devices = 5;
  EXPECT_EQ(registry.DeviceCount(SimDeviceType()), 3);
  FLAGS_sim_stream_delay_us = 0;
  ASSERT_OK_AND_ASSIGN(Device * sim1, registry.GetDevice(SimPlace(1)));
  EXPECT_EQ(static_cast<SimDevice*>(sim1)->stream_delay(), absl::ZeroDuration());
  EXPECT_EQ(static_cast<SimDevice*>(sim2)->stream_delay(), absl::Microseconds(1500));
}

}  // namespace
}  // namespace tandem
