#include "framework/place/place.h"

#include "absl/container/flat_hash_set.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::AllOf;

TEST(Place, ParsesAndPrintsAcceptedForms) {
  ASSERT_OK_AND_ASSIGN(Place cpu, ParsePlace("cpu"));
  EXPECT_TRUE(cpu.is_host());
  EXPECT_EQ(cpu.ToString(), "cpu");
  EXPECT_EQ(cpu.LogName(), "CPUPlace");

  ASSERT_OK_AND_ASSIGN(Place gpu, ParsePlace("gpu"));
  EXPECT_EQ(gpu, GPUPlace(0));
  EXPECT_EQ(gpu.LogName(), "CUDAPlace(0)");

  ASSERT_OK_AND_ASSIGN(Place gpu3, ParsePlace(" GPU:3 "));
  EXPECT_EQ(gpu3, GPUPlace(3));
  EXPECT_EQ(gpu3.ToString(), "gpu:3");
  EXPECT_FALSE(gpu3.is_host());
}

TEST(Place, BackendRegisteredTypeParses) {
  DeviceType sim = DeviceType::Register("testsim", "TestSimPlace");
  ASSERT_OK_AND_ASSIGN(Place p, ParsePlace("testsim:2"));
  EXPECT_EQ(p, Place(sim, 2));
  EXPECT_EQ(p.ToString(), "testsim:2");
  EXPECT_EQ(p.LogName(), "TestSimPlace(2)");
  EXPECT_EQ(DeviceType::Register("testsim", "Other"), sim);  // idempotent
}

TEST(Place, InvalidStringsListAcceptedForms) {
  for (const char* bad : {"tpu", "gpu:", "gpu:-1", "gpu:x", "gpu:1:2", "",
                          "cpu:1", ":0", "gpu:+1"}) {
    EXPECT_THAT(ParsePlace(bad),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr(absl::StrCat("'", bad, "'")),
                               HasSubstr("accepted forms: cpu, gpu, gpu:N"))))
        << bad;
  }
}

TEST(Place, HashAndOrder) {
  absl::flat_hash_set<Place> set = {CPUPlace(), GPUPlace(0), GPUPlace(1),
                                    GPUPlace(0)};
  EXPECT_EQ(set.size(), 3u);
  EXPECT_LT(CPUPlace(), GPUPlace(0));
  EXPECT_LT(GPUPlace(0), GPUPlace(1));
}

}  // namespace
}  // namespace tandem
