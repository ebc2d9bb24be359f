#include "framework/place/place.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
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

  ASSERT_OK_AND_ASSIGN(Place gpu3, ParsePlace("gpu:3"));
  EXPECT_EQ(gpu3, GPUPlace(3));
  EXPECT_EQ(gpu3.ToString(), "gpu:3");
  EXPECT_FALSE(gpu3.is_host());

  EXPECT_THAT(ParsePlace("cpu:0"), IsOkAndHolds(CPUPlace()));
  EXPECT_THAT(ParsePlace("gpu:0"), IsOkAndHolds(GPUPlace(0)));
  EXPECT_THAT(ParsePlace("gpu:10"), IsOkAndHolds(GPUPlace(10)));
  EXPECT_THAT(ParsePlace("gpu:2147483647"), IsOkAndHolds(GPUPlace(2147483647)));
}

TEST(Place, AHostPlaceOfAnotherIndexPrintsItsIndex) {
  EXPECT_EQ(Place(DeviceType::CPU(), 0).ToString(), "cpu");
  EXPECT_EQ(Place(DeviceType::CPU(), 1).ToString(), "cpu:1");
}

TEST(Place, BackendRegisteredTypeParses) {
  DeviceType sim = DeviceType::Register("testsim", "TestSimPlace");
  ASSERT_OK_AND_ASSIGN(Place p, ParsePlace("testsim:2"));
  EXPECT_EQ(p, Place(sim, 2));
  EXPECT_EQ(p.ToString(), "testsim:2");
  EXPECT_EQ(p.LogName(), "TestSimPlace(2)");
  EXPECT_EQ(DeviceType::Register("testsim", "Other"), sim);  // idempotent
}

TEST(Place, RefusedStringsNameTheStringAndTheAcceptedForm) {
  const std::string kForm =
      "expected \"cpu\", \"<type>\" or \"<type>:<index>\" with a lower-case registered type "
      "(cpu, gpu";
  const std::string kIndex = "and a non-negative index without sign or leading zeros";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "it is empty"},
      {"GPU", "device type 'GPU' is not lower-case (write 'gpu')"},
      {"Gpu:0", "device type 'Gpu' is not lower-case (write 'gpu')"},
      {"CPU", "device type 'CPU' is not lower-case (write 'cpu')"},
      {" cpu", "it has leading or trailing whitespace"},
      {"cpu ", "it has leading or trailing whitespace"},
      {"\tgpu:0", "it has leading or trailing whitespace"},
      {"gpu:0\n", "it has leading or trailing whitespace"},
      {"gpu :0", "unknown device type 'gpu '"},
      {"gpu: 0", "bad device index ' 0': only decimal digits are allowed"},
      {"gpu:01", "bad device index '01': leading zero"},
      {"gpu:00", "bad device index '00': leading zero"},
      {"cpu:00", "bad device index '00': leading zero"},
      {"gpu:+1", "bad device index '+1': only decimal digits are allowed"},
      {"gpu:-1", "bad device index '-1': only decimal digits are allowed"},
      {"gpu:x", "bad device index 'x': only decimal digits are allowed"},
      {"gpu:1:2", "bad device index '1:2': only decimal digits are allowed"},
      {"gpu:2147483648", "bad device index '2147483648': too large"},
      {"gpu:", "the device index after ':' is empty"},
      {":0", "the device type is empty"},
      {"tpu", "unknown device type 'tpu'"},
      {"tpu:0", "unknown device type 'tpu'"},
      {"cpu:1", "the host has a single cpu place (\"cpu\" or \"cpu:0\")"},
  };
  for (const auto& [bad, why] : cases) {
    EXPECT_THAT(ParsePlace(bad),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr(absl::StrCat("place \"", absl::CHexEscape(bad),
                                                      "\" is not valid: ", why, "; ", kForm)),
                               HasSubstr(kIndex))))
        << "'" << bad << "'";
  }
  // The message a user sees, whole.
  EXPECT_THAT(
      ParsePlace("Gpu:0"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("place \"Gpu:0\" is not valid: device type 'Gpu' is not "
                         "lower-case (write 'gpu'); expected \"cpu\", \"<type>\" or "
                         "\"<type>:<index>\" with a lower-case registered type (cpu, gpu")));
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
