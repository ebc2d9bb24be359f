// Instantiates the kernel semantics suite (semantics.h; TEST_Ps in
// semantics_*.cc) on every available place.
#include "tests/conformance/semantics.h"

#include "framework/device/device_registry.h"

namespace tandem {
namespace {

INSTANTIATE_TEST_SUITE_P(EveryPlace, KernelSemantics,
                         ::testing::ValuesIn(DeviceRegistry::Global().AvailablePlaces()),
                         PlaceTestName);

}  // namespace
}  // namespace tandem
