#include "framework/device/device_registry.h"

#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::AllOf;

// A factory with two fake devices that records the current device.
class FakeFactory : public DeviceFactory {
 public:
  int DeviceCount() override { return 2; }
  absl::StatusOr<std::unique_ptr<Device>> CreateDevice(int index) override {
    return absl::UnavailableError("fake devices cannot be created");
  }
  int ExchangeCurrentDevice(int index) override {
    ++exchanges;
    int prev = current;
    current = index;
    return prev;
  }
  static int current;
  static int exchanges;
};
int FakeFactory::current = 0;
int FakeFactory::exchanges = 0;

DeviceFactoryRegistrar fake_registrar("fake", "FakePlace", std::make_unique<FakeFactory>());

TEST(DeviceRegistry, MissingBackendIsNotFoundNamingLinkedTypes) {
  EXPECT_THAT(
      DeviceRegistry::Global().GetDevice(GPUPlace(0)),
      StatusIs(absl::StatusCode::kNotFound,
               AllOf(HasSubstr("no backend for device type 'gpu'"), HasSubstr("linked: fake"))));
}

TEST(DeviceRegistry, OutOfRangeIndexIsInvalidArgument) {
  ASSERT_OK_AND_ASSIGN(Place p, ParsePlace("fake:5"));
  EXPECT_THAT(DeviceRegistry::Global().GetDevice(p),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("place fake:5 does not exist: 2 fake device(s) "
                                 "available (fake:0 .. fake:1)")));
  ASSERT_OK_AND_ASSIGN(Place ok, ParsePlace("fake:1"));
  EXPECT_THAT(DeviceRegistry::Global().GetDevice(ok), StatusIs(absl::StatusCode::kUnavailable));
}

TEST(DeviceRegistry, AvailablePlacesListsCpuThenDevices) {
  std::vector<Place> places = DeviceRegistry::Global().AvailablePlaces();
  ASSERT_EQ(places.size(), 3u);
  EXPECT_EQ(places[0], CPUPlace());
  EXPECT_EQ(places[2].ToString(), "fake:1");
}

TEST(DeviceGuard, SetsAndRestoresNested) {
  ASSERT_OK_AND_ASSIGN(Place one, ParsePlace("fake:1"));
  FakeFactory::current = 0;
  {
    DeviceGuard outer(one);
    EXPECT_EQ(FakeFactory::current, 1);
    {
      ASSERT_OK_AND_ASSIGN(Place zero, ParsePlace("fake:0"));
      DeviceGuard inner(zero);
      EXPECT_EQ(FakeFactory::current, 0);
    }
    EXPECT_EQ(FakeFactory::current, 1);
  }
  EXPECT_EQ(FakeFactory::current, 0);
}

TEST(DeviceGuard, AlreadyCurrentDeviceIsNotRestored) {
  ASSERT_OK_AND_ASSIGN(Place one, ParsePlace("fake:1"));
  FakeFactory::current = 1;
  FakeFactory::exchanges = 0;
  { DeviceGuard guard(one); }
  EXPECT_EQ(FakeFactory::exchanges, 1);  // the switch only: nothing to restore
  EXPECT_EQ(FakeFactory::current, 1);
  FakeFactory::current = 0;
}

TEST(DeviceGuard, HostPlaceTouchesNoFactory) {
  FakeFactory::exchanges = 0;
  { DeviceGuard guard(CPUPlace()); }
  EXPECT_EQ(FakeFactory::exchanges, 0);
}

TEST(DeviceRegistry, FactoryForFindsTheLinkedTypeOnly) {
  ASSERT_OK_AND_ASSIGN(DeviceType fake, DeviceType::FromName("fake"));
  ASSERT_NE(DeviceRegistry::Global().FactoryFor(fake), nullptr);
  EXPECT_EQ(DeviceRegistry::Global().FactoryFor(fake)->DeviceCount(), 2);
  EXPECT_EQ(DeviceRegistry::Global().FactoryFor(DeviceType::GPU()), nullptr);
  const DeviceType unlinked = DeviceType::Register("unlinked", "UnlinkedPlace");
  EXPECT_EQ(DeviceRegistry::Global().FactoryFor(unlinked), nullptr);
}

}  // namespace
}  // namespace tandem
